#pragma once
// Options every command that opens a model shares (--device, --adapter, --tunable, --profile,
// --constants, --max-memory), and opening the Session they describe.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "wgml/session.h"

namespace wgml::cli {

struct SessionArgs {
  std::string path;
  std::string device = "auto";
  std::string constants;
  std::string adapter;
  std::vector<std::string> tunables;
  std::string tunables_file;
  std::string trace_path;  // --profile TRACE.json
  std::string max_memory;  // "4G": SessionOptions::max_memory_bytes
  CLI::Option* profile_option = nullptr;

  // Adds the model argument and the options above to `command`.
  void add_to(CLI::App& command);
  bool profile() const { return profile_option && profile_option->count() > 0; }
  // `auto`: the best WebGPU adapter (a GPU, else a CPU implementation such as lavapipe), or the CPU
  // reference where the machine has no WebGPU library or device at all.
  Session open() const;
};

// The per-op profile as a table on stderr, slowest first, and the trace file when one was asked for.
void print_profile(Session& session, const std::string& trace_path);

}  // namespace wgml::cli
