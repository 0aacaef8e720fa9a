// The MLX-differential suite on the CPU reference: every node of the schema against the real MLX
// (tests/support/mlx_cases.h).
#include <gtest/gtest.h>

#include "backend/cpu/cpu_backend.h"
#include "support/mlx_cases.h"

namespace {

class MlxDifferential : public ::testing::TestWithParam<std::string> {};

TEST_P(MlxDifferential, CpuMatchesMlx) {
  const nlohmann::json cases = wgml::testing::mlx_cases_of(GetParam());
  EXPECT_GE(cases.size(), 5u) << "every node needs at least 5 MLX cases";
  const wgml::backend::cpu::CpuBackend backend;
  for (const nlohmann::json& c : cases) wgml::testing::run_mlx_case(c, backend);
}

INSTANTIATE_TEST_SUITE_P(EveryNode, MlxDifferential, ::testing::ValuesIn(wgml::testing::all_node_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
