#pragma once
// OpenAI's HTTP API as `wgml serve` speaks it (docs/serve.md): request bodies of /v1/completions and
// /v1/chat/completions read into what a generation needs, and the response, stream-chunk, model-list
// and error bodies written in OpenAI's wire format. No sockets here: the HTTP server
// (serve/http_server.cpp) moves these bodies, so that this mapping is tested on its own.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llm/chat_format.h"
#include "wgml/error.h"
#include "wgml/tokenizer.h"

namespace wgml::serve {

enum class Endpoint {
  Completions,      // /v1/completions: a prompt, choices[].text
  ChatCompletions,  // /v1/chat/completions: messages, choices[].message / choices[].delta
};

// A request OpenAI would refuse with 400 (or one asking for what wgml does not do): the message
// names the field and what was expected; param() is the field, as OpenAI's error object has it.
class RequestError : public Error {
 public:
  RequestError(std::string param, const std::string& message, std::string code = {});
  const std::string& param() const { return param_; }
  const std::string& code_name() const { return code_name_; }  // OpenAI's error code, or empty

 private:
  std::string param_;
  std::string code_name_;
};

struct CompletionRequest {
  Endpoint endpoint = Endpoint::Completions;
  std::string prompt;                 // completions: the prompt text, encoded as `wgml generate` does
  std::vector<TokenId> prompt_ids;    // completions: a prompt given as token ids instead
  std::vector<ChatMessage> messages;  // chat: the conversation, written in the model's chat format
  // Tokens to make at most; unset: 16 for completions (OpenAI's default), the context for chat.
  std::optional<int64_t> max_tokens;
  float temperature = 1;  // OpenAI's defaults
  float top_p = 1;
  std::optional<uint64_t> seed;   // unset: a random seed per request
  std::vector<std::string> stop;  // generation ends before the first of these strings
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a last chunk with the usage
};

// Reads a request body for `endpoint`. Throws RequestError for a body that is not a JSON object,
// a field of the wrong type or out of OpenAI's range, and n (or best_of) other than 1, echo,
// logprobs, suffix, penalties, logit_bias, tools and non-text response formats, which wgml does
// not do. Fields OpenAI has and wgml ignores (user, metadata, ...) are accepted.
CompletionRequest parse_request(Endpoint endpoint, std::string_view body);

enum class FinishReason {
  Stop,    // a stop token or stop string
  Length,  // max_tokens, or the model's context is full
};
const char* finish_reason_name(FinishReason reason);

struct CompletionResult {
  std::string text;
  FinishReason finish_reason = FinishReason::Length;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;  // tokens the model made, a stop token included
};

// What every body of one response carries: OpenAI's id ("cmpl-..." / "chatcmpl-..."), the creation
// time in seconds since the epoch, and the model's name.
struct ResponseHeader {
  std::string id;
  int64_t created = 0;
  std::string model;
};

// The whole response of a request without stream.
nlohmann::json completion_response(Endpoint endpoint, const ResponseHeader& header, const CompletionResult& result);
// One chunk of a streamed response: `text` as choices[0].text or choices[0].delta.content (a chat
// stream's first chunk, `first`, also carries the role), `finish_reason` null until the last chunk.
nlohmann::json stream_chunk(Endpoint endpoint, const ResponseHeader& header, std::string_view text,
                            std::optional<FinishReason> finish_reason, bool first = false);
// The chunk after the last when stream_options.include_usage: no choices, the usage.
nlohmann::json usage_chunk(Endpoint endpoint, const ResponseHeader& header, const CompletionResult& result);
nlohmann::json models_response(const std::string& model, int64_t created);
// {"error": {"message", "type", "param", "code"}}; param and code null where empty.
nlohmann::json error_body(const std::string& message, const std::string& type, const std::string& param = {},
                          const std::string& code = {});

// JSON text with any byte that is not UTF-8 replaced (U+FFFD), so that writing a body never throws.
std::string dump(const nlohmann::json& json);
// One Server-Sent Event: "data: JSON\n\n".
std::string sse_event(const nlohmann::json& json);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

// Cuts generated text at the first of the stop strings while it streams: push() returns the text
// that can no longer become part of a stop string, holding back a tail that might.
class StopStrings {
 public:
  explicit StopStrings(std::vector<std::string> stops) : stops_(std::move(stops)) {}
  std::string push(std::string_view text);
  // What is held back, once no more text comes (nothing after a stop string was found).
  std::string finish();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool stopped_ = false;
};

}  // namespace wgml::serve
