#include "serve/openai_protocol.h"

#include <algorithm>

namespace wgml::serve {
namespace {

using nlohmann::json;

// A field's value as the message shows it, cut short: it comes from the client.
std::string shown(const json& value) {
  std::string text = dump(value);
  return text.size() > 40 ? text.substr(0, 40) + "..." : text;
}

[[noreturn]] void refuse(const std::string& param, const std::string& expected, const json& value) {
  throw RequestError(param, "request field '" + param + "': expected " + expected + ", got " + shown(value));
}

// The field's value; null where it is missing or null (OpenAI treats both as unset).
const json* field(const json& body, const char* name) {
  const auto it = body.find(name);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

double number_in(const json& body, const char* name, double low, double high, double unset) {
  const json* value = field(body, name);
  if (!value) return unset;
  if (!value->is_number() || value->get<double>() < low || value->get<double>() > high)
    refuse(name, "a number from " + shown(low) + " to " + shown(high), *value);
  return value->get<double>();
}

std::optional<int64_t> integer(const json& body, const char* name, int64_t low) {
  const json* value = field(body, name);
  if (!value) return std::nullopt;
  if (!value->is_number_integer() || (value->is_number_unsigned() && value->get<uint64_t>() > INT64_MAX) ||
      value->get<int64_t>() < low)
    refuse(name, "an integer of at least " + std::to_string(low), *value);
  return value->get<int64_t>();
}

bool boolean(const json& body, const char* name) {
  const json* value = field(body, name);
  if (value && !value->is_boolean()) refuse(name, "true or false", *value);
  return value && value->get<bool>();
}

// Fields that would change what OpenAI returns in ways wgml does not do: refused, never ignored.
void refuse_unsupported(const json& body) {
  for (const char* name : {"n", "best_of"}) {
    const json* value = field(body, name);
    if (value && *value != 1) refuse(name, "1 (wgml makes one choice per request)", *value);
  }
  for (const char* name : {"echo", "logprobs", "top_logprobs", "suffix", "tools", "functions", "logit_bias"}) {
    const json* value = field(body, name);
    if (value && *value != false && !value->empty() && *value != "")
      refuse(name, "nothing (wgml does not support '" + std::string(name) + "')", *value);
  }
  for (const char* name : {"presence_penalty", "frequency_penalty"}) {
    const json* value = field(body, name);
    if (value && *value != 0) refuse(name, "0 (wgml applies no penalties)", *value);
  }
  const json* format = field(body, "response_format");
  if (format && (!format->is_object() || format->value("type", "") != "text"))
    refuse("response_format", "{\"type\": \"text\"} (wgml does not constrain its output)", *format);
}

std::vector<std::string> stop_strings(const json& body) {
  const json* value = field(body, "stop");
  if (!value) return {};
  const char* expected = "a non-empty string or a list of at most 4 of them";
  if (value->is_string()) {
    if (value->get_ref<const std::string&>().empty()) refuse("stop", expected, *value);
    return {value->get<std::string>()};
  }
  if (!value->is_array() || value->size() > 4) refuse("stop", expected, *value);
  std::vector<std::string> stops;
  for (const json& stop : *value) {
    if (!stop.is_string() || stop.get_ref<const std::string&>().empty()) refuse("stop", expected, *value);
    stops.push_back(stop.get<std::string>());
  }
  return stops;
}

// A string, a list of one string, or a list of token ids.
void read_prompt(const json& body, CompletionRequest& request) {
  const json* value = field(body, "prompt");
  const char* expected = "a non-empty string, a list of one string, or a non-empty list of token ids";
  if (!value) throw RequestError("prompt", "request field 'prompt': missing; expected " + std::string(expected));
  if (value->is_array() && value->size() == 1 && value->front().is_string()) value = &value->front();
  if (value->is_string() && !value->get_ref<const std::string&>().empty()) {
    request.prompt = value->get<std::string>();
    return;
  }
  if (!value->is_array() || value->empty()) refuse("prompt", expected, *value);
  for (const json& id : *value) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0) refuse("prompt", expected, *value);
    request.prompt_ids.push_back(id.get<int64_t>());
  }
}

// A message's content: a string, or a list of text parts ({"type": "text", "text": ...}) joined.
std::string message_content(const json& content, const std::string& param) {
  if (content.is_string()) return content.get<std::string>();
  const char* expected = "a string or a list of text parts ({\"type\": \"text\", \"text\": \"...\"})";
  if (!content.is_array()) refuse(param, expected, content);
  std::string text;
  for (const json& part : content) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string())
      refuse(param, expected, part);
    text += part["text"].get<std::string>();
  }
  return text;
}

void read_messages(const json& body, CompletionRequest& request) {
  const json* value = field(body, "messages");
  if (!value || !value->is_array() || value->empty())
    refuse("messages", "a non-empty list of messages ({\"role\": ..., \"content\": ...})", value ? *value : json());
  for (size_t i = 0; i < value->size(); ++i) {
    const json& message = (*value)[i];
    const std::string param = "messages[" + std::to_string(i) + "]";
    if (!message.is_object() || !message.contains("role") || !message["role"].is_string())
      refuse(param, "an object with a role and a content", message);
    std::string role = message["role"].get<std::string>();
    if (role == "developer") role = "system";  // OpenAI's newer name for the system message
    if (role != "system" && role != "user" && role != "assistant")
      refuse(param + ".role", "system, developer, user or assistant", message["role"]);
    const json* content = field(message, "content");
    if (!content) refuse(param + ".content", "the message's text", json());
    request.messages.push_back({role, message_content(*content, param + ".content")});
  }
}

}  // namespace

RequestError::RequestError(std::string param, const std::string& message, std::string code)
    : Error(ErrorCode::InvalidArgument, message), param_(std::move(param)), code_name_(std::move(code)) {}

CompletionRequest parse_request(Endpoint endpoint, std::string_view body_text) {
  const json body = json::parse(body_text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) throw RequestError("", "the request body is not JSON: expected a JSON object");
  if (!body.is_object()) throw RequestError("", "the request body is " + shown(body) + ": expected a JSON object");
  refuse_unsupported(body);
  CompletionRequest request;
  request.endpoint = endpoint;
  if (endpoint == Endpoint::Completions)
    read_prompt(body, request);
  else
    read_messages(body, request);
  // Chat's newer name for max_tokens.
  request.max_tokens = integer(body, "max_tokens", 1);
  if (const auto max_completion_tokens = integer(body, "max_completion_tokens", 1)) request.max_tokens = max_completion_tokens;
  request.temperature = static_cast<float>(number_in(body, "temperature", 0, 2, 1));
  request.top_p = static_cast<float>(number_in(body, "top_p", 0, 1, 1));
  if (request.top_p == 0) refuse("top_p", "a number above 0, at most 1", body["top_p"]);
  if (const json* seed = field(body, "seed")) {
    if (!seed->is_number_integer()) refuse("seed", "an integer", *seed);
    request.seed = seed->is_number_unsigned() ? seed->get<uint64_t>() : static_cast<uint64_t>(seed->get<int64_t>());
  }
  request.stop = stop_strings(body);
  request.stream = boolean(body, "stream");
  if (const json* options = field(body, "stream_options")) {
    if (!options->is_object()) refuse("stream_options", "an object", *options);
    request.include_usage = boolean(*options, "include_usage");
  }
  return request;
}

const char* finish_reason_name(FinishReason reason) { return reason == FinishReason::Stop ? "stop" : "length"; }

namespace {

json usage(const CompletionResult& result) {
  return {{"prompt_tokens", result.prompt_tokens},
          {"completion_tokens", result.completion_tokens},
          {"total_tokens", result.prompt_tokens + result.completion_tokens}};
}

json response_base(const ResponseHeader& header, const char* object) {
  return {{"id", header.id}, {"object", object}, {"created", header.created}, {"model", header.model}};
}

json finish(std::optional<FinishReason> reason) { return reason ? json(finish_reason_name(*reason)) : json(); }

}  // namespace

json completion_response(Endpoint endpoint, const ResponseHeader& header, const CompletionResult& result) {
  const bool chat = endpoint == Endpoint::ChatCompletions;
  json choice = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish_reason_name(result.finish_reason)}};
  if (chat)
    choice["message"] = {{"role", "assistant"}, {"content", result.text}};
  else
    choice["text"] = result.text;
  json response = response_base(header, chat ? "chat.completion" : "text_completion");
  response["choices"] = json::array({choice});
  response["usage"] = usage(result);
  return response;
}

json stream_chunk(Endpoint endpoint, const ResponseHeader& header, std::string_view text,
                  std::optional<FinishReason> finish_reason, bool first) {
  const bool chat = endpoint == Endpoint::ChatCompletions;
  json choice = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish(finish_reason)}};
  if (chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!text.empty() || first) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  json chunk = response_base(header, chat ? "chat.completion.chunk" : "text_completion");
  chunk["choices"] = json::array({choice});
  return chunk;
}

json usage_chunk(Endpoint endpoint, const ResponseHeader& header, const CompletionResult& result) {
  json chunk = response_base(header, endpoint == Endpoint::ChatCompletions ? "chat.completion.chunk" : "text_completion");
  chunk["choices"] = json::array();
  chunk["usage"] = usage(result);
  return chunk;
}

json models_response(const std::string& model, int64_t created) {
  return {{"object", "list"},
          {"data", json::array({{{"id", model}, {"object", "model"}, {"created", created}, {"owned_by", "wgml"}}})}};
}

json error_body(const std::string& message, const std::string& type, const std::string& param, const std::string& code) {
  return {{"error",
           {{"message", message},
            {"type", type},
            {"param", param.empty() ? json() : json(param)},
            {"code", code.empty() ? json() : json(code)}}}};
}

std::string dump(const json& json) { return json.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse_event(const json& json) { return "data: " + dump(json) + "\n\n"; }

std::string StopStrings::push(std::string_view text) {
  if (stopped_) return {};
  pending_ += text;
  size_t first_stop = std::string::npos;
  for (const std::string& stop : stops_) first_stop = std::min(first_stop, pending_.find(stop));
  if (first_stop != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, first_stop);
    pending_.clear();
    return out;
  }
  // Hold back the longest tail that begins some stop string.
  size_t held = 0;
  for (const std::string& stop : stops_)
    for (size_t length = std::min(stop.size() - 1, pending_.size()); length > held; --length)
      if (pending_.compare(pending_.size() - length, length, stop, 0, length) == 0) {
        held = length;
        break;
      }
  std::string out = pending_.substr(0, pending_.size() - held);
  pending_.erase(0, pending_.size() - held);
  return out;
}

std::string StopStrings::finish() {
  std::string out = stopped_ ? std::string() : std::move(pending_);
  pending_.clear();
  return out;
}

}  // namespace wgml::serve
