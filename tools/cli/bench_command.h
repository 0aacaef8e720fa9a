#pragma once
// `wgml bench MODEL`: prompt processing (ppP) and token generation (tgN) in tokens/s for an LLM
// program, as llama-bench reports them (src/llm/llm_bench.h), as a table or as JSON; the
// program's constants drawn at random where the file carries none (src/llm/random_constants.h).
#include <CLI/CLI.hpp>
#include <cstdint>

#include "llm/llm_bench.h"
#include "session_args.h"

namespace wgml::cli {

class BenchCommand {
 public:
  explicit BenchCommand(CLI::App& app);
  bool selected() const { return static_cast<bool>(*command_); }
  int run() const;

 private:
  CLI::App* command_;
  SessionArgs session_;
  llm::BenchSizes sizes_;
  int64_t prompt_chunk_ = 0;
  int repetitions_ = 3;
  uint64_t seed_ = 0;
  bool random_weights_ = false;
  bool json_ = false;
  bool roofline_ = false;
};

}  // namespace wgml::cli
