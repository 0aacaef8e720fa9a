#include "session_args.h"

#include <cstdio>
#include <iostream>

#include "api/open_session.h"

namespace wgml::cli {

void SessionArgs::add_to(CLI::App& command) {
  command.add_option("file", path, "Model file (.pte, .mlxg, .onnx)")->required();
  command
      .add_option("--device", device,
                  "webgpu (GPU kernels, the rest on the CPU), cpu (the reference), or auto: webgpu where "
                  "the machine has a WebGPU device (a GPU, else lavapipe), else cpu")
      ->check(CLI::IsMember({"auto", "cpu", "webgpu"}))
      ->capture_default_str();
  command.add_option("--adapter", adapter, "webgpu: adapter index or part of its name (default: the best)");
  command.add_option("--tunable", tunables, "webgpu: override a kernel tunable, Op.NAME=VALUE (repeatable)");
  command.add_option("--tunables-file", tunables_file, "webgpu: per-adapter tunables JSON");
  profile_option = command.add_option("--profile", trace_path,
                                      "webgpu: print GPU time per kernel and the nodes run on the CPU; with a file name, "
                                      "also write a Chrome/Perfetto trace there (one slice per kernel and per pass)");
  profile_option->expected(0, 1);
  command.add_option("--constants", constants, "Constants (.safetensors) for a .mlxg payload");
}

Session SessionArgs::open() const {
  SessionOptions options;
  options.device = device;
  options.constants_path = constants;
  options.adapter = adapter;
  options.tunables = tunables;
  options.tunables_file = tunables_file;
  options.profile = profile();
  std::string why_not_webgpu;
  Session session = api::open_session(path, options, &why_not_webgpu);
  if (!why_not_webgpu.empty()) std::cerr << "wgml: no WebGPU device (" << why_not_webgpu << "); running on the CPU reference\n";
  return session;
}

void print_profile(Session& session, const std::string& trace_path) {
  const std::vector<OpProfile> ops = session.profile(trace_path);
  std::fprintf(stderr, "profile (%s)\n%-32s %-7s %7s %11s  %s\n", session.device_description().c_str(), "op", "device", "calls",
               "total ms", "note");
  for (const OpProfile& p : ops)
    std::fprintf(stderr, "%-32s %-7s %7llu %11.3f  %s\n", p.op.c_str(), p.device.c_str(),
                 static_cast<unsigned long long>(p.calls), p.total_ms, p.note.c_str());
  const RunStats& stats = session.last_run_stats();
  std::fprintf(stderr, "last run: %llu plans made, %llu kernels rendered, %llu pipelines compiled\n",
               static_cast<unsigned long long>(stats.plans_made), static_cast<unsigned long long>(stats.kernels_rendered),
               static_cast<unsigned long long>(stats.pipelines_compiled));
  if (!trace_path.empty()) std::cerr << "trace: " << trace_path << " (open in ui.perfetto.dev or chrome://tracing)\n";
}

}  // namespace wgml::cli
