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
  // Each weight can go right after its own transpose, the last folded instruction to read it.
  ASSERT_EQ(plan.dead_after.size(), main.size());
  std::vector<uint32_t> released;
  for (size_t i = 0; i < main.size(); ++i)
    for (uint32_t t : plan.dead_after[i]) {
      EXPECT_TRUE(plan.folded[i]) << "instruction " << i << " releases t" << t;
      EXPECT_EQ(wgml::ir::instruction_name(main[i]), "TransposeNode");
      released.push_back(t);
    }
  std::vector<uint32_t> dead = plan.dead_constants;
  std::sort(released.begin(), released.end());
  std::sort(dead.begin(), dead.end());
  EXPECT_EQ(released, dead);
  // No folded instruction reads another's result: each is settled right after it is made.
  ASSERT_EQ(plan.settle_after.size(), main.size());
  for (size_t i = 0; i < main.size(); ++i) {
    std::vector<std::pair<size_t, wgml::ir::Tid>> expected;
    if (plan.folded[i])
      for (wgml::ir::Tid t : wgml::runtime::tensors_written(main[i])) expected.emplace_back(i, t);
    ASSERT_EQ(plan.settle_after[i].size(), expected.size()) << "instruction " << i;
    for (size_t k = 0; k < expected.size(); ++k) {
      EXPECT_EQ(plan.settle_after[i][k].first, expected[k].first);
      EXPECT_EQ(plan.settle_after[i][k].second.idx, expected[k].second.idx);
    }
  }
}

// A folded result a later folded instruction reads (a transpose, then a product of it with itself)
// is settled after that reader, which reads it as it was made; the reader's own result right after
// itself.
TEST(ConstantFolding, AResultAnotherFoldReadsSettlesAfterIt) {
  using wgml::ir::Tid;
  wgml::ir::Program p;
  p.num_constant_tensors = 1;
  p.num_input_tensors = 1;
  p.num_output_tensors = 1;
  p.num_temp_tensors = 2;
  p.inputs = {wgml::ir::Slot{1, wgml::ir::SlotType::Tensor}};
  p.outputs = {wgml::ir::Slot{2, wgml::ir::SlotType::Tensor}};
  // t3 = transpose(c0); t4 = t3 * t3 (folded: it reads t3); out = x + t4.
  p.chains = {wgml::ir::Chain{
      {wgml::ir::Node(wgml::ir::TransposeNode{Tid{0}, Tid{3}, {1, 0}}),
       wgml::ir::Node(wgml::ir::MultiplyNode{Tid{3}, Tid{3}, Tid{4}}), wgml::ir::Node(wgml::ir::AddNode{Tid{1}, Tid{4}, Tid{2}})},
      {}}};
  const wgml::runtime::FoldingPlan plan = wgml::runtime::plan_constant_folding(p);
  ASSERT_EQ(plan.folded, (std::vector<bool>{true, true, false}));
  ASSERT_EQ(plan.settle_after.size(), 3u);
  EXPECT_TRUE(plan.settle_after[0].empty());
  ASSERT_EQ(plan.settle_after[1].size(), 2u);
  EXPECT_EQ(plan.settle_after[1][0].first, 0u);
  EXPECT_EQ(plan.settle_after[1][0].second.idx, 3u);
  EXPECT_EQ(plan.settle_after[1][1].first, 1u);
  EXPECT_EQ(plan.settle_after[1][1].second.idx, 4u);
  EXPECT_TRUE(plan.settle_after[2].empty());
}

}  // namespace
