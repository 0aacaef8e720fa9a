#pragma once
// `wgml generate MODEL --prompt TEXT`: text generation with an exported LLM (wgml::Generator),
// tokens streamed as they are made, then a closing line with prompt and decode speeds.
#include <CLI/CLI.hpp>
#include <string>

#include "session_args.h"
#include "wgml/generator.h"

namespace wgml {
class Tokenizer;
}

namespace wgml::cli {

class GenerateCommand {
 public:
  explicit GenerateCommand(CLI::App& app);
  bool selected() const { return static_cast<bool>(*command_); }
  int run() const;

 private:
  std::vector<int64_t> prompt_tokens(const Tokenizer* tokenizer) const;

  CLI::App* command_;
  SessionArgs session_;
  std::string prompt_;
  std::string prompt_ids_;
  std::string tokenizer_path_;
  std::string chat_format_;
  bool chat_ = false;
  std::string system_;
  bool print_ids_ = false;
  GenerationOptions options_;
  bool stats_ = false;
};

}  // namespace wgml::cli
