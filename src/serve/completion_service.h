#pragma once
// The model behind `wgml serve`: one Session with its tokenizer, running one generation at a time.
// Requests arriving together wait for the session in turn (a mutex), never fail for it.
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "llm/chat_format.h"
#include "serve/openai_protocol.h"
#include "wgml/generator.h"
#include "wgml/session.h"
#include "wgml/tokenizer.h"

namespace wgml::serve {

// A request's prompt as token ids, checked against the model's context, and its generation options.
struct PreparedRequest {
  std::vector<TokenId> prompt;
  GenerationOptions options;
  std::vector<std::string> stop;
};

// Receives the text as it is made; returning false (the client went away) stops generation.
using TextCallback = std::function<bool(std::string_view text)>;

class CompletionService {
 public:
  // `chat_format`: the format of chat prompts; unset: recognised from the tokenizer's chat template.
  CompletionService(Session session, Tokenizer tokenizer, std::string model_name,
                    std::optional<ChatFormat> chat_format = std::nullopt);

  const std::string& model_name() const { return model_name_; }

  // The prompt's ids (the model's chat format for chat requests) and the options generation takes.
  // Throws RequestError for a prompt that is empty, has ids outside the vocabulary or does not fit
  // the context, and for a chat request when the model has no chat format known here.
  PreparedRequest prepare(const CompletionRequest& request);
  // Generates from the start of a fresh sequence; the text excludes stop tokens and stops before a
  // stop string. Waits while another generation runs.
  CompletionResult complete(const PreparedRequest& request, const TextCallback& on_text = {});

 private:
  std::vector<TokenId> prompt_ids(const CompletionRequest& request) const;

  Session session_;
  Tokenizer tokenizer_;
  Generator generator_;
  std::string model_name_;
  std::optional<ChatFormat> chat_format_;
  std::mutex mutex_;  // one generation at a time: the session holds one KV cache
};

}  // namespace wgml::serve
