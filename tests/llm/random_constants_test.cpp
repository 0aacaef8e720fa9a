// Random weights for a program that has none (src/llm/random_constants.h): the tiny-llama-fp32
// fixture's MLX program runs on constants drawn from its metadata, extracted from its .pte.
#include "llm/random_constants.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "wgml/error.h"
#include "wgml/generator.h"

namespace fs = std::filesystem;

namespace {

const std::string kSource = WGML_SOURCE_DIR;
const std::string kModel = kSource + "/tests/fixtures/llm/tiny-llama-fp32/model.pte";

class RandomWeights : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("wgml_random_constants_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST_F(RandomWeights, PteProgramRunsOnDrawnConstants) {
  const wgml::llm::RandomWeightsModel drawn = wgml::llm::write_random_weights_model(kModel, dir_.string(), 3, 2);
  EXPECT_EQ(drawn.payload_path, (dir_ / "model.mlxg").string());
  EXPECT_EQ(drawn.constants_path, (dir_ / "model.safetensors").string());
  // 427304 bytes of constants (wgml inspect), after a header.
  EXPECT_GT(fs::file_size(drawn.constants_path), 427304u);

  wgml::SessionOptions options;
  options.constants_path = drawn.constants_path;
  wgml::Session session(drawn.payload_path, options);
  wgml::Generator generator(session);
  EXPECT_EQ(generator.vocab_size(), 512);
  EXPECT_EQ(generator.max_context(), 128);  // from the KV caches: the payload has no get_max_ctx_len
  const std::vector<int64_t> prompt = {1, 2, 3};
  const std::vector<float> logits = generator.forward(prompt);
  ASSERT_EQ(logits.size(), 512u);
  float largest = 0;
  for (float v : logits) {
    ASSERT_TRUE(std::isfinite(v));
    largest = std::max(largest, std::abs(v));
  }
  EXPECT_GT(largest, 0);  // drawn weights, not zeros

  wgml::Session file_session(kModel);
  wgml::Generator file_generator(file_session);
  EXPECT_NE(file_generator.forward(prompt), logits);  // not the file's own weights
}

TEST_F(RandomWeights, SameSeedSameBytes) {
  const fs::path a = dir_ / "a", b = dir_ / "b";
  fs::create_directories(a);
  fs::create_directories(b);
  const auto first = wgml::llm::write_random_weights_model(kModel, a.string(), 5, 1);
  const auto second = wgml::llm::write_random_weights_model(kModel, b.string(), 5, 3);
  EXPECT_EQ(file_bytes(first.constants_path), file_bytes(second.constants_path));
  EXPECT_EQ(file_bytes(first.payload_path), file_bytes(second.payload_path));
}

TEST_F(RandomWeights, PayloadWithoutConstantsFileIsRecognised) {
  EXPECT_FALSE(wgml::llm::payload_without_constants(kModel, ""));  // a .pte carries its constants
  const auto drawn = wgml::llm::write_random_weights_model(kModel, dir_.string(), 0, 1);
  // The payload's own .safetensors sits beside it (model.safetensors): found.
  EXPECT_FALSE(wgml::llm::payload_without_constants(drawn.payload_path, ""));
  const std::string alone = (dir_ / "alone.mlxg").string();
  fs::copy_file(drawn.payload_path, alone);
  EXPECT_TRUE(wgml::llm::payload_without_constants(alone, ""));
  EXPECT_FALSE(wgml::llm::payload_without_constants(alone, drawn.constants_path));
  EXPECT_TRUE(wgml::llm::payload_without_constants(alone, (dir_ / "missing.safetensors").string()));
}

TEST_F(RandomWeights, RefusesAFileWithoutAnMlxProgram) {
  const std::string onnx = kSource + "/tests/fixtures/onnx-encoder/bert_tiny_ort_optimised.onnx";
  EXPECT_FALSE(wgml::llm::payload_without_constants(onnx, ""));
  try {
    wgml::llm::write_random_weights_model(onnx, dir_.string(), 0, 1);
    FAIL() << "random weights were drawn for an ONNX model";
  } catch (const wgml::Error& e) {
    EXPECT_EQ(e.code(), wgml::ErrorCode::Unsupported);
    EXPECT_NE(std::string(e.what()).find("bert_tiny_ort_optimised.onnx: random weights are drawn for an MLX delegate program"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(wgml::llm::write_random_weights_model(dir_.string() + "/missing.pte", dir_.string(), 0, 1), wgml::Error);
}

}  // namespace
