// The MLX-differential cases (tests/support/mlx_cases.h), hand-written and random shapes and
// dtypes, on the WebGPU backend: every node's programs must match MLX and the CPU reference,
// whether the node runs on the GPU or through the CPU fallback; a node with a kernel spec, a
// decomposition or a composition of specs (UpdateAndAttend) must have run on the GPU at least once
// (a view: as a view).
#include <gtest/gtest.h>

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
  for (const nlohmann::json& c : wgml::testing::mlx_cases_of(GetParam()))
    wgml::testing::expect_same_results(c, wgml::testing::run_mlx_case(c, backend), wgml::testing::run_mlx_case(c, reference),
                                       c["name"].get<std::string>() + " (WebGPU against the CPU)");
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

INSTANTIATE_TEST_SUITE_P(EveryNode, WebGpuMlxDifferential, ::testing::ValuesIn(wgml::testing::all_node_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace wgml::backend::webgpu
