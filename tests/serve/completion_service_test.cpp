// wgml serve's model side (src/serve/completion_service.h) on tiny-llama-fp32 on the CPU reference:
// greedy text as the tokenizer decodes the Generator's tokens, stop strings, refusals, chat prompts.
#include "serve/completion_service.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace wgml::serve {
namespace {

const std::filesystem::path kModelDir = std::filesystem::path(WGML_SOURCE_DIR) / "tests/fixtures/llm/tiny-llama-fp32";

Session open_model() {
  SessionOptions options;
  options.device = "cpu";
  return Session((kModelDir / "model.pte").string(), options);
}
Tokenizer open_tokenizer() { return Tokenizer::load(kModelDir.string()); }

CompletionRequest greedy(const std::string& prompt, int64_t max_tokens) {
  CompletionRequest request;
  request.prompt = prompt;
  request.max_tokens = max_tokens;
  request.temperature = 0;
  return request;
}

// The text of the Generator's greedy tokens without the server: what the service must give.
std::string direct_greedy_text(const std::string& prompt, int64_t max_tokens) {
  Session session = open_model();
  const Tokenizer tokenizer = open_tokenizer();
  Generator generator(session);
  const std::vector<TokenId> ids = tokenizer.encode(prompt, tokenizer.adds_bos());
  GenerationOptions options;
  options.max_new_tokens = max_tokens;
  options.stop_tokens = tokenizer.eos_ids();
  std::vector<TokenId> made = generator.generate(ids, options);
  if (!made.empty() && tokenizer.is_eos(made.back())) made.pop_back();
  return tokenizer.decode(made);
}

class CompletionServiceTest : public ::testing::Test {
 protected:
  CompletionService service_{open_model(), open_tokenizer(), "tiny"};
};

TEST_F(CompletionServiceTest, GreedyTextIsTheGeneratorsTokensDecoded) {
  const PreparedRequest prepared = service_.prepare(greedy("The quick brown fox", 12));
  std::string streamed;
  const CompletionResult result = service_.complete(prepared, [&](std::string_view text) {
    streamed += text;
    return true;
  });
  EXPECT_EQ(result.text, direct_greedy_text("The quick brown fox", 12));
  EXPECT_FALSE(result.text.empty());
  EXPECT_EQ(streamed, result.text);
  EXPECT_EQ(result.prompt_tokens, static_cast<int64_t>(prepared.prompt.size()));
  EXPECT_GT(result.completion_tokens, 0);
  EXPECT_LE(result.completion_tokens, 12);
  // A second request starts a fresh sequence: the same text.
  EXPECT_EQ(service_.complete(service_.prepare(greedy("The quick brown fox", 12))).text, result.text);
}

TEST_F(CompletionServiceTest, StopsBeforeAStopString) {
  const std::string full = service_.complete(service_.prepare(greedy("Once upon a time", 32))).text;
  ASSERT_GE(full.size(), 4u) << full;
  CompletionRequest request = greedy("Once upon a time", 32);
  const std::string stop = full.substr(full.size() / 2, 2);
  request.stop = {stop};
  const CompletionResult result = service_.complete(service_.prepare(request));
  EXPECT_EQ(result.text, full.substr(0, full.find(stop)));
  EXPECT_EQ(result.finish_reason, FinishReason::Stop);
}

TEST_F(CompletionServiceTest, EndsWithLengthAtMaxTokens) {
  CompletionRequest request;
  request.prompt_ids = {1, 2, 3};
  request.max_tokens = 2;
  request.temperature = 0;
  PreparedRequest prepared = service_.prepare(request);
  prepared.options.stop_tokens.clear();  // no EOS can end it first
  const CompletionResult result = service_.complete(prepared);
  EXPECT_EQ(result.finish_reason, FinishReason::Length);
  EXPECT_EQ(result.completion_tokens, 2);
  EXPECT_EQ(result.prompt_tokens, 3);
}

TEST_F(CompletionServiceTest, RefusesPromptsThatDoNotFit) {
  CompletionRequest request;
  request.prompt_ids = std::vector<TokenId>(129, 5);  // the context holds 128
  try {
    service_.prepare(request);
    FAIL() << "a 129-token prompt was accepted";
  } catch (const RequestError& error) {
    EXPECT_EQ(error.param(), "prompt");
    EXPECT_EQ(error.code_name(), "context_length_exceeded");
    EXPECT_STREQ(error.what(), "the prompt has 129 tokens: the model's context holds 128");
  }
  request.prompt_ids = {1, 512};
  EXPECT_THROW(service_.prepare(request), RequestError);
}

TEST_F(CompletionServiceTest, WritesChatMessagesInTheTemplatesFormat) {
  const Tokenizer tokenizer = open_tokenizer();
  CompletionRequest request;
  request.endpoint = Endpoint::ChatCompletions;
  request.messages = {{"system", "Be brief."}, {"user", " Hi "}, {"assistant", "Hello."}, {"user", "Bye"}};
  // What the fixture's Jinja template renders for these messages (tokenizer_config.json).
  const std::string rendered =
      "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
      "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
      "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
      "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
      "<|start_header_id|>assistant<|end_header_id|>\n\n";
  EXPECT_EQ(service_.prepare(request).prompt, tokenizer.encode(rendered, /*add_bos=*/true));
  request.messages = {{"user", "a"}, {"assistant", "b"}};
  EXPECT_NO_THROW(service_.prepare(request));  // the llama3 format takes any order
}

TEST(ChatPrompt, Llama2TakesTurnsEndingWithTheUser) {
  const Tokenizer tokenizer = Tokenizer::load(std::string(WGML_SOURCE_DIR) + "/tests/fixtures/llm/tokenizers/spm");
  const std::vector<ChatMessage> turns = {{"user", "Hi"}, {"assistant", "Hello"}, {"user", "Bye"}};
  std::vector<TokenId> expected = tokenizer.encode("[INST] Hi [/INST]", true);
  const std::vector<TokenId> answer = tokenizer.encode(" Hello ", false);
  expected.insert(expected.end(), answer.begin(), answer.end());
  expected.push_back(tokenizer.eos_ids().front());
  const std::vector<TokenId> last = tokenizer.encode("[INST] Bye [/INST]", true);
  expected.insert(expected.end(), last.begin(), last.end());
  EXPECT_EQ(chat_prompt(tokenizer, ChatFormat::Llama2, turns), expected);
  const std::vector<ChatMessage> ends_with_assistant = {{"user", "Hi"}, {"assistant", "Hello"}};
  EXPECT_THROW(chat_prompt(tokenizer, ChatFormat::Llama2, ends_with_assistant), Error);
  const std::vector<ChatMessage> unknown_role = {{"tool", "x"}};
  EXPECT_THROW(chat_prompt(tokenizer, ChatFormat::Llama3, unknown_role), Error);
}

}  // namespace
}  // namespace wgml::serve
