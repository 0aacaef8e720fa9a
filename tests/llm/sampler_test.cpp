// Sampling: greedy is the first argmax, filters keep what they promise, a seed repeats a draw.
#include <gtest/gtest.h>

#include <map>

#include "wgml/error.h"
#include "wgml/generator.h"

namespace {

const std::vector<float> kLogits = {0.5f, 3.0f, -1.0f, 3.0f, 2.5f, 0.0f};

TEST(Sampler, GreedyTakesTheFirstOfEqualMaxima) {
  wgml::Sampler sampler(wgml::SamplingOptions{});
  EXPECT_EQ(sampler.next(kLogits), 1);
}

TEST(Sampler, TopKOfOneIsGreedyAtAnyTemperature) {
  wgml::Sampler sampler({.temperature = 5.0f, .top_k = 1, .top_p = 1.0f, .seed = 3});
  for (int i = 0; i < 50; ++i) EXPECT_EQ(sampler.next(kLogits), 1);
}

TEST(Sampler, TopKKeepsOnlyTheKLikeliest) {
  wgml::Sampler sampler({.temperature = 10.0f, .top_k = 3, .top_p = 1.0f, .seed = 1});
  std::map<int64_t, int> seen;
  for (int i = 0; i < 2000; ++i) ++seen[sampler.next(kLogits)];
  EXPECT_EQ(seen.size(), 3u);
  for (int64_t token : {1, 3, 4}) EXPECT_GT(seen[token], 400) << token;
}

// Probabilities at temperature 1: tokens 1 and 3 hold about 0.33 each, token 4 about 0.2; a top_p
// of 0.6 keeps tokens 1 and 3 only.
TEST(Sampler, TopPKeepsTheSmallestSetReachingTheMass) {
  wgml::Sampler sampler({.temperature = 1.0f, .top_k = 0, .top_p = 0.6f, .seed = 9});
  std::map<int64_t, int> seen;
  for (int i = 0; i < 2000; ++i) ++seen[sampler.next(kLogits)];
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_NEAR(seen[1] / 2000.0, 0.5, 0.05);
}

TEST(Sampler, FrequenciesFollowTheSoftmax) {
  wgml::Sampler sampler({.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .seed = 5});
  const std::vector<float> logits = {0.0f, std::log(3.0f)};  // probabilities 1/4 and 3/4
  int ones = 0;
  for (int i = 0; i < 4000; ++i) ones += sampler.next(logits) == 1;
  EXPECT_NEAR(ones / 4000.0, 0.75, 0.03);
}

TEST(Sampler, TheSameSeedDrawsTheSameTokens) {
  wgml::Sampler a({.temperature = 2.0f, .top_k = 0, .top_p = 1.0f, .seed = 42});
  wgml::Sampler b({.temperature = 2.0f, .top_k = 0, .top_p = 1.0f, .seed = 42});
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next(kLogits), b.next(kLogits));
}

TEST(Sampler, InvalidOptionsAreTypedErrors) {
  EXPECT_THROW(wgml::Sampler({.temperature = -1.0f, .top_k = 0, .top_p = 1.0f, .seed = 0}), wgml::Error);
  EXPECT_THROW(wgml::Sampler({.temperature = 1.0f, .top_k = 0, .top_p = 0.0f, .seed = 0}), wgml::Error);
  wgml::Sampler sampler(wgml::SamplingOptions{});
  EXPECT_THROW(sampler.next({}), wgml::Error);
}

}  // namespace
