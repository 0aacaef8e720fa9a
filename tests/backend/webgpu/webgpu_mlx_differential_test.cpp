// The MLX-differential cases (tests/support/mlx_cases.h), hand-written and random shapes and
// dtypes, on the WebGPU backend: every node's programs must match MLX and the CPU reference,
// whether the node runs on the GPU or through the CPU fallback; a node with a kernel spec, a
// decomposition or a composition of specs (UpdateAndAttend) must have run on the GPU at least once
// (a view: as a view), and the cases it runs
// on the CPU are exactly those listed, with why, in cpu_cases.tsv: a new fallback fails, and so
// does a listed case that now runs on the GPU (the list only shrinks).
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "backend/cpu/cpu_backend.h"
#include "support/mlx_cases.h"
#include "webgpu_test_support.h"

namespace wgml::backend::webgpu {
namespace {

class WebGpuMlxDifferential : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!testing::shared_backend()) GTEST_SKIP() << testing::skip_reason();
  }
};

// The cases of `op` listed in cpu_cases.tsv (op, case, why; # starts a comment).
std::set<std::string> listed_cpu_cases(const std::string& op) {
  std::ifstream file(std::string(WGML_SOURCE_DIR) + "/tests/backend/webgpu/cpu_cases.tsv");
  std::set<std::string> cases;
  for (std::string line; std::getline(file, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string listed_op, name;
    if (std::getline(fields, listed_op, '\t') && std::getline(fields, name, '\t') && listed_op == op) cases.insert(name);
  }
  return cases;
}

uint64_t count_of(const std::map<std::string, uint64_t>& counts, const std::string& op) {
  const auto it = counts.find(op);
  return it == counts.end() ? 0 : it->second;
}

TEST_P(WebGpuMlxDifferential, WebGpuMatchesMlx) {
  WebGpuBackend& backend = *testing::shared_backend();
  const std::string op(spec_op_name(GetParam()));
  const kernel::KernelSpec* spec = backend.context()->engine().find("mlx", op);
  const auto& placed = spec && spec->view ? backend.placement().views : backend.placement().on_gpu;
  const uint64_t before = count_of(placed, op);
  const cpu::CpuBackend reference;
  std::set<std::string> on_cpu;
  for (const nlohmann::json& c : wgml::testing::mlx_cases_of(GetParam())) {
    const std::string name = c["name"].get<std::string>();
    const uint64_t cpu_before = count_of(backend.placement().on_cpu, op);
    wgml::testing::expect_same_results(c, wgml::testing::run_mlx_case(c, backend), wgml::testing::run_mlx_case(c, reference),
                                       name + " (WebGPU against the CPU)");
    if (count_of(backend.placement().on_cpu, op) == cpu_before) continue;
    on_cpu.insert(name);
    const auto why = backend.placement().fallback_reason.find(op);
    EXPECT_TRUE(listed_cpu_cases(op).count(name))
        << op << "\t" << name << "\t" << (why == backend.placement().fallback_reason.end() ? "" : why->second)
        << "\nran on the CPU: give it a kernel, or list it in tests/backend/webgpu/cpu_cases.tsv with why";
  }
  for (const std::string& name : listed_cpu_cases(op))
    EXPECT_TRUE(on_cpu.count(name)) << op << " " << name
                                    << " is listed in cpu_cases.tsv but no longer runs on the CPU: remove it";
  if (!spec && !backend.context()->decomposition("mlx", op) && !composed_on_gpu(op)) return;
  const auto reason = backend.placement().fallback_reason.find(op);
  EXPECT_GT(count_of(placed, op), before) << op << " has a GPU path but no case ran on the GPU"
                                          << (reason == backend.placement().fallback_reason.end() ? "" : ": " + reason->second);
}

// The shape-class cases (tools/mlx_cases/cases_shape_classes.py) change shapes and positions from
// step to step, each later step in a shape class an earlier one saw: once the first two steps ran,
// the whole case must render no kernel and compile no pipeline, and still match MLX and the CPU.
TEST(WebGpuShapeClasses, LaterStepsReuseThePipelinesOfTheFirstTwo) {
  if (!testing::shared_backend()) GTEST_SKIP() << testing::skip_reason();
  WebGpuBackend& backend = *testing::shared_backend();
  const cpu::CpuBackend reference;
  int cases = 0;
  for (const std::string& node : wgml::testing::all_node_names()) {
    for (const nlohmann::json& c : wgml::testing::mlx_cases_of(node)) {
      const std::string name = c["name"].get<std::string>();
      if (name.rfind("shape_classes_", 0) != 0) continue;
      ++cases;
      nlohmann::json first_two = c;
      first_two["steps"] = nlohmann::json(c["steps"].begin(), c["steps"].begin() + 2);
      wgml::testing::run_mlx_case(first_two, backend);
      const GpuContext::Counters before = backend.context()->counters();
      wgml::testing::expect_same_results(c, wgml::testing::run_mlx_case(c, backend), wgml::testing::run_mlx_case(c, reference),
                                         name + " (WebGPU against the CPU)");
      const GpuContext::Counters after = backend.context()->counters();
      EXPECT_EQ(after.kernels_rendered, before.kernels_rendered) << name << ": a later step rendered a kernel";
      EXPECT_EQ(after.pipelines_compiled, before.pipelines_compiled) << name << ": a later step compiled a pipeline";
    }
  }
  EXPECT_GE(cases, 8) << "the shape-class cases are missing";
}

// Operands of different dtypes (MLX promotes them: bfloat16 + float16 adds in float32) are cast on
// the GPU by the AsType kernel and the op runs there too: no CPU fallback.
TEST(WebGpuPromotion, MixedOperandsAreCastOnTheGpu) {
  if (!testing::shared_backend()) GTEST_SKIP() << testing::skip_reason();
  WebGpuBackend& backend = *testing::shared_backend();
  const cpu::CpuBackend reference;
  int cases = 0;
  for (const char* node : {"AddNode", "MultiplyNode", "WhereNode"})
    for (const nlohmann::json& c : wgml::testing::mlx_cases_of(node)) {
      const std::string name = c["name"].get<std::string>();
      // The float promotions (the GPU has no int16 arithmetic for uint8 with int8, and keeps the
      // int64 of uint32 with int32 narrowed).
      if (name != "bf16_with_f16" && name != "int32_with_f32" && name != "f32_with_f16") continue;
      ++cases;
      const std::string op(spec_op_name(node));
      const uint64_t cpu_before = count_of(backend.placement().on_cpu, op);
      wgml::testing::expect_same_results(c, wgml::testing::run_mlx_case(c, backend), wgml::testing::run_mlx_case(c, reference),
                                         name + " (WebGPU against the CPU)");
      EXPECT_EQ(count_of(backend.placement().on_cpu, op), cpu_before) << name << " fell back to the CPU";
    }
  EXPECT_GE(cases, 5) << "the mixed-dtype cases are missing";
}

// The SDPA decode cases (GQA, masks, head dims 64-256 and odd ones, f16, bf16, several steps) once
// more on a backend whose decode attention takes all the keys in one pass (Sdpa's decode-single
// variant, which DECODE_WORKGROUPS 1 chooses for every decode call), against the CPU reference.
TEST(WebGpuOnePassDecode, SdpaCasesMatchTheCpuReference) {
  if (!testing::shared_backend()) GTEST_SKIP() << testing::skip_reason();
  GpuOptions options;
  options.small_values_on_host = false;
  options.tunables = {"Sdpa.DECODE_WORKGROUPS=1"};
  const WebGpuBackend backend(options);
  kernel::KernelRequest decode;
  decode.inputs = {
      {"q", {DType::Float32, {1, 8, 1, 64}}}, {"k", {DType::Float32, {1, 2, 40, 64}}}, {"v", {DType::Float32, {1, 2, 40, 64}}}};
  decode.attributes = {{"scale", kernel::Value(0.125)}, {"kvStop", kernel::Value(int64_t{40})}};
  const kernel::KernelPlan& plan = backend.context()->plan(*backend.context()->engine().find("mlx", "Sdpa"), decode);
  EXPECT_EQ(plan.variant, "decode-single");
  EXPECT_EQ(plan.passes.size(), 1u);
  const cpu::CpuBackend reference;
  size_t decodes = 0;
  for (const nlohmann::json& c : wgml::testing::mlx_cases_of("SdpaNode")) {
    const std::string name = c["name"].get<std::string>();
    if (name.find("decode") == std::string::npos) continue;
    ++decodes;
    wgml::testing::expect_same_results(c, wgml::testing::run_mlx_case(c, backend), wgml::testing::run_mlx_case(c, reference),
                                       name + " (one-pass decode against the CPU)");
  }
  EXPECT_GE(decodes, 8u);
}

// The quantized product cases (2-8 bits, affine and fp modes, decode and prefill rows) once more on
// backends whose QMV gives each 32-value chunk to 1 and 4 invocations (QMV_PARTS; the default, 2
// for 4 bits, else 1, runs in WebGpuMlxDifferential), and whose workgroups have 256 invocations
// loading 2 chunks at a time (QMV_THREADS, QMV_UNROLL), against the CPU reference. Bit widths that
// parts cannot split (3, 5, 6, the fp modes) keep whole chunks.
TEST(WebGpuQmvTunables, QuantizedMatmulCasesMatchTheCpuReference) {
  if (!testing::shared_backend()) GTEST_SKIP() << testing::skip_reason();
  const cpu::CpuBackend reference;
  const std::vector<std::pair<std::vector<std::string>, std::string>> settings = {
      {{"QMV_PARTS=1"}, "const PARTS: u32 = 1u;"},
      {{"QMV_PARTS=4"}, "const PARTS: u32 = 4u;"},
      {{"QMV_THREADS=256", "QMV_UNROLL=2"}, "const WORKGROUP: u32 = 256u;"}};
  for (const auto& [tunables, shown] : settings) {
    GpuOptions options;
    options.small_values_on_host = false;
    std::string label;
    for (const std::string& t : tunables) {
      options.tunables.push_back("QuantizedMatmul." + t);
      label += (label.empty() ? "" : ", ") + t;
    }
    const WebGpuBackend backend(options);
    kernel::KernelRequest decode;
    decode.inputs = {{"x", {DType::BFloat16, {1, 256}}},
                     {"w", {DType::UInt32, {40, 32}}},
                     {"scales", {DType::BFloat16, {40, 4}}},
                     {"biases", {DType::BFloat16, {40, 4}}}};
    const kernel::KernelPlan& plan = backend.context()->plan(*backend.context()->engine().find("mlx", "QuantizedMatmul"), decode);
    ASSERT_EQ(plan.variant, "qmv");
    EXPECT_NE(plan.passes.at(0).wgsl->find(shown), std::string::npos) << label;
    size_t cases = 0;
    for (const nlohmann::json& c : wgml::testing::mlx_cases_of("QuantizedMatmulNode")) {
      ++cases;
      wgml::testing::expect_same_results(c, wgml::testing::run_mlx_case(c, backend), wgml::testing::run_mlx_case(c, reference),
                                         c["name"].get<std::string>() + " (" + label + ")");
    }
    EXPECT_GE(cases, 8u);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryNode, WebGpuMlxDifferential, ::testing::ValuesIn(wgml::testing::all_node_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace wgml::backend::webgpu
