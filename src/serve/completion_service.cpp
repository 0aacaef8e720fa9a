#include "serve/completion_service.h"

#include <algorithm>
#include <limits>
#include <random>

namespace wgml::serve {
namespace {

// OpenAI's default max_tokens for /v1/completions; chat goes on until a stop or the context's end.
constexpr int64_t kDefaultCompletionTokens = 16;

bool is_stop_token(const GenerationOptions& options, TokenId token) {
  return std::find(options.stop_tokens.begin(), options.stop_tokens.end(), token) != options.stop_tokens.end();
}

}  // namespace

CompletionService::CompletionService(Session session, Tokenizer tokenizer, std::string model_name,
                                     std::optional<ChatFormat> chat_format)
    : session_(std::move(session)),
      tokenizer_(std::move(tokenizer)),
      generator_(session_),
      model_name_(std::move(model_name)),
      chat_format_(chat_format ? chat_format : detect_chat_format(tokenizer_)) {}

std::vector<TokenId> CompletionService::prompt_ids(const CompletionRequest& request) const {
  if (request.endpoint == Endpoint::ChatCompletions) {
    if (!chat_format_)
      throw RequestError("messages", tokenizer_.path() +
                                         ": the tokenizer's chat template is of no format wgml writes (llama3, chatml, "
                                         "llama2); start wgml serve with --chat-format, or use /v1/completions");
    try {
      return chat_prompt(tokenizer_, *chat_format_, request.messages);
    } catch (const Error& e) {
      throw RequestError("messages", e.what());
    }
  }
  if (request.prompt_ids.empty()) return tokenizer_.encode(request.prompt, tokenizer_.adds_bos());
  for (TokenId id : request.prompt_ids)
    if (id >= generator_.vocab_size())
      throw RequestError("prompt", "request field 'prompt': token id " + std::to_string(id) +
                                       " is outside the model's vocabulary of " + std::to_string(generator_.vocab_size()));
  return request.prompt_ids;
}

PreparedRequest CompletionService::prepare(const CompletionRequest& request) {
  const std::lock_guard lock(mutex_);  // the tokenizer is not promised to be thread-safe
  PreparedRequest prepared{prompt_ids(request), {}, request.stop};
  const char* param = request.endpoint == Endpoint::ChatCompletions ? "messages" : "prompt";
  if (prepared.prompt.empty()) throw RequestError(param, "the prompt encodes to no tokens: expected at least one");
  const int64_t context = generator_.max_context();
  if (context > 0 && static_cast<int64_t>(prepared.prompt.size()) > context)
    throw RequestError(param,
                       "the prompt has " + std::to_string(prepared.prompt.size()) + " tokens: the model's context holds " +
                           std::to_string(context),
                       "context_length_exceeded");
  GenerationOptions& options = prepared.options;
  options.max_new_tokens = request.max_tokens.value_or(
      request.endpoint == Endpoint::Completions ? kDefaultCompletionTokens : std::numeric_limits<int64_t>::max());
  options.sampling.temperature = request.temperature;
  options.sampling.top_p = request.top_p;
  options.sampling.seed = request.seed ? *request.seed : std::random_device()();
  options.stop_tokens = tokenizer_.eos_ids();
  return prepared;
}

CompletionResult CompletionService::complete(const PreparedRequest& request, const TextCallback& on_text) {
  const std::lock_guard lock(mutex_);
  CompletionResult result;
  TextStream stream = tokenizer_.stream(request.prompt);
  StopStrings stops(request.stop);
  bool client_gone = false;
  // Sends what the stop strings let through; false once generation should end.
  const auto emit = [&](const std::string& text) {
    const std::string out = stops.push(text);
    if (!out.empty()) {
      result.text += out;
      if (on_text && !on_text(out)) client_gone = true;
    }
    return !stops.stopped() && !client_gone;
  };
  generator_.reset();
  generator_.generate(request.prompt, request.options,
                      [&](int64_t token) { return is_stop_token(request.options, token) || emit(stream.push(token)); });
  const GenerationStats& stats = generator_.stats();
  if (!stops.stopped()) emit(stream.flush());
  const std::string held = stops.finish();
  if (!held.empty()) {
    result.text += held;
    if (on_text && !client_gone) on_text(held);
  }
  result.finish_reason =
      stats.stop_reason == StopReason::StopToken || stops.stopped() ? FinishReason::Stop : FinishReason::Length;
  result.prompt_tokens = static_cast<int64_t>(request.prompt.size());
  result.completion_tokens = stats.generated_tokens;
  return result;
}

}  // namespace wgml::serve
