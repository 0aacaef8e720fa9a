#include "serve_command.h"

#include <cstdio>
#include <filesystem>

#include "wgml/tokenizer.h"

namespace wgml::cli {
namespace {

// The name clients see: the file's stem, or its folder's name for a folder's model.pte.
std::string default_model_name(const std::string& path) {
  const std::filesystem::path file = std::filesystem::absolute(path).lexically_normal();
  const std::string stem = file.stem().string();
  return stem == "model" && file.has_parent_path() ? file.parent_path().filename().string() : stem;
}

std::string model_directory(const std::string& model) {
  const std::filesystem::path dir = std::filesystem::path(model).parent_path();
  return dir.empty() ? "." : dir.string();
}

}  // namespace

ServeCommand::ServeCommand(CLI::App& app) {
  command_ =
      app.add_subcommand("serve", "Serve an LLM over OpenAI's HTTP API (/v1/completions, /v1/chat/completions, /v1/models)");
  session_.add_to(*command_);
  command_->add_option("--host", server_.host, "Address to listen on")->capture_default_str();
  command_->add_option("--port", server_.port, "Port to listen on (0: a free one, printed)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  command_->add_option("--tokenizer", tokenizer_path_,
                       "tokenizer.json / tokenizer.model, or their directory (default: the model's directory)");
  command_->add_option("--chat-format", chat_format_, "llama3, chatml or llama2 (default: recognised from the tokenizer)");
  command_->add_option("--model-name", model_name_,
                       "The model's name in /v1/models and responses (default: the file's stem, or its folder's name "
                       "for model.pte)");
}

int ServeCommand::run() const {
  Session session = session_.open();
  Tokenizer tokenizer = Tokenizer::load(tokenizer_path_.empty() ? model_directory(session_.path) : tokenizer_path_);
  const std::optional<ChatFormat> format =
      chat_format_.empty() ? std::nullopt : std::optional(chat_format_from_name(chat_format_));
  serve::CompletionService service(std::move(session), std::move(tokenizer),
                                   model_name_.empty() ? default_model_name(session_.path) : model_name_, format);
  serve::serve(service, server_, [&](int port) {
    std::printf("wgml serve: listening on http://%s:%d\n", server_.host.c_str(), port);
    std::fflush(stdout);
  });
  return 0;
}

}  // namespace wgml::cli
