// `wgml bench`'s sizes, statistics and passes (src/llm/llm_bench.h) on the tiny-llama-fp32 fixture
// (a context of 128 positions, calls of up to 128 tokens, vocab 512) on the CPU reference.
#include "llm/llm_bench.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "wgml/error.h"

namespace {

using wgml::llm::BenchSizes;
using wgml::llm::fit_to_context;

const std::string kModel = std::string(WGML_SOURCE_DIR) + "/tests/fixtures/llm/tiny-llama-fp32/model.pte";

void expect_sizes(const BenchSizes& got, int64_t prompt, int64_t generate) {
  EXPECT_EQ(got.prompt, prompt);
  EXPECT_EQ(got.generate, generate);
}

TEST(FitToContext, KeepsSizesThatFitOrAnUnknownContext) {
  expect_sizes(fit_to_context({512, 128}, 2048), 512, 128);
  expect_sizes(fit_to_context({64, 64}, 128), 64, 64);  // exactly the context
  expect_sizes(fit_to_context({512, 128}, 0), 512, 128);
}

TEST(FitToContext, ClampsToHalfAndQuarterOfTheContext) {
  expect_sizes(fit_to_context({512, 128}, 128), 64, 32);  // the defaults on the fixture
  expect_sizes(fit_to_context({65, 64}, 128), 64, 32);    // one position too many
  expect_sizes(fit_to_context({100, 5}, 64), 32, 5);      // a size already within its share stays
  expect_sizes(fit_to_context({5, 100}, 64), 5, 16);
  expect_sizes(fit_to_context({10, 10}, 3), 1, 1);  // a quarter of 3 is no step: one is kept
  expect_sizes(fit_to_context({10, 10}, 2), 1, 1);
}

TEST(FitToContext, ClampedSizesAlwaysFit) {
  for (int64_t context = 2; context <= 300; ++context)
    for (int64_t prompt : {1, 7, 64, 512})
      for (int64_t generate : {1, 3, 128}) {
        const BenchSizes fit = fit_to_context({prompt, generate}, context);
        EXPECT_GE(fit.prompt, 1);
        EXPECT_GE(fit.generate, 1);
        EXPECT_LE(fit.prompt, prompt);
        EXPECT_LE(fit.generate, generate);
        EXPECT_LE(fit.prompt + fit.generate, context) << prompt << " + " << generate << " in " << context;
      }
}

TEST(FitToContext, RefusesEmptySizesAndAContextWithoutRoom) {
  EXPECT_THROW(fit_to_context({0, 128}, 128), wgml::Error);
  EXPECT_THROW(fit_to_context({512, -1}, 0), wgml::Error);
  try {
    fit_to_context({4, 4}, 1);
    FAIL() << "a context of 1 position was accepted";
  } catch (const wgml::Error& e) {
    EXPECT_EQ(e.code(), wgml::ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("context of 1 positions"), std::string::npos) << e.what();
  }
}

TEST(SpreadOf, MeanMedianAndSampleStdev) {
  const wgml::llm::Spread s = wgml::llm::spread_of({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_NEAR(s.stdev, std::sqrt(5.0 / 3.0), 1e-12);
  const wgml::llm::Spread one = wgml::llm::spread_of({7});
  EXPECT_DOUBLE_EQ(one.median, 7);
  EXPECT_DOUBLE_EQ(one.stdev, 0);
}

TEST(RunBench, FeedsThePromptInChunksThenOneTokenPerStep) {
  wgml::Session session(kModel);
  wgml::Generator generator(session);
  ASSERT_EQ(generator.max_context(), 128);
  const wgml::llm::BenchResult result = wgml::llm::run_bench(generator, {{10, 4}, 3, 2, 7});
  EXPECT_EQ(result.prompt_chunk, 3);
  EXPECT_EQ(result.prefill_calls, 4);
  ASSERT_EQ(result.passes.size(), 2u);
  for (const wgml::llm::BenchPass& pass : {result.warmup, result.passes[0], result.passes[1]}) {
    EXPECT_GT(pass.prompt_ms, 0);
    ASSERT_EQ(pass.step_ms.size(), 4u);
    for (double ms : pass.step_ms) EXPECT_GT(ms, 0);
  }
  EXPECT_EQ(generator.position(), 14);  // the last pass: 10 prompt tokens, then 4 steps
}

TEST(RunBench, DefaultChunkIsTheProgramsLargestCall) {
  wgml::Session session(kModel);
  wgml::Generator generator(session);
  const wgml::llm::BenchResult result = wgml::llm::run_bench(generator, {{100, 2}, 0, 1, 0});
  EXPECT_EQ(result.prompt_chunk, 100);  // the whole prompt: the program takes 128 tokens a call
  EXPECT_EQ(result.prefill_calls, 1);
}

TEST(RunBench, RefusesSizesPastTheContextAndChunksPastTheLargestCall) {
  wgml::Session session(kModel);
  wgml::Generator generator(session);
  EXPECT_THROW(wgml::llm::run_bench(generator, {{100, 29}, 0, 1, 0}), wgml::Error);
  try {
    wgml::llm::run_bench(generator, {{8, 2}, 129, 1, 0});
    FAIL() << "a prompt chunk of 129 tokens was accepted";
  } catch (const wgml::Error& e) {
    EXPECT_EQ(e.code(), wgml::ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("largest call, 128 tokens"), std::string::npos) << e.what();
  }
  EXPECT_THROW(wgml::llm::run_bench(generator, {{8, 2}, 0, 0, 0}), wgml::Error);
}

}  // namespace
