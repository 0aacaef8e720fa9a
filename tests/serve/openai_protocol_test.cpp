// The mapping between OpenAI's request and response bodies and generation (src/serve/openai_protocol.h),
// without sockets.
#include "serve/openai_protocol.h"

#include <gtest/gtest.h>

namespace wgml::serve {
namespace {

using nlohmann::json;

// The RequestError parse_request throws for `body`, or a failure when it throws none.
RequestError refusal(Endpoint endpoint, const std::string& body) {
  try {
    parse_request(endpoint, body);
  } catch (const RequestError& error) {
    return error;
  }
  ADD_FAILURE() << "accepted " << body;
  return RequestError("", "");
}

TEST(OpenAiRequest, ReadsACompletionsFields) {
  const CompletionRequest request = parse_request(
      Endpoint::Completions, R"({"model": "m", "prompt": "Hi there", "max_tokens": 7, "temperature": 0, "top_p": 0.5,
                                 "seed": 42, "stop": ["a", "bc"], "stream": true, "stream_options": {"include_usage": true},
                                 "n": 1, "user": "ignored"})");
  EXPECT_EQ(request.prompt, "Hi there");
  EXPECT_EQ(request.max_tokens, 7);
  EXPECT_EQ(request.temperature, 0.0f);
  EXPECT_EQ(request.top_p, 0.5f);
  EXPECT_EQ(request.seed, 42u);
  EXPECT_EQ(request.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_TRUE(request.stream);
  EXPECT_TRUE(request.include_usage);
}

TEST(OpenAiRequest, DefaultsAreOpenAis) {
  const CompletionRequest request = parse_request(Endpoint::Completions, R"({"prompt": ["one"], "max_tokens": null})");
  EXPECT_EQ(request.prompt, "one");
  EXPECT_FALSE(request.max_tokens.has_value());
  EXPECT_EQ(request.temperature, 1.0f);
  EXPECT_EQ(request.top_p, 1.0f);
  EXPECT_FALSE(request.seed.has_value());
  EXPECT_TRUE(request.stop.empty());
  EXPECT_FALSE(request.stream);
}

TEST(OpenAiRequest, ReadsAPromptOfTokenIdsAndAStopString) {
  const CompletionRequest request = parse_request(Endpoint::Completions, R"({"prompt": [1, 2, 3], "stop": "\n"})");
  EXPECT_EQ(request.prompt_ids, (std::vector<TokenId>{1, 2, 3}));
  EXPECT_EQ(request.stop, (std::vector<std::string>{"\n"}));
}

TEST(OpenAiRequest, ReadsChatMessagesWithTextParts) {
  const CompletionRequest request = parse_request(Endpoint::ChatCompletions,
                                                  R"({"messages": [{"role": "developer", "content": "Be brief."},
                       {"role": "user", "content": [{"type": "text", "text": "Hello "}, {"type": "text", "text": "you"}]}],
          "max_completion_tokens": 3})");
  ASSERT_EQ(request.messages.size(), 2u);
  EXPECT_EQ(request.messages[0].role, "system");
  EXPECT_EQ(request.messages[0].content, "Be brief.");
  EXPECT_EQ(request.messages[1].role, "user");
  EXPECT_EQ(request.messages[1].content, "Hello you");
  EXPECT_EQ(request.max_tokens, 3);
}

TEST(OpenAiRequest, RefusesWhatOpenAiRefusesNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"prompt": "a", "n": 2})", "n"},
      {R"({"prompt": "a", "best_of": 3})", "best_of"},
      {R"({"prompt": "a", "max_tokens": 0})", "max_tokens"},
      {R"({"prompt": "a", "max_tokens": "8"})", "max_tokens"},
      {R"({"prompt": "a", "temperature": 2.5})", "temperature"},
      {R"({"prompt": "a", "top_p": 0})", "top_p"},
      {R"({"prompt": "a", "seed": 1.5})", "seed"},
      {R"({"prompt": "a", "stop": ["1", "2", "3", "4", "5"]})", "stop"},
      {R"({"prompt": "a", "stop": [""]})", "stop"},
      {R"({"prompt": "a", "stream": "yes"})", "stream"},
      {R"({"prompt": "a", "echo": true})", "echo"},
      {R"({"prompt": "a", "logprobs": 2})", "logprobs"},
      {R"({"prompt": "a", "presence_penalty": 0.5})", "presence_penalty"},
      {R"({"prompt": ""})", "prompt"},
      {R"({"prompt": [1, -2]})", "prompt"},
      {R"({"model": "m"})", "prompt"},
  };
  for (const auto& [body, param] : cases) EXPECT_EQ(refusal(Endpoint::Completions, body).param(), param) << body;
  EXPECT_EQ(refusal(Endpoint::ChatCompletions, R"({"messages": []})").param(), "messages");
  EXPECT_EQ(refusal(Endpoint::ChatCompletions, R"({"messages": [{"role": "tool", "content": "x"}]})").param(),
            "messages[0].role");
  EXPECT_EQ(refusal(Endpoint::ChatCompletions, R"({"messages": [{"role": "user"}]})").param(), "messages[0].content");
  EXPECT_EQ(refusal(Endpoint::ChatCompletions, R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})").param(),
            "messages[0].content");
}

TEST(OpenAiRequest, RefusesABodyThatIsNoJsonObject) {
  EXPECT_EQ(std::string(refusal(Endpoint::Completions, "{bad").what()), "the request body is not JSON: expected a JSON object");
  EXPECT_EQ(std::string(refusal(Endpoint::Completions, "[1]").what()), "the request body is [1]: expected a JSON object");
  EXPECT_EQ(std::string(refusal(Endpoint::Completions, "\"\xff\"").what()),
            "the request body is not JSON: expected a JSON object");
  EXPECT_EQ(std::string(refusal(Endpoint::Completions, R"({"prompt": "a", "n": 5})").what()),
            "request field 'n': expected 1 (wgml makes one choice per request), got 5");
}

const ResponseHeader kHeader{"cmpl-1", 1700000000, "tiny"};

TEST(OpenAiResponse, WritesACompletionAndAChatCompletion) {
  const CompletionResult result{"Hello", FinishReason::Length, 4, 3};
  EXPECT_EQ(completion_response(Endpoint::Completions, kHeader, result), json::parse(R"({
    "id": "cmpl-1", "object": "text_completion", "created": 1700000000, "model": "tiny",
    "choices": [{"index": 0, "text": "Hello", "logprobs": null, "finish_reason": "length"}],
    "usage": {"prompt_tokens": 4, "completion_tokens": 3, "total_tokens": 7}})"));
  EXPECT_EQ(completion_response(Endpoint::ChatCompletions, kHeader, {"Hi", FinishReason::Stop, 2, 1}), json::parse(R"({
    "id": "cmpl-1", "object": "chat.completion", "created": 1700000000, "model": "tiny",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}, "logprobs": null, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3}})"));
}

TEST(OpenAiResponse, WritesStreamChunksAsServerSentEvents) {
  const json first = stream_chunk(Endpoint::ChatCompletions, kHeader, "", std::nullopt, true);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"], json::parse(R"({"role": "assistant", "content": ""})"));
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  EXPECT_EQ(stream_chunk(Endpoint::ChatCompletions, kHeader, "abc", std::nullopt)["choices"][0]["delta"],
            json::parse(R"({"content": "abc"})"));
  const json last = stream_chunk(Endpoint::ChatCompletions, kHeader, "", FinishReason::Stop);
  EXPECT_EQ(last["choices"][0]["delta"], json::object());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  const json text = stream_chunk(Endpoint::Completions, kHeader, "x", FinishReason::Length);
  EXPECT_EQ(text["object"], "text_completion");
  EXPECT_EQ(text["choices"][0]["text"], "x");
  EXPECT_EQ(text["choices"][0]["finish_reason"], "length");
  const json usage = usage_chunk(Endpoint::Completions, kHeader, {"", FinishReason::Length, 5, 2});
  EXPECT_EQ(usage["choices"], json::array());
  EXPECT_EQ(usage["usage"]["total_tokens"], 7);
  EXPECT_EQ(sse_event(json{{"a", 1}}), "data: {\"a\":1}\n\n");
  EXPECT_EQ(kSseDone, "data: [DONE]\n\n");
}

TEST(OpenAiResponse, WritesErrorsAndTheModelList) {
  EXPECT_EQ(error_body("bad n", "invalid_request_error", "n"), json::parse(R"({"error": {
    "message": "bad n", "type": "invalid_request_error", "param": "n", "code": null}})"));
  EXPECT_EQ(models_response("tiny", 5), json::parse(R"({"object": "list", "data": [
    {"id": "tiny", "object": "model", "created": 5, "owned_by": "wgml"}]})"));
  EXPECT_EQ(dump(json("a\xff")), "\"a\xEF\xBF\xBD\"");  // never throws on bytes that are not UTF-8
}

TEST(StopStrings, HoldsBackWhatMayBeginAStopStringAcrossPieces) {
  StopStrings stops({"END", "xy"});
  EXPECT_EQ(stops.push("abcE"), "abc");
  EXPECT_EQ(stops.push("N"), "");
  EXPECT_EQ(stops.push("ough"), "ENough");
  EXPECT_EQ(stops.push("x"), "");
  EXPECT_FALSE(stops.stopped());
  EXPECT_EQ(stops.push("yz"), "");
  EXPECT_TRUE(stops.stopped());
  EXPECT_EQ(stops.push("more"), "");
  EXPECT_EQ(stops.finish(), "");
}

TEST(StopStrings, CutsBeforeTheFirstStopAndGivesBackTheTailAtTheEnd) {
  StopStrings stops({"ab", "c"});
  EXPECT_EQ(stops.push("12cab"), "12");
  EXPECT_TRUE(stops.stopped());
  StopStrings tail({"END"});
  EXPECT_EQ(tail.push("zzEN"), "zz");
  EXPECT_EQ(tail.finish(), "EN");
}

}  // namespace
}  // namespace wgml::serve
