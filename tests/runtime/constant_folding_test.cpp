// Load-time constant folding on a real export: attention_block's nn.Linear weights reach Addmm
// through transposes of constants, which run once at load; everything fed by inputs stays.
#include "runtime/constant_folding.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "frontend/load_model.h"

namespace {

const std::filesystem::path kAttentionBlock = std::filesystem::path(WGML_SOURCE_DIR) / "tests/fixtures/pte/attention_block";

TEST(ConstantFolding, WeightTransposesFoldAndTheirWeightsDie) {
  const auto model = wgml::frontend::load_model((kAttentionBlock / "model.pte").string());
  const wgml::ir::Program& p = model.program;
  const wgml::runtime::FoldingPlan plan = wgml::runtime::plan_constant_folding(p);
  const auto& main = p.chains[p.main_chain_idx].instructions;
  ASSERT_EQ(plan.folded.size(), main.size());
  std::vector<std::string> folded;
  for (size_t i = 0; i < main.size(); ++i)
    if (plan.folded[i]) folded.push_back(wgml::ir::instruction_name(main[i]));
  // Four projection weights (wq, wk, wv, wo); the four activation transposes read inputs.
  EXPECT_EQ(folded, std::vector<std::string>(4, "TransposeNode"));
  // The weights are read by nothing else; the RMSNorm weight is still read every call.
  EXPECT_EQ(plan.dead_constants.size(), 4u);
  for (uint32_t t : plan.dead_constants) EXPECT_LT(t, p.num_constant_tensors);
}

}  // namespace
