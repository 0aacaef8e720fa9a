// End-to-end: real ExecuTorch MLX-delegate exports (tools/fixtures/export_pte_fixtures.py) load,
// report what ExecuTorch's own deserializer saw, and reproduce torch's outputs on the CPU backend.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/elements.h"
#include "frontend/load_model.h"
#include "frontend/summary.h"
#include "io/npy.h"
#include "support/webgpu_session.h"
#include "wgml/session.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kFixtures = fs::path(WGML_SOURCE_DIR) / "tests/fixtures/pte";

std::vector<std::string> fixture_names() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(kFixtures))
    if (fs::exists(entry.path() / "manifest.json") && fs::exists(entry.path() / "step0_input_0.npy"))
      names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

json manifest(const std::string& name) {
  std::ifstream in(kFixtures / name / "manifest.json");
  return json::parse(in);
}

void expect_close(const wgml::Tensor& got, const wgml::Tensor& want, double rtol, double atol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  int reported = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = wgml::load_as_double(got.dtype(), got.data(), i);
    const double w = wgml::load_as_double(want.dtype(), want.data(), i);
    if (!(std::fabs(g - w) <= atol + rtol * std::fabs(w)) && reported++ < 5)
      ADD_FAILURE() << what << " element " << i << ": got " << g << ", expected " << w;
  }
}

class PteFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(PteFixture, InspectMatchesExecuTorchsDecoding) {
  const json m = manifest(GetParam());
  const json& facts = m["inspect"];
  const auto model = wgml::frontend::load_model((kFixtures / GetParam() / "model.pte").string());
  const auto s = wgml::frontend::summarize(model);
  EXPECT_EQ(s.version, facts["version"]);
  EXPECT_EQ(s.slot_counts.at("constants"), facts["num_constant_tensors"]);
  EXPECT_EQ(s.slot_counts.at("inputs"), facts["num_input_tensors"]);
  EXPECT_EQ(s.slot_counts.at("outputs"), facts["num_output_tensors"]);
  EXPECT_EQ(s.slot_counts.at("mutable_buffers"), facts["num_mutable_buffer_tensors"]);
  EXPECT_EQ(s.slot_counts.at("temps"), facts["num_temp_tensors"]);
  EXPECT_EQ(s.slot_counts.at("values"), facts["num_values"]);
  EXPECT_EQ(s.constant_bytes, facts["named_data_total_bytes"]);
  ASSERT_EQ(s.chains.size(), facts["chains"].size());
  for (size_t c = 0; c < s.chains.size(); ++c) {
    EXPECT_EQ(s.chains[c].instructions, facts["chains"][c]["num_instructions"]);
    EXPECT_EQ(json(s.chains[c].node_histogram), facts["chains"][c]["node_histogram"]);
  }
  EXPECT_EQ(s.inputs.size(), m["inputs"].size());
  EXPECT_EQ(s.outputs.size(), m["outputs"].size());
  for (size_t i = 0; i < s.inputs.size(); ++i) EXPECT_EQ(s.inputs[i].dtype, m["inputs"][i]["dtype"]);
}

// Runs every recorded step of fixture `name` on `session` and compares with torch's outputs.
void expect_reproduces_torch(const std::string& name, wgml::Session& session) {
  const json m = manifest(name);
  const fs::path dir = kFixtures / name;
  const double rtol = m["tolerance"]["rtol"], atol = m["tolerance"]["atol"];
  for (int step = 0; step < m["steps"].get<int>(); ++step) {
    std::vector<wgml::Value> inputs;
    for (size_t i = 0; i < m["inputs"].size(); ++i) {
      const auto dtype = wgml::dtype_from_name(m["inputs"][i]["dtype"].get<std::string>());
      inputs.push_back(
          wgml::io::read_npy((dir / ("step" + std::to_string(step) + "_input_" + std::to_string(i) + ".npy")).string(), dtype));
    }
    const auto outputs = session.run(inputs);
    ASSERT_EQ(outputs.size(), m["outputs"].size());
    for (size_t j = 0; j < outputs.size(); ++j) {
      const auto dtype = wgml::dtype_from_name(m["outputs"][j]["dtype"].get<std::string>());
      const auto want =
          wgml::io::read_npy((dir / ("step" + std::to_string(step) + "_expected_" + std::to_string(j) + ".npy")).string(), dtype);
      expect_close(std::get<wgml::Tensor>(outputs[j]), want, rtol, atol,
                   name + " step " + std::to_string(step) + " output " + std::to_string(j));
    }
  }
}

// A session on the WebGPU backend, or nullopt with the reason where the machine has none.
std::optional<wgml::Session> webgpu_session(const std::string& name, std::string& why_not, bool profile = false) {
  wgml::SessionOptions options;
  options.profile = profile;
  return wgml::testing::open_webgpu_session((kFixtures / name / "model.pte").string(), why_not, options);
}

TEST_P(PteFixture, CpuReproducesTorchOutputsStepByStep) {
  wgml::Session session((kFixtures / GetParam() / "model.pte").string());
  expect_reproduces_torch(GetParam(), session);
}

// Nodes without GPU kernels run through the CPU fallback, reading GPU results back as needed.
TEST_P(PteFixture, WebGpuReproducesTorchOutputsStepByStep) {
  std::string why_not;
  auto session = webgpu_session(GetParam(), why_not);
  if (!session) GTEST_SKIP() << "no WebGPU device: " << why_not;
  expect_reproduces_torch(GetParam(), *session);
}

INSTANTIATE_TEST_SUITE_P(RealExports, PteFixture, ::testing::ValuesIn(fixture_names()),
                         [](const auto& info) { return info.param; });

// Exports made only of nodes with GPU kernels: none may fall back to the CPU (the README's
// example is attention_block).
class PteFixtureOnTheGpu : public ::testing::TestWithParam<std::string> {};

TEST_P(PteFixtureOnTheGpu, RunsEntirelyOnTheGpu) {
  std::string why_not;
  auto session = webgpu_session(GetParam(), why_not);
  if (!session) GTEST_SKIP() << "no WebGPU device: " << why_not;
  expect_reproduces_torch(GetParam(), *session);
  for (const wgml::OpProfile& p : session->profile())
    if (p.device == "cpu") ADD_FAILURE() << p.op << " ran on the CPU: " << p.note;
}

INSTANTIATE_TEST_SUITE_P(RealExports, PteFixtureOnTheGpu,
                         ::testing::Values("elementwise_layout", "attention_block", "linear_act", "linear_bf16", "kv_cache",
                                           "dynamic_seq", "quantized_linear"),
                         [](const auto& info) { return info.param; });

// Random float32 values in [-1, 1) from a fixed seed.
wgml::Tensor random_tensor(wgml::Shape shape, uint32_t seed) {
  wgml::Tensor t(wgml::DType::Float32, std::move(shape));
  auto* values = t.mutable_data_as<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    seed = seed * 1664525u + 1013904223u;
    values[i] = static_cast<float>(seed >> 8) / static_cast<float>(1u << 23) - 1.0f;
  }
  return t;
}

// The inputs of one kv_cache decode step: `tokens` new tokens written at `position`.
std::vector<wgml::Value> kv_cache_step(int64_t tokens, int64_t position, uint32_t seed) {
  wgml::Tensor positions(wgml::DType::Int64, {tokens});
  for (int64_t i = 0; i < tokens; ++i) positions.mutable_data_as<int64_t>()[i] = position + i;
  return {random_tensor({1, 4, tokens, 8}, seed), random_tensor({1, 2, tokens, 8}, seed + 1),
          random_tensor({1, 2, tokens, 8}, seed + 2), positions};
}

// A decode loop whose position grows and whose token count changes every step: after the first
// two steps (one per shape class), no step may render a kernel or compile a pipeline: shapes,
// positions and counts travel in uniforms. Every step matches the CPU reference.
TEST(PteFixtures, KvCacheDecodeLoopCompilesNothingAfterTwoSteps) {
  std::string why_not;
  auto gpu = webgpu_session("kv_cache", why_not, /*profile=*/true);
  if (!gpu) GTEST_SKIP() << "no WebGPU device: " << why_not;
  wgml::Session cpu((kFixtures / "kv_cache" / "model.pte").string());
  for (int step = 0; step < 64; ++step) {
    const int64_t tokens = 2 + step % 2;
    const std::vector<wgml::Value> inputs = kv_cache_step(tokens, (step * 3) % (16 - tokens), 7u * static_cast<uint32_t>(step));
    const auto want = cpu.run(inputs);
    const auto got = gpu->run(inputs);
    const std::string what = "kv_cache decode step " + std::to_string(step);
    for (size_t j = 0; j < got.size(); ++j)
      expect_close(std::get<wgml::Tensor>(got[j]), std::get<wgml::Tensor>(want[j]), 1e-5, 1e-5,
                   what + " output " + std::to_string(j));
    const wgml::RunStats& stats = gpu->last_run_stats();
    if (step < 2) continue;
    EXPECT_EQ(stats.kernels_rendered, 0u) << what;
    EXPECT_EQ(stats.pipelines_compiled, 0u) << what;
  }
  // The cache writes and the attention ran on the GPU every step; the attention read the caches in
  // place (runtime/fusion.h), so no Slice copied them.
  std::map<std::string, uint64_t> gpu_calls;
  for (const wgml::OpProfile& p : gpu->profile())
    if (p.device == "webgpu") gpu_calls[p.op] += p.calls;
  for (const char* op : {"IndexCopy.write", "SliceUpdate.write", "Sdpa.chunks", "Sdpa.combine"})
    EXPECT_GE(gpu_calls[op], 64u) << op;
  EXPECT_EQ(gpu_calls["Slice"], 0u);
}

// Session::reset() empties the KV cache: the recorded steps, replayed on the same session, give
// torch's outputs again (without it, step 0 gives other outputs: the cache still holds what steps 1
// and 2 wrote).
TEST(PteFixtures, ResetReplaysTheRecordedStepsFromAnEmptyCache) {
  std::vector<wgml::Session> sessions;
  sessions.emplace_back((kFixtures / "kv_cache" / "model.pte").string());
  std::string why_not;
  if (auto gpu = webgpu_session("kv_cache", why_not)) sessions.push_back(std::move(*gpu));
  for (wgml::Session& session : sessions) {
    expect_reproduces_torch("kv_cache", session);
    session.reset();
    expect_reproduces_torch("kv_cache", session);
  }
}

// The rows [first, first + count) of axis 2 of a [1, H, S, D] float tensor.
wgml::Tensor token_rows(const wgml::Tensor& t, int64_t first, int64_t count) {
  const int64_t heads = t.dim(1), tokens = t.dim(2), width = t.dim(3);
  wgml::Tensor out(wgml::DType::Float32, {1, heads, count, width});
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t s = 0; s < count; ++s)
      for (int64_t d = 0; d < width; ++d)
        out.mutable_data_as<float>()[(h * count + s) * width + d] = t.data_as<float>()[(h * tokens + first + s) * width + d];
  return out;
}

// torch.export recorded a minimum of 2 tokens (its 0/1 specialisation); ExecuTorch's runner still
// decodes one token at a time, and so does wgml: two 1-token steps give what one 2-token step gives
// for its tokens (causal attention over the cache), on the CPU and on the GPU.
TEST(PteFixtures, OneTokenStepsBelowTheExportedMinimumMatchATwoTokenStep) {
  std::string why_not;
  std::vector<wgml::Session> sessions;
  sessions.emplace_back((kFixtures / "kv_cache" / "model.pte").string());
  if (auto gpu = webgpu_session("kv_cache", why_not)) sessions.push_back(std::move(*gpu));
  for (auto& session : sessions) {
    wgml::Session two((kFixtures / "kv_cache" / "model.pte").string());
    const std::vector<wgml::Value> pair = kv_cache_step(2, 5, 11);
    const auto want = two.run(pair);
    std::vector<wgml::Value> got;
    for (int64_t s = 0; s < 2; ++s) {
      std::vector<wgml::Value> step;
      for (int i = 0; i < 3; ++i) step.push_back(token_rows(std::get<wgml::Tensor>(pair[i]), s, 1));
      wgml::Tensor position(wgml::DType::Int64, {1});
      position.mutable_data_as<int64_t>()[0] = 5 + s;
      step.push_back(position);
      got = session.run(step);
    }
    const std::string what = session.device_description() + ": second 1-token step";
    expect_close(std::get<wgml::Tensor>(got[0]), token_rows(std::get<wgml::Tensor>(want[0]), 1, 1), 1e-5, 1e-6, what);
    expect_close(std::get<wgml::Tensor>(got[1]), std::get<wgml::Tensor>(want[1]), 1e-5, 1e-6, what + ", cache sum");
  }
}

// The upper bound of a dynamic dim is the program's capacity (ExecuTorch's resize fails past it).
TEST(PteFixtures, SizeAboveTheExportedMaximumIsAClearError) {
  wgml::Session session((kFixtures / "dynamic_seq" / "model.pte").string());
  try {
    session.run({random_tensor({1, 17, 16}, 3)});
    FAIL() << "expected an error";
  } catch (const wgml::Error& e) {
    EXPECT_EQ(e.code(), wgml::ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("input 0: dimension 1 is 17, expected at most 16"), std::string::npos) << e.what();
  }
}

TEST(PteFixtures, ProgramWithoutMlxDelegateIsRejected) {
  try {
    wgml::Session session((kFixtures / "no_mlx_delegate/model.pte").string());
    FAIL() << "expected an error";
  } catch (const wgml::Error& e) {
    EXPECT_EQ(e.code(), wgml::ErrorCode::Unsupported);
    EXPECT_NE(std::string(e.what()).find("MLXBackend"), std::string::npos);
  }
}

TEST(PteFixtures, StandalonePayloadWithSafetensorsMatchesPte) {
  const fs::path dir = kFixtures / "linear_act";
  wgml::Session pte((dir / "model.pte").string());
  wgml::Session payload((dir / "model.mlxg").string());
  const wgml::Tensor x = wgml::io::read_npy((dir / "step0_input_0.npy").string());
  const auto a = std::get<wgml::Tensor>(pte.run({x})[0]);
  const auto b = std::get<wgml::Tensor>(payload.run({x})[0]);
  expect_close(a, b, 0, 0, "payload vs pte");
}

}  // namespace
