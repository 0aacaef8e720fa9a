#pragma once
// `wgml serve MODEL`: an OpenAI-compatible HTTP server over one model (src/serve, docs/serve.md).
#include <CLI/CLI.hpp>
#include <string>

#include "serve/http_server.h"
#include "session_args.h"

namespace wgml::cli {

class ServeCommand {
 public:
  explicit ServeCommand(CLI::App& app);
  bool selected() const { return static_cast<bool>(*command_); }
  // Serves until the process ends.
  int run() const;

 private:
  CLI::App* command_;
  SessionArgs session_;
  serve::ServerOptions server_;
  std::string tokenizer_path_;
  std::string chat_format_;
  std::string model_name_;
};

}  // namespace wgml::cli
