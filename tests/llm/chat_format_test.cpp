// Chat prompts against what jinja2 renders from the fixtures' chat templates and the reference
// tokenizers encode (tools/llm/make_test_tokenizers.py).
#include "llm/chat_format.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "wgml/error.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace wgml {
namespace {

const fs::path kFixtures = fs::path(WGML_SOURCE_DIR) / "tests/fixtures/llm/tokenizers";

json chat_fixture(const std::string& kind) {
  std::ifstream file(kFixtures / kind / "encodings.json");
  return json::parse(file)["chat"];
}

TEST(ChatFormat, WritesTheLlama3TemplatesPrompt) {
  Tokenizer tokenizer = Tokenizer::load((kFixtures / "bpe").string());
  const json chat = chat_fixture("bpe");
  ASSERT_EQ(detect_chat_format(tokenizer), ChatFormat::Llama3);
  EXPECT_EQ(chat_prompt(tokenizer, ChatFormat::Llama3, chat["user"].get<std::string>()),
            chat["prompt_ids"].get<std::vector<TokenId>>());
  EXPECT_EQ(chat_prompt(tokenizer, ChatFormat::Llama3, chat["user"].get<std::string>(), chat["system"].get<std::string>()),
            chat["prompt_with_system_ids"].get<std::vector<TokenId>>());
}

TEST(ChatFormat, WritesTheLlama2TemplatesPrompt) {
  Tokenizer tokenizer = Tokenizer::load((kFixtures / "spm").string());
  const json chat = chat_fixture("spm");
  ASSERT_EQ(detect_chat_format(tokenizer), ChatFormat::Llama2);
  EXPECT_EQ(chat_prompt(tokenizer, ChatFormat::Llama2, chat["user"].get<std::string>()),
            chat["prompt_ids"].get<std::vector<TokenId>>());
  EXPECT_EQ(chat_prompt(tokenizer, ChatFormat::Llama2, chat["user"].get<std::string>(), chat["system"].get<std::string>()),
            chat["prompt_with_system_ids"].get<std::vector<TokenId>>());
}

// Qwen's format, read back as text (the fixture's vocabulary has no <|im_start|> token).
TEST(ChatFormat, WritesChatML) {
  Tokenizer tokenizer = Tokenizer::load((kFixtures / "bpe").string());
  EXPECT_EQ(tokenizer.decode(chat_prompt(tokenizer, ChatFormat::ChatML, "Hi", "Be brief.")),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatFormat, DetectsNothingWithoutATemplate) {
  EXPECT_EQ(detect_chat_format(Tokenizer::load((kFixtures / "tiktoken").string())), std::nullopt);
}

TEST(ChatFormat, NamesTheKnownFormats) {
  for (ChatFormat format : {ChatFormat::Llama3, ChatFormat::ChatML, ChatFormat::Llama2}) {
    EXPECT_EQ(chat_format_from_name(chat_format_name(format)), format);
  }
  try {
    chat_format_from_name("vicuna");
    ADD_FAILURE() << "vicuna accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("'vicuna'; expected llama3, chatml or llama2"), std::string::npos);
  }
}

}  // namespace
}  // namespace wgml
