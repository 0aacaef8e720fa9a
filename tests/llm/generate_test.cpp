// LLMs exported by ExecuTorch's MLX LLM path (tests/fixtures/llm, made by tools/llm/make_fixtures.py)
// generate the greedy tokens of Hugging Face transformers. The judge ran in float32 with the
// program's own weights (bf16 widened, 4-bit dequantised), so fp32 programs must match every token;
// bf16 and 4-bit programs compute in lower precision, so their tokens must match until the first
// step where the judge's top two logits were nearly tied (the test reports where that was).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/elements.h"
#include "io/npy.h"
#include "wgml/generator.h"
#include "wgml/tokenizer.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kFixtures = fs::path(WGML_SOURCE_DIR) / "tests/fixtures/llm";
// A top-1 minus top-2 logit gap below this is a near-tie a bf16 or 4-bit program may resolve
// either way: their logits lie within about 0.3 of the judge's.
constexpr double kNearTie = 0.6;

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(kFixtures))
    if (fs::exists(entry.path() / "model.pte")) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

json read_json(const fs::path& path) {
  std::ifstream in(path);
  return json::parse(in);
}

bool exact_precision(const std::string& name) { return name.find("fp32") != std::string::npos; }

// The model at `path` on `device`, or nothing (with the reason) where the machine has no WebGPU.
std::optional<wgml::Session> open_model(const fs::path& path, const std::string& device, bool profile, std::string& why_not) {
  wgml::SessionOptions options;
  options.device = device;
  options.profile = profile;
  try {
    return wgml::Session(path.string(), options);
  } catch (const std::exception& e) {
    if (device == "cpu") throw;
    why_not = e.what();
    return std::nullopt;
  }
}

// An ExecuTorch fixture, profiled on the GPU.
std::optional<wgml::Session> open_session(const std::string& name, const std::string& device, std::string& why_not) {
  return open_model(kFixtures / name / "model.pte", device, device == "webgpu", why_not);
}

struct Case {
  std::string name;
  std::string device;
};

class GenerateFixture : public ::testing::TestWithParam<Case> {};

// The prompt's text through the model's tokenizer gives the judge's ids; greedy generation gives
// its tokens (fp32 all 64, lower precision up to its first near-tie); the streamed text is the
// decoded tokens.
TEST_P(GenerateFixture, GreedyTokensMatchTransformers) {
  const auto& [name, device] = GetParam();
  std::string why_not;
  auto session = open_session(name, device, why_not);
  if (!session) GTEST_SKIP() << "no WebGPU device: " << why_not;
  const json reference = read_json(kFixtures / name / "reference.json");
  const wgml::Tokenizer tokenizer = wgml::Tokenizer::load((kFixtures / name).string());
  const auto prompt = tokenizer.encode(reference.at("prompt").get<std::string>(), tokenizer.adds_bos());
  ASSERT_EQ(prompt, reference.at("prompt_ids").get<std::vector<int64_t>>());

  wgml::Generator generator(*session);
  const auto want = reference.at("tokens").get<std::vector<int64_t>>();
  const auto margins = reference.at("margins").get<std::vector<double>>();
  wgml::GenerationOptions options;
  options.max_new_tokens = static_cast<int64_t>(want.size());
  const auto got = generator.generate(prompt, options);
  ASSERT_EQ(got.size(), want.size());
  size_t compared = 0;
  for (; compared < want.size(); ++compared) {
    if (!exact_precision(name) && margins[compared] < kNearTie) break;
    ASSERT_EQ(got[compared], want[compared])
        << name << " on " << device << ": token " << compared << " (judge margin " << margins[compared] << ")";
  }
  if (compared < want.size())
    std::cout << name << " on " << device << ": tokens equal up to the near-tie at step " << compared << " (margin "
              << margins[compared] << ")\n";

  if (device == "webgpu") {
    for (const wgml::OpProfile& p : session->profile())
      EXPECT_NE(p.device, "cpu") << name << ": " << p.op << " ran on the CPU: " << p.note;
  }
}

// Fed the judge's tokens one by one (so a near-tie cannot send generation elsewhere), the program's
// argmax is the judge's token at every step but near-ties, which are counted and reported.
TEST_P(GenerateFixture, ArgmaxFollowsTheJudgeExceptAtNearTies) {
  const auto& [name, device] = GetParam();
  std::string why_not;
  auto session = open_session(name, device, why_not);
  if (!session) GTEST_SKIP() << "no WebGPU device: " << why_not;
  const json reference = read_json(kFixtures / name / "reference.json");
  const auto prompt = reference.at("prompt_ids").get<std::vector<int64_t>>();
  const auto want = reference.at("tokens").get<std::vector<int64_t>>();
  const auto margins = reference.at("margins").get<std::vector<double>>();
  wgml::Generator generator(*session);
  std::vector<float> logits = generator.forward(prompt);
  int near_ties_resolved_otherwise = 0;
  for (size_t step = 0; step < want.size(); ++step) {
    const int64_t argmax = std::max_element(logits.begin(), logits.end()) - logits.begin();
    if (argmax != want[step]) {
      ASSERT_LT(margins[step], exact_precision(name) ? 1e-4 : kNearTie)
          << name << " on " << device << ": step " << step << " gives token " << argmax << ", the judge " << want[step];
      ++near_ties_resolved_otherwise;
    }
    logits = generator.forward(std::span<const int64_t>(&want[step], 1));
  }
  std::cout << name << " on " << device << ": " << near_ties_resolved_otherwise << " of " << want.size()
            << " steps were near-ties resolved the other way\n";
}

// One prefill call, then a 1-token decode step (below the token count torch.export recorded as the
// minimum): the decode logits are the judge's.
TEST_P(GenerateFixture, OneTokenDecodeStepGivesTheJudgesLogits) {
  const auto& [name, device] = GetParam();
  std::string why_not;
  auto session = open_session(name, device, why_not);
  if (!session) GTEST_SKIP() << "no WebGPU device: " << why_not;
  const fs::path dir = kFixtures / name;
  const auto read = [&](const char* file) { return wgml::io::read_npy((dir / file).string()); };
  session->run({read("prefill_input_ids.npy"), read("prefill_cache_position.npy")});
  const auto outputs = session->run({read("decode_input_ids.npy"), read("decode_cache_position.npy")});
  ASSERT_EQ(outputs.size(), 1u) << "the method's one output: logits";
  const wgml::Tensor& logits = std::get<wgml::Tensor>(outputs[0]);
  const wgml::Tensor want = read("decode_expected_logits.npy");
  ASSERT_EQ(logits.numel(), want.numel());
  const wgml::Tensor got = logits.flat_range(0, logits.numel());
  // fp32 within float rounding of the judge; lower precision within a few bf16 steps of the logits' range.
  const double tolerance = exact_precision(name) ? 1e-4 : 0.5;
  for (int64_t i = 0; i < want.numel(); ++i) {
    ASSERT_NEAR(wgml::load_as_double(got.dtype(), got.data(), i), want.data_as<float>()[i], tolerance)
        << name << " on " << device << ": logit " << i;
  }
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const std::string& name : model_names())
    for (const char* device : {"cpu", "webgpu"}) out.push_back({name, device});
  return out;
}

INSTANTIATE_TEST_SUITE_P(ExecuTorchLlmExports, GenerateFixture, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string id = info.param.name + "_" + info.param.device;
                           std::replace(id.begin(), id.end(), '-', '_');
                           return id;
                         });

// After its first steps, a decode step on the GPU compiles nothing and submits once: the program's
// positions and shape arithmetic (ItemInt of cache_position, the cache slices' bounds) are computed
// on the host, so nothing waits for the GPU before the logits are read. It makes no buffer and no
// bind group either: the pool lends each request the buffer it had at the previous step, so the
// recorder's bind groups are found, not made (making them was a third of a step's host time). 72
// steps take the keys past two of attention's chunk boundaries (32 keys a chunk here): its scratch
// is sized for the most chunks, and kernels bind whole buffers, so growing keys make no bind group.
TEST(GenerateLoop, SteadyDecodeStepsCompileNothingAndSubmitOnce) {
  std::string why_not;
  auto session = open_session("tiny-llama-fp32", "webgpu", why_not);
  if (!session) GTEST_SKIP() << "no WebGPU device: " << why_not;
  wgml::Generator generator(*session);
  std::vector<int64_t> token = {1, 2, 3, 4};
  generator.forward(token);
  for (int step = 0; step < 72; ++step) {
    generator.forward(std::span<const int64_t>(token.data(), 1));
    const wgml::RunStats stats = session->last_run_stats();
    // Read each step's GPU times, as a profiling user would: the profiler's readback buffers are
    // then free for the next step's.
    for (const wgml::OpProfile& p : session->profile()) EXPECT_NE(p.device, "cpu") << p.op << ": " << p.note;
    if (step < 8) continue;
    EXPECT_EQ(stats.pipelines_compiled, 0u) << "step " << step;
    EXPECT_EQ(stats.buffers_created, 0u) << "step " << step;
    EXPECT_EQ(stats.bind_groups_created, 0u) << "step " << step;
    EXPECT_EQ(stats.submits, 1u) << "step " << step;
  }
}

// Greedy generation one step ahead settles as single steps do: after its first steps (the first is
// fed a token from the host, which shifts the buffers the pool lends once), a step compiles no
// pipeline and makes no buffer or bind group (a few token buffers alternate), submits twice (the
// step, then its token's pick and readback copy) and reads back 4 bytes.
TEST(GenerateLoop, SteadyGreedyGenerationAheadMakesNothingAndReadsOnlyTokens) {
  std::string why_not;
  auto session = open_model(kFixtures / "tiny-llama-fp32" / "model.pte", "webgpu", false, why_not);
  if (!session) GTEST_SKIP() << "no WebGPU device: " << why_not;
  wgml::Generator generator(*session);
  constexpr int kSettled = 8, kTokens = 48;
  wgml::RunStats settled;
  int tokens = 0;
  generator.generate(std::vector<int64_t>{1, 2, 3, 4}, {.max_new_tokens = kTokens}, [&](int64_t) {
    if (++tokens == kSettled) settled = session->totals();
    return true;
  });
  ASSERT_EQ(tokens, kTokens);
  // kTokens - 1 decode steps in all, kSettled of them launched when the kSettled-th token was read
  // (its own step is recorded before it is read).
  const uint64_t steps = kTokens - 1 - kSettled;
  EXPECT_EQ(generator.stats().decode_steps, kTokens - 1);
  const wgml::RunStats after = session->totals() - settled;
  EXPECT_EQ(after.pipelines_compiled, 0u);
  EXPECT_EQ(after.buffers_created, 0u);
  EXPECT_EQ(after.bind_groups_created, 0u);
  EXPECT_EQ(after.submits, 2u * steps);
  EXPECT_EQ(after.bytes_read, 4u * steps);
}

// Temps go back to the GPU buffer pool at their last use and serve the next temps (runtime/
// release_plan.h, gpu/buffer_pool.h): after warm-up, every step of a 64-step decode ends holding
// the same number of buffers. The attention rows grow with the KV length, so a step creates a
// buffer only when a row outgrows every free one (a size class never needed before: a new high of
// the device bytes), a few times in 56 steps; every other step is served from the pool.
TEST(GenerateLoop, SteadyDecodeHoldsAConstantNumberOfBuffers) {
  std::string why_not;
  auto session = open_model(kFixtures / "tiny-llama-fp32" / "model.pte", "webgpu", false, why_not);
  if (!session) GTEST_SKIP() << "no WebGPU device: " << why_not;
  wgml::Generator generator(*session);
  std::vector<int64_t> token = {1, 2, 3, 4};
  generator.forward(token);
  constexpr int kWarmUp = 8;
  wgml::RunStats settled;
  uint64_t highest = 0;
  int steps_creating = 0;
  for (int step = 0; step < 64; ++step) {
    generator.forward(std::span<const int64_t>(token.data(), 1));
    const wgml::RunStats& stats = session->last_run_stats();
    if (step < kWarmUp) {
      highest = std::max(highest, stats.peak_device_bytes);
      continue;
    }
    if (step == kWarmUp) settled = stats;
    EXPECT_EQ(stats.device_buffers_in_use, settled.device_buffers_in_use) << "step " << step;
    if (stats.buffers_created > 0) {
      ++steps_creating;
      EXPECT_GT(stats.peak_device_bytes, highest) << "step " << step << " created buffers for sizes seen before";
    }
    highest = std::max(highest, stats.peak_device_bytes);
  }
  EXPECT_LE(steps_creating, 8);
  EXPECT_GT(settled.device_buffers_in_use, 0u);
}

// Greedy generation picks each token where its logits are and feeds it to the next step before the
// host reads it (Generator's decode_greedy): the tokens are those of stepping one token at a time
// and sampling on the host; on the GPU a step reads back its 4-byte token alone, never a logits row.
void expect_ahead_gives_the_tokens_of_stepping(wgml::Generator& generator, const std::string& device) {
  const std::vector<int64_t> prompt = {1, 17, 4, 9};
  const std::vector<int64_t> ahead = generator.generate(prompt, {.max_new_tokens = 12});
  const wgml::GenerationStats stats = generator.stats();
  EXPECT_EQ(stats.decode_steps, 11);
  EXPECT_EQ(generator.position(), static_cast<int64_t>(prompt.size()) + 11);
  if (device == "webgpu") {
    EXPECT_EQ(stats.decode_totals.bytes_read, 4u * 11u) << "a step read more than its token back";
  }

  generator.reset();
  std::vector<int64_t> stepped;
  wgml::Sampler greedy({});
  std::vector<float> logits = generator.forward(prompt);
  for (int i = 0; i < 12; ++i) {
    stepped.push_back(greedy.next(logits));
    if (i < 11) logits = generator.forward(std::span<const int64_t>(&stepped.back(), 1));
  }
  EXPECT_EQ(ahead, stepped);
}

// The step fed a stop token (or a token the callback refuses) was already recorded when the token
// was read: it is undone, so the position counts only the tokens fed, and generation resumed from
// the stop token gives what an unbroken run gives. (An ONNX decoder's cache also goes back to the
// presents before that step; the builder's GroupQueryAttention writes each token at the position
// its attention mask gives, so these fixtures' tokens would not show a stale entry left there.)
void expect_a_stop_to_undo_the_step_ahead(wgml::Generator& generator) {
  const std::vector<int64_t> prompt = {3, 8, 1};
  const std::vector<int64_t> unbroken = generator.generate(prompt, {.max_new_tokens = 9});
  ASSERT_EQ(unbroken.size(), 9u);

  generator.reset();
  wgml::GenerationOptions stop_at_fourth{.max_new_tokens = 9};
  stop_at_fourth.stop_tokens = {unbroken[3]};
  const std::vector<int64_t> first = generator.generate(prompt, stop_at_fourth);
  const auto stop = std::find(unbroken.begin(), unbroken.end(), unbroken[3]);
  ASSERT_EQ(first, std::vector<int64_t>(unbroken.begin(), stop + 1));
  EXPECT_EQ(generator.stats().stop_reason, wgml::StopReason::StopToken);
  EXPECT_EQ(generator.position(), static_cast<int64_t>(prompt.size() + first.size()) - 1);
  const size_t made = first.size();
  const std::vector<int64_t> rest =
      generator.generate(std::span<const int64_t>(&first.back(), 1), {.max_new_tokens = static_cast<int64_t>(9 - made)});
  EXPECT_EQ(rest, std::vector<int64_t>(unbroken.begin() + static_cast<std::ptrdiff_t>(made), unbroken.end()));

  generator.reset();
  int calls = 0;
  const std::vector<int64_t> refused = generator.generate(prompt, {.max_new_tokens = 9}, [&](int64_t) { return ++calls < 2; });
  EXPECT_EQ(refused, std::vector<int64_t>(unbroken.begin(), unbroken.begin() + 2));
  EXPECT_EQ(generator.stats().stop_reason, wgml::StopReason::Callback);
  EXPECT_EQ(generator.position(), static_cast<int64_t>(prompt.size()) + 1);

  // A callback that throws (a cancelled request) leaves what one that refuses leaves.
  generator.reset();
  int seen = 0;
  const auto cancel_second = [&](int64_t) {
    if (++seen == 2) throw std::runtime_error("cancelled");
    return true;
  };
  EXPECT_THROW(generator.generate(prompt, {.max_new_tokens = 9}, cancel_second), std::runtime_error);
  EXPECT_EQ(generator.position(), static_cast<int64_t>(prompt.size()) + 1);
}

TEST_P(GenerateFixture, GreedyGenerationAheadGivesTheTokensOfOneStepAtATime) {
  std::string why_not;
  auto session = open_session(GetParam().name, GetParam().device, why_not);
  if (!session) GTEST_SKIP() << "no WebGPU device: " << why_not;
  wgml::Generator generator(*session);
  expect_ahead_gives_the_tokens_of_stepping(generator, GetParam().device);
}

TEST_P(GenerateFixture, AStopUndoesTheStepAlreadyFedAndGenerationResumesUnchanged) {
  std::string why_not;
  auto session = open_session(GetParam().name, GetParam().device, why_not);
  if (!session) GTEST_SKIP() << "no WebGPU device: " << why_not;
  wgml::Generator generator(*session);
  expect_a_stop_to_undo_the_step_ahead(generator);
}

// The same on an ONNX decoder of onnxruntime-genai's builder, whose KV cache is its inputs and
// outputs (tests/fixtures/onnx-llm, tools/onnx/make_llm_decoders.py).
class OnnxDecoderAhead : public ::testing::TestWithParam<std::string> {
 protected:
  const fs::path model = fs::path(WGML_SOURCE_DIR) / "tests/fixtures/onnx-llm/llama_int4/model.onnx";
  std::optional<wgml::Session> open(std::string& why_not) { return open_model(model, GetParam(), false, why_not); }
};

TEST_P(OnnxDecoderAhead, GreedyGenerationAheadGivesTheTokensOfOneStepAtATime) {
  std::string why_not;
  auto session = open(why_not);
  if (!session) GTEST_SKIP() << "no WebGPU device: " << why_not;
  wgml::Generator generator(*session, wgml::read_genai_config(model.string()));
  expect_ahead_gives_the_tokens_of_stepping(generator, GetParam());
}

TEST_P(OnnxDecoderAhead, AStopUndoesTheStepAlreadyFedAndGenerationResumesUnchanged) {
  std::string why_not;
  auto session = open(why_not);
  if (!session) GTEST_SKIP() << "no WebGPU device: " << why_not;
  wgml::Generator generator(*session, wgml::read_genai_config(model.string()));
  expect_a_stop_to_undo_the_step_ahead(generator);
}

INSTANTIATE_TEST_SUITE_P(OnnxLlmDecoders, OnnxDecoderAhead, ::testing::Values("cpu", "webgpu"));

}  // namespace
