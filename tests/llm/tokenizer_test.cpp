// wgml::Tokenizer against the reference libraries: for every string of the fixtures'
// encodings.json, the ids Hugging Face tokenizers / sentencepiece give and the text they decode
// (tools/llm/make_test_tokenizers.py wrote both).
#include "wgml/tokenizer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "wgml/error.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace wgml {
namespace {

const fs::path kFixtures = fs::path(WGML_SOURCE_DIR) / "tests/fixtures/llm/tokenizers";

json read_json(const fs::path& path) {
  std::ifstream file(path);
  return json::parse(file);
}

std::vector<TokenId> ids_of(const json& value) { return value.get<std::vector<TokenId>>(); }

// Whether `text` is well-formed UTF-8 (no overlongs, surrogates or cut characters).
bool is_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    auto lead = static_cast<unsigned char>(text[i]);
    size_t length = lead < 0x80                    ? 1
                    : lead >= 0xC2 && lead <= 0xDF ? 2
                    : lead >= 0xE0 && lead <= 0xEF ? 3
                    : lead >= 0xF0 && lead <= 0xF4 ? 4
                                                   : 0;
    if (length == 0 || i + length > text.size()) return false;
    for (size_t k = 1; k < length; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return false;
    }
    auto second = static_cast<unsigned char>(text[i + 1]);
    if ((lead == 0xE0 && second < 0xA0) || (lead == 0xED && second > 0x9F) || (lead == 0xF0 && second < 0x90) ||
        (lead == 0xF4 && second > 0x8F)) {
      return false;
    }
    i += length;
  }
  return true;
}

// The stream's output for `ids` after `context`, checking that every piece is whole UTF-8.
std::string streamed(const Tokenizer& tokenizer, std::span<const TokenId> context, std::span<const TokenId> ids) {
  TextStream stream = tokenizer.stream(context);
  std::string text;
  for (TokenId id : ids) {
    std::string piece = stream.push(id);
    EXPECT_TRUE(is_utf8(piece)) << "after id " << id;
    text += piece;
  }
  std::string rest = stream.flush();
  EXPECT_TRUE(is_utf8(rest));
  return text + rest;
}

class TokenizerFixture : public testing::TestWithParam<std::string> {
 protected:
  fs::path dir() const { return kFixtures / GetParam(); }
  json encodings() const { return read_json(dir() / "encodings.json"); }
};

TEST_P(TokenizerFixture, EncodesAsTheReferenceLibrary) {
  Tokenizer tokenizer = Tokenizer::load(dir().string());
  const json expected = encodings();
  for (const json& c : expected["cases"]) {
    const std::string text = c["text"];
    EXPECT_EQ(tokenizer.encode(text, false), ids_of(c["ids"])) << text;
    EXPECT_EQ(tokenizer.encode(text, true), ids_of(c["ids_with_bos"])) << text;
  }
}

TEST_P(TokenizerFixture, DecodesAsTheReferenceLibrary) {
  Tokenizer tokenizer = Tokenizer::load(dir().string());
  const json expected = encodings();
  for (const json& c : expected["cases"]) {
    EXPECT_EQ(tokenizer.decode(ids_of(c["ids"])), c["decoded"].get<std::string>()) << c["text"];
  }
}

TEST_P(TokenizerFixture, StreamsTheDecodedTextInWholeCharacters) {
  Tokenizer tokenizer = Tokenizer::load(dir().string());
  const json expected = encodings();
  for (const json& c : expected["cases"]) {
    EXPECT_EQ(streamed(tokenizer, {}, ids_of(c["ids"])), c["decoded"].get<std::string>()) << c["text"];
  }
}

// Streaming the continuation of a prompt gives what decoding the whole adds to the prompt's text,
// leading spaces included (SentencePiece drops a text's first space).
TEST_P(TokenizerFixture, StreamsAContinuationAfterItsContext) {
  Tokenizer tokenizer = Tokenizer::load(dir().string());
  const json expected = encodings();
  for (const json& c : expected["cases"]) {
    std::vector<TokenId> ids = ids_of(c["ids_with_bos"]);
    const std::string whole = tokenizer.decode(ids);
    for (size_t split = 1; split < ids.size(); ++split) {
      std::span<const TokenId> context(ids.data(), split);
      const std::string before = tokenizer.decode(context);
      if (before.ends_with("\xEF\xBF\xBD") || !whole.starts_with(before)) continue;  // cut inside a character
      EXPECT_EQ(streamed(tokenizer, context, std::span(ids).subspan(split)), whole.substr(before.size()))
          << c["text"] << " after " << split << " tokens";
    }
  }
}

TEST_P(TokenizerFixture, ReadsSpecialTokensFromTheConfigs) {
  Tokenizer tokenizer = Tokenizer::load(dir().string());
  const json expected = encodings();
  EXPECT_EQ(expected["cases"].size(), 123u);  // 23 chosen strings, 100 generated ones
  EXPECT_EQ(tokenizer.vocab_size(), expected["vocab_size"].get<int64_t>());
  EXPECT_EQ(tokenizer.bos_id(), expected["bos_id"].get<TokenId>());
  EXPECT_TRUE(tokenizer.adds_bos());
  EXPECT_EQ(tokenizer.eos_ids(), ids_of(expected["eos_ids"]));
  for (TokenId eos : tokenizer.eos_ids()) EXPECT_TRUE(tokenizer.is_eos(eos));
  EXPECT_FALSE(tokenizer.is_eos(*tokenizer.bos_id()));
  // Meta's tiktoken release has no config files, hence no chat template.
  EXPECT_EQ(tokenizer.chat_template().find("messages") != std::string::npos, GetParam() != "tiktoken");
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TokenizerFixture, testing::Values("bpe", "spm", "tiktoken"));

TEST(Tokenizer, NamesTheLibraryThatReadTheFile) {
  EXPECT_EQ(Tokenizer::load((kFixtures / "bpe").string()).kind(), "tokenizer.json");
  EXPECT_EQ(Tokenizer::load((kFixtures / "spm").string()).kind(), "sentencepiece");
  EXPECT_EQ(Tokenizer::load((kFixtures / "tiktoken").string()).kind(), "tiktoken");
  EXPECT_EQ(Tokenizer::load((kFixtures / "spm/tokenizer.model").string()).path(), (kFixtures / "spm/tokenizer.model").string());
}

TEST(Tokenizer, StreamOutlivesAMoveOfItsTokenizer) {
  Tokenizer first = Tokenizer::load((kFixtures / "bpe").string());
  const std::vector<TokenId> ids = first.encode("Ça va? 😀", false);
  TextStream stream = first.stream();
  Tokenizer moved = std::move(first);
  std::string text;
  for (TokenId id : ids) text += stream.push(id);
  EXPECT_EQ(text + stream.flush(), "Ça va? 😀");
}

// A directory of scratch files, removed afterwards.
class ScratchDir {
 public:
  ScratchDir() {
    path_ = fs::temp_directory_path() / ("wgml_tokenizer_test_" + std::to_string(getpid()) + "_" +
                                         testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() { fs::remove_all(path_); }
  fs::path write(const std::string& name, const std::string& contents) const {
    std::ofstream(path_ / name, std::ios::binary) << contents;
    return path_ / name;
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Merges written as "a b" strings (tokenizers before 0.20, and many published tokenizer.json
// files) encode like the [a, b] pairs the fixture has.
TEST(Tokenizer, ReadsMergesWrittenAsStrings) {
  ScratchDir scratch;
  json tokenizer = read_json(kFixtures / "bpe/tokenizer.json");
  for (json& merge : tokenizer["model"]["merges"]) {
    merge = merge[0].get<std::string>() + " " + merge[1].get<std::string>();
  }
  scratch.write("tokenizer.json", tokenizer.dump());
  Tokenizer loaded = Tokenizer::load(scratch.path().string());
  const json expected = read_json(kFixtures / "bpe/encodings.json");
  for (const json& c : expected["cases"]) {
    EXPECT_EQ(loaded.encode(c["text"].get<std::string>(), false), ids_of(c["ids"])) << c["text"];
  }
}

// tokenizer.json alone: BOS from its post-processor, EOS guessed from the special tokens' names.
TEST(Tokenizer, ReadsATokenizerJsonWithoutConfigs) {
  ScratchDir scratch;
  fs::copy_file(kFixtures / "bpe/tokenizer.json", scratch.path() / "tokenizer.json");
  Tokenizer tokenizer = Tokenizer::load((scratch.path() / "tokenizer.json").string());
  EXPECT_EQ(tokenizer.bos_id(), 507);
  EXPECT_TRUE(tokenizer.adds_bos());
  EXPECT_EQ(tokenizer.eos_ids(), std::vector<TokenId>{508});
  EXPECT_EQ(tokenizer.chat_template(), "");
}

// A model without BOS (Qwen's tokenizer_config.json says "bos_token": null).
TEST(Tokenizer, AddsNoBosWhenTheConfigHasNone) {
  ScratchDir scratch;
  fs::copy_file(kFixtures / "bpe/tokenizer.json", scratch.path() / "tokenizer.json");
  scratch.write("tokenizer_config.json", R"({"bos_token": null, "eos_token": "<|end_of_text|>"})");
  Tokenizer tokenizer = Tokenizer::load(scratch.path().string());
  EXPECT_EQ(tokenizer.bos_id(), std::nullopt);
  EXPECT_FALSE(tokenizer.adds_bos());
  EXPECT_EQ(tokenizer.encode("a", true), std::vector<TokenId>{64});
  EXPECT_EQ(tokenizer.eos_ids(), std::vector<TokenId>{508});
}

// A directory whose tokenizer.json the library cannot read falls back to its tokenizer.model.
TEST(Tokenizer, ReadsTheSentencePieceModelBesideAnUnsupportedTokenizerJson) {
  ScratchDir scratch;
  fs::copy_file(kFixtures / "spm/tokenizer.model", scratch.path() / "tokenizer.model");
  scratch.write("tokenizer.json", R"({"model": {"type": "Unigram", "vocab": []}})");
  Tokenizer tokenizer = Tokenizer::load(scratch.path().string());
  EXPECT_EQ(tokenizer.kind(), "sentencepiece");
  EXPECT_EQ(tokenizer.path(), (scratch.path() / "tokenizer.model").string());
  EXPECT_EQ(tokenizer.decode(tokenizer.encode("Hello, world!", true)), "Hello, world!");
}

void expect_error(const std::string& path, ErrorCode code, const std::string& named) {
  try {
    Tokenizer::load(path);
    ADD_FAILURE() << path << " loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
  }
}

TEST(Tokenizer, RejectsMissingAndBrokenFilesNamingThem) {
  ScratchDir scratch;
  expect_error((scratch.path() / "absent").string(), ErrorCode::Io, "absent: not found");
  expect_error(scratch.path().string(), ErrorCode::Io, "holds neither tokenizer.json nor tokenizer.model");

  fs::path json_file = scratch.write("tokenizer.json", "{\"model\": [1, 2");
  expect_error(json_file.string(), ErrorCode::InvalidFormat, json_file.string() + ": not valid JSON");
  scratch.write("tokenizer.json", R"({"model": 5})");
  expect_error(json_file.string(), ErrorCode::InvalidFormat, json_file.string() + ": expected a Hugging Face");
  scratch.write("tokenizer.json", R"([1, 2])");
  expect_error(json_file.string(), ErrorCode::InvalidFormat, json_file.string() + ": expected a JSON object");
  scratch.write("tokenizer.json", R"({"model": {"type": "WordPiece", "vocab": {}}})");
  expect_error(json_file.string(), ErrorCode::Unsupported, json_file.string() + ": model type WordPiece");
  scratch.write("tokenizer.json", R"({"model": {"type": "BPE"}})");
  expect_error(json_file.string(), ErrorCode::Unsupported, json_file.string() + ": pytorch/tokenizers");

  fs::path model_file = scratch.write("tokenizer.model", "not a model at all\n");
  expect_error(model_file.string(), ErrorCode::InvalidFormat, model_file.string() + ": neither a SentencePiece");

  fs::create_directory(scratch.path() / "model");
  fs::copy_file(kFixtures / "bpe/tokenizer.json", scratch.path() / "model/tokenizer.json");
  fs::path config = scratch.write("model/tokenizer_config.json", R"({"eos_token": "<|no such token|>"})");
  expect_error((scratch.path() / "model").string(), ErrorCode::InvalidFormat, config.string());
  scratch.write("model/tokenizer_config.json", R"(["not", "an", "object"])");
  expect_error((scratch.path() / "model").string(), ErrorCode::InvalidFormat, config.string() + ": expected a JSON object");
  fs::remove(config);
  fs::path generation = scratch.write("model/generation_config.json", R"({"eos_token_id": [1, "two"]})");
  expect_error((scratch.path() / "model").string(), ErrorCode::InvalidFormat, generation.string());
  scratch.write("model/generation_config.json", R"({"eos_token_id": 100000})");
  expect_error((scratch.path() / "model").string(), ErrorCode::InvalidFormat,
               generation.string() + ": eos_token_id 100000 is outside the vocabulary");
}

TEST(Tokenizer, RejectsIdsOutsideTheVocabulary) {
  for (const char* kind : {"bpe", "spm"}) {
    Tokenizer tokenizer = Tokenizer::load((kFixtures / kind).string());
    for (TokenId id : {TokenId{-1}, TokenId{512}}) {
      try {
        tokenizer.decode(std::vector<TokenId>{id});
        ADD_FAILURE() << kind << ": id " << id << " decoded";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
        EXPECT_NE(std::string(e.what()).find("outside the vocabulary of " + tokenizer.path()), std::string::npos);
      }
    }
  }
}

}  // namespace
}  // namespace wgml
