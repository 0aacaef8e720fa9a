// The MLX-differential cases (tests/support/mlx_cases.h), hand-written and random shapes and
// dtypes, on the WebGPU backend: every node's programs must match MLX and the CPU reference,
// whether the node runs on the GPU or through the CPU fallback; a node with a kernel spec must
// have run on the GPU at least once.
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
  const uint64_t before = count_of(backend.placement().on_gpu, op);
  const cpu::CpuBackend reference;
  for (const nlohmann::json& c : wgml::testing::mlx_cases_of(GetParam()))
    wgml::testing::expect_same_results(wgml::testing::run_mlx_case(c, backend), wgml::testing::run_mlx_case(c, reference),
                                       c["name"].get<std::string>() + " (WebGPU against the CPU)");
  if (!backend.context()->engine().find("mlx", op)) return;
  const auto reason = backend.placement().fallback_reason.find(op);
  EXPECT_GT(count_of(backend.placement().on_gpu, op), before)
      << op << " has a kernel spec but no case ran on the GPU"
      << (reason == backend.placement().fallback_reason.end() ? "" : ": " + reason->second);
}

INSTANTIATE_TEST_SUITE_P(EveryNode, WebGpuMlxDifferential, ::testing::ValuesIn(wgml::testing::all_node_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace wgml::backend::webgpu
