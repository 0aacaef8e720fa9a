// Load-time fusion (runtime/fusion.h): what it fuses in a real Llama export, and the patterns it
// must leave alone because fusing them would change what the program computes.
#include "runtime/fusion.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "frontend/load_model.h"

namespace {

using wgml::ir::Tid;

const std::filesystem::path kTinyLlama = std::filesystem::path(WGML_SOURCE_DIR) / "tests/fixtures/llm/tiny-llama-fp32";

template <class N>
wgml::ir::Instruction instruction(N node) {
  return wgml::ir::Instruction(wgml::ir::Node(std::move(node)));
}

wgml::ir::Program program_of(std::vector<wgml::ir::Instruction> instructions, std::vector<uint32_t> outputs) {
  wgml::ir::Program p;
  p.num_temp_tensors = 16;
  p.chains.push_back(wgml::ir::Chain{std::move(instructions), {}});
  for (uint32_t t : outputs) p.outputs.push_back(wgml::ir::Slot{t, wgml::ir::SlotType::Tensor});
  return p;
}

std::vector<std::string> names(const wgml::ir::Program& p) {
  std::vector<std::string> out;
  for (const auto& i : p.chains[p.main_chain_idx].instructions) out.push_back(wgml::ir::instruction_name(i));
  return out;
}

wgml::ir::IntOrVid literal(int64_t v) { return wgml::ir::IntOrVid{v, {}, false}; }

// x (slot 0) * cos (1) + concat(-x[..., 2:], x[..., :2]) * sin (2) -> slot 9, as Hugging Face's
// apply_rotary_pos_emb exports; slot 4 is the negated upper half.
std::vector<wgml::ir::Instruction> rope(Tid x = Tid{0}) {
  return {instruction(wgml::ir::MultiplyNode{x, Tid{1}, Tid{3}}),
          instruction(wgml::ir::SliceNode{x, Tid{5}, literal(3), literal(0), literal(2), 1}),
          instruction(wgml::ir::SliceNode{x, Tid{4}, literal(3), literal(2), literal(INT64_MAX), 1}),
          instruction(wgml::ir::NegNode{Tid{4}, Tid{4}}),
          instruction(wgml::ir::ConcatenateNode{{Tid{4}, Tid{5}}, Tid{6}, -1}),
          instruction(wgml::ir::MultiplyNode{Tid{6}, Tid{2}, Tid{7}}),
          instruction(wgml::ir::AddNode{Tid{3}, Tid{7}, Tid{9}})};
}

TEST(Fusion, RopeResidualsAndCacheAttentionOfALlamaExportFuse) {
  auto model = wgml::frontend::load_model((kTinyLlama / "model.pte").string());
  wgml::ir::Program& p = model.program;
  const size_t before = p.chains[p.main_chain_idx].instructions.size();
  const wgml::runtime::FusionCounts counts = wgml::runtime::fuse_instructions(p);
  // Two layers: q and k rotated in each, the attention and MLP outputs added to the residual, one
  // attention over the prefixes of the layer's KV caches, and the MLP's gate and up projections
  // with their SwiGLU as one product.
  EXPECT_EQ(counts.rotate_half, 4u);
  EXPECT_EQ(counts.residual_product, 4u);
  EXPECT_EQ(counts.cache_attention, 2u);
  EXPECT_EQ(counts.swiglu, 2u);
  // Then each layer's two RotateHalf ops and its k and v cache writes as one op; its q, k and v
  // projections as one product (each with two relays, and two weights transposed again at its
  // place in place of the Transposes dropped: as many instructions as before).
  EXPECT_EQ(counts.rotary_kv_write, 2u);
  EXPECT_EQ(counts.dense_products, 2u);
  // Then each layer's rotary write and attention as one op; three of their inputs are copied
  // aside at the write's place (the first layer's q and k, the last layer's start), whose slots
  // the export reuses for the attention's bound in between.
  EXPECT_EQ(counts.rotary_sdpa, 2u);
  const auto& main = p.chains[p.main_chain_idx].instructions;
  EXPECT_EQ(main.size(), before - 4 * 6 - 4 * 1 - 2 * 2 - 2 * 3 - 2 * 3 - 2 * 1 + 3);
  const std::map<std::string, size_t> parts_of = {{"RotarySdpa", 2}, {"Addmm", 2}, {"MatmulSwiGlu", 4}, {"MatmulProducts", 3}};
  size_t fused = 0;
  for (const auto& i : main) {
    const auto* op = std::get_if<wgml::ir::OnnxOp>(&i);
    if (!op) continue;
    ++fused;
    ASSERT_TRUE(op->parts_chain);
    const size_t parts = p.chains.at(*op->parts_chain).instructions.size();
    EXPECT_EQ(parts, parts_of.at(op->op_type)) << op->domain << "." << op->op_type;
  }
  EXPECT_EQ(fused, 10u);
}

TEST(Fusion, TheMlpsOfAFourBitLlamaExportFuseGateUpAndSwiGlu) {
  auto model = wgml::frontend::load_model(
      (std::filesystem::path(WGML_SOURCE_DIR) / "tests/fixtures/llm/tiny-llama-bf16-4w/model.pte").string());
  const wgml::runtime::FusionCounts counts = wgml::runtime::fuse_instructions(model.program);
  // Two layers: each MLP's gate and up projections and their SwiGLU are one product, its down
  // projection and the attention's output projection add the residual.
  EXPECT_EQ(counts.swiglu, 2u);
  EXPECT_EQ(counts.gated_product, 0u);
  EXPECT_EQ(counts.products, 2u);  // q, k and v of each layer
  EXPECT_EQ(counts.residual_product, 4u);
}

TEST(Fusion, RopeFusesIntoOneOpThatKeepsItsParts) {
  wgml::ir::Program p = program_of(rope(), {9});
  EXPECT_EQ(wgml::runtime::fuse_instructions(p).rotate_half, 1u);
  EXPECT_EQ(names(p), std::vector<std::string>{"wgml.RotateHalf"});
  const auto& op = std::get<wgml::ir::OnnxOp>(p.chains[0].instructions[0]);
  ASSERT_EQ(op.inputs.size(), 3u);
  EXPECT_EQ(op.inputs[0]->idx, 0u);
  EXPECT_EQ(op.inputs[1]->idx, 1u);
  EXPECT_EQ(op.inputs[2]->idx, 2u);
  EXPECT_EQ(op.outputs.at(0)->idx, 9u);
  EXPECT_EQ(p.chains.at(*op.parts_chain).instructions.size(), 7u);
}

TEST(Fusion, AnIntermediateReadElsewhereKeepsThePatternAsItIs) {
  std::vector<wgml::ir::Instruction> chain = rope();
  chain.push_back(instruction(wgml::ir::NegNode{Tid{6}, Tid{10}}));  // reads the concatenation
  wgml::ir::Program p = program_of(chain, {9, 10});
  EXPECT_EQ(wgml::runtime::fuse_instructions(p).rotate_half, 0u);
  EXPECT_EQ(p.chains[0].instructions.size(), 8u);
}

TEST(Fusion, AnIntermediateThatIsAProgramOutputKeepsThePattern) {
  wgml::ir::Program p = program_of(rope(), {9, 3});
  EXPECT_EQ(wgml::runtime::fuse_instructions(p).rotate_half, 0u);
}

TEST(Fusion, SlicesOfAnotherValueOfTheSameSlotAreNoRotation) {
  std::vector<wgml::ir::Instruction> chain = rope();
  // x is written again between the lower slice and the upper one: they slice different values.
  chain.insert(chain.begin() + 2, instruction(wgml::ir::NegNode{Tid{11}, Tid{0}}));
  wgml::ir::Program p = program_of(chain, {9});
  EXPECT_EQ(wgml::runtime::fuse_instructions(p).rotate_half, 0u);
}

// k and v cut from the caches (slots 1 and 2) up to the bound in value slot 0.
std::vector<wgml::ir::Instruction> cache_attention(wgml::ir::IntOrVid v_stop) {
  const wgml::ir::IntOrVid bound{0, wgml::ir::Vid{0}, true};
  return {instruction(wgml::ir::SliceNode{Tid{1}, Tid{4}, literal(2), literal(0), bound, 1}),
          instruction(wgml::ir::SliceNode{Tid{2}, Tid{5}, literal(2), literal(0), v_stop, 1}),
          instruction(wgml::ir::SdpaNode{Tid{3}, Tid{4}, Tid{5}, Tid{6}, 0.5f, std::nullopt, true})};
}

TEST(Fusion, AttentionOverCachePrefixesReadsTheCachesUpToTheBound) {
  wgml::ir::Program p = program_of(cache_attention(wgml::ir::IntOrVid{0, wgml::ir::Vid{0}, true}), {6});
  EXPECT_EQ(wgml::runtime::fuse_instructions(p).cache_attention, 1u);
  EXPECT_EQ(names(p), std::vector<std::string>{"mlx.Sdpa"});
  const auto& op = std::get<wgml::ir::OnnxOp>(p.chains[0].instructions[0]);
  EXPECT_EQ(op.inputs.at(1)->idx, 1u);
  EXPECT_EQ(op.inputs.at(2)->idx, 2u);
  ASSERT_EQ(op.value_attributes.size(), 1u);
  EXPECT_EQ(op.value_attributes[0].first, "kvStop");
}

TEST(Fusion, CacheSlicesOfDifferentLengthsAreLeftAlone) {
  wgml::ir::Program p = program_of(cache_attention(literal(7)), {6});
  EXPECT_EQ(wgml::runtime::fuse_instructions(p).cache_attention, 0u);
}

TEST(Fusion, ResidualAddFusesIntoAddmmWithBias) {
  wgml::ir::Program p = program_of({instruction(wgml::ir::AddmmNode{Tid{0}, Tid{1}, Tid{3}, std::nullopt, 1.0f, 1.0f}),
                                    instruction(wgml::ir::AddNode{Tid{2}, Tid{3}, Tid{4}})},
                                   {4});
  EXPECT_EQ(wgml::runtime::fuse_instructions(p).residual_product, 1u);
  EXPECT_EQ(names(p), std::vector<std::string>{"mlx.Addmm"});
  const auto& op = std::get<wgml::ir::OnnxOp>(p.chains[0].instructions[0]);
  EXPECT_EQ(op.inputs.at(2)->idx, 2u);  // the residual is the bias
}

TEST(Fusion, ResidualAddFusesIntoAQuantizedMatmulAsItsAddend) {
  wgml::ir::QuantizedMatmulNode qmm{Tid{0}, Tid{1}, Tid{5}, Tid{3}, Tid{6}, 32, 4, "affine", true};
  wgml::ir::Program p = program_of({instruction(qmm), instruction(wgml::ir::AddNode{Tid{3}, Tid{2}, Tid{4}})}, {4});
  EXPECT_EQ(wgml::runtime::fuse_instructions(p).residual_product, 1u);
  EXPECT_EQ(names(p), std::vector<std::string>{"mlx.QuantizedMatmul"});
  const auto& op = std::get<wgml::ir::OnnxOp>(p.chains[0].instructions[0]);
  // x, w, scales, biases, no index tensors, then the residual as the addend.
  ASSERT_EQ(op.inputs.size(), 7u);
  EXPECT_EQ(op.inputs[2]->idx, 5u);
  EXPECT_EQ(op.inputs[3]->idx, 6u);
  EXPECT_FALSE(op.inputs[4] || op.inputs[5]);
  EXPECT_EQ(op.inputs[6]->idx, 2u);
  ASSERT_NE(op.attribute("mode"), nullptr);
  EXPECT_EQ(std::get<std::string>(*op.attribute("mode")), "affine");
  EXPECT_EQ(std::get<int64_t>(*op.attribute("bits")), 4);
}

// down(Silu(gate) * up) + residual as a Llama MLP exports it: gate in slot 0, up in 8, the
// residual in 2; the product goes to slot 3 and the sum to 4.
std::vector<wgml::ir::Instruction> gated_mlp(Tid first, Tid second) {
  return {instruction(wgml::ir::SiluNode{Tid{0}, Tid{7}}), instruction(wgml::ir::MultiplyNode{first, second, Tid{9}}),
          instruction(wgml::ir::QuantizedMatmulNode{Tid{9}, Tid{1}, Tid{5}, Tid{3}, Tid{6}, 32, 4, "affine", true}),
          instruction(wgml::ir::AddNode{Tid{3}, Tid{2}, Tid{4}})};
}

TEST(Fusion, ASwiGluFusesIntoTheQuantizedProductWithTheResidual) {
  for (const auto& [first, second] : {std::pair(Tid{7}, Tid{8}), std::pair(Tid{8}, Tid{7})}) {
    wgml::ir::Program p = program_of(gated_mlp(first, second), {4});
    const wgml::runtime::FusionCounts counts = wgml::runtime::fuse_instructions(p);
    EXPECT_EQ(counts.residual_product, 1u);
    EXPECT_EQ(counts.gated_product, 1u);
    EXPECT_EQ(names(p), std::vector<std::string>{"mlx.QuantizedMatmul"});
    const auto& op = std::get<wgml::ir::OnnxOp>(p.chains[0].instructions[0]);
    // The gate as x, the residual as the addend, then up.
    ASSERT_EQ(op.inputs.size(), 8u);
    EXPECT_EQ(op.inputs[0]->idx, 0u);
    EXPECT_EQ(op.inputs[6]->idx, 2u);
    EXPECT_EQ(op.inputs[7]->idx, 8u);
    EXPECT_EQ(p.chains.at(*op.parts_chain).instructions.size(), 4u);  // what runs where the kernel does not
  }
}

TEST(Fusion, ASwiGluFusesIntoAQuantizedProductWithoutAResidual) {
  std::vector<wgml::ir::Instruction> mlp = gated_mlp(Tid{7}, Tid{8});
  mlp.pop_back();
  wgml::ir::Program p = program_of(std::move(mlp), {3});
  EXPECT_EQ(wgml::runtime::fuse_instructions(p).gated_product, 1u);
  EXPECT_EQ(names(p), std::vector<std::string>{"mlx.QuantizedMatmul"});
  const auto& op = std::get<wgml::ir::OnnxOp>(p.chains[0].instructions[0]);
  ASSERT_EQ(op.inputs.size(), 8u);
  EXPECT_FALSE(op.inputs[6]);
  EXPECT_EQ(op.inputs[7]->idx, 8u);
}

TEST(Fusion, ASiluReadElsewhereKeepsItsGateOutOfTheProduct) {
  // The Silu's output is also a program output: it must still be computed, so only the residual fuses.
  wgml::ir::Program p = program_of(gated_mlp(Tid{7}, Tid{8}), {4, 7});
  const wgml::runtime::FusionCounts counts = wgml::runtime::fuse_instructions(p);
  EXPECT_EQ(counts.residual_product, 1u);
  EXPECT_EQ(counts.gated_product, 0u);
  EXPECT_EQ(names(p), (std::vector<std::string>{"SiluNode", "MultiplyNode", "mlx.QuantizedMatmul"}));
}

// Silu(x @ w_gate) * (x @ w_up) as a Llama MLP exports it: x in slot 0, the gate product in 7, its
// Silu in 8, the up product in 9, the result in 10; `up_x` is the up product's input.
std::vector<wgml::ir::Instruction> quantized_swiglu(Tid up_x = Tid{0}) {
  return {instruction(wgml::ir::QuantizedMatmulNode{Tid{0}, Tid{1}, Tid{2}, Tid{7}, Tid{3}, 64, 4, "affine", true}),
          instruction(wgml::ir::SiluNode{Tid{7}, Tid{8}}),
          instruction(wgml::ir::QuantizedMatmulNode{up_x, Tid{4}, Tid{5}, Tid{9}, Tid{6}, 64, 4, "affine", true}),
          instruction(wgml::ir::MultiplyNode{Tid{8}, Tid{9}, Tid{10}})};
}

TEST(Fusion, TheGateAndUpProductsOfOneXFuseWithTheirSwiGlu) {
  wgml::ir::Program p = program_of(quantized_swiglu(), {10});
  EXPECT_EQ(wgml::runtime::fuse_instructions(p).swiglu, 1u);
  EXPECT_EQ(names(p), std::vector<std::string>{"wgml.QuantizedSwiGlu"});
  const auto& op = std::get<wgml::ir::OnnxOp>(p.chains[0].instructions[0]);
  // x, the gate's w, scales and biases, then the up's.
  ASSERT_EQ(op.inputs.size(), 7u);
  const std::vector<uint32_t> expected = {0, 1, 2, 3, 4, 5, 6};
  for (size_t k = 0; k < expected.size(); ++k) EXPECT_EQ(op.inputs[k]->idx, expected[k]) << k;
  EXPECT_EQ(op.outputs.at(0)->idx, 10u);
  EXPECT_EQ(std::get<int64_t>(*op.attribute("group_size")), 64);
  EXPECT_EQ(p.chains.at(*op.parts_chain).instructions.size(), 4u);

  wgml::ir::Program dense = program_of({instruction(wgml::ir::AddmmNode{Tid{0}, Tid{1}, Tid{7}, std::nullopt, 1.0f, 1.0f}),
                                        instruction(wgml::ir::SiluNode{Tid{7}, Tid{8}}),
                                        instruction(wgml::ir::AddmmNode{Tid{0}, Tid{4}, Tid{9}, std::nullopt, 1.0f, 1.0f}),
                                        instruction(wgml::ir::MultiplyNode{Tid{9}, Tid{8}, Tid{10}})},
                                       {10});
  EXPECT_EQ(wgml::runtime::fuse_instructions(dense).swiglu, 1u);
  EXPECT_EQ(names(dense), std::vector<std::string>{"wgml.MatmulSwiGlu"});
}

TEST(Fusion, ProductsOfTwoXsOrQuantizedUnalikeAreNoSwiGlu) {
  wgml::ir::Program two_xs = program_of(quantized_swiglu(Tid{11}), {10});
  EXPECT_EQ(wgml::runtime::fuse_instructions(two_xs).swiglu, 0u);
  std::vector<wgml::ir::Instruction> unalike = quantized_swiglu();
  std::get<wgml::ir::QuantizedMatmulNode>(std::get<wgml::ir::Node>(unalike[2])).group_size = 32;
  wgml::ir::Program p = program_of(std::move(unalike), {10});
  EXPECT_EQ(wgml::runtime::fuse_instructions(p).swiglu, 0u);
  // An up product that is also a program output must still be stored.
  wgml::ir::Program read_elsewhere = program_of(quantized_swiglu(), {10, 9});
  EXPECT_EQ(wgml::runtime::fuse_instructions(read_elsewhere).swiglu, 0u);
}

// q, k and v of one x (slot 0) with weights 1-9 into slots 10-12, q negated into 13 between q and
// k, as an export reshapes q before it projects k.
std::vector<wgml::ir::Instruction> qkv() {
  std::vector<wgml::ir::Instruction> out;
  for (uint32_t s = 0; s < 3; ++s) {
    out.push_back(instruction(wgml::ir::QuantizedMatmulNode{Tid{0}, Tid{1 + 3 * s}, Tid{2 + 3 * s}, Tid{10 + s}, Tid{3 + 3 * s},
                                                            64, 4, "affine", true}));
    if (s == 0) out.push_back(instruction(wgml::ir::NegNode{Tid{10}, Tid{13}}));
  }
  return out;
}

// The IdCopy at instruction i of `p`'s main chain: from, to.
std::pair<uint32_t, uint32_t> copy_at(const wgml::ir::Program& p, size_t i) {
  const auto& copy = std::get<wgml::ir::IdCopyNode>(std::get<wgml::ir::Node>(p.chains[0].instructions.at(i)));
  return {copy.x.idx, copy.out.idx};
}

TEST(Fusion, QKVProductsOfOneXFuseAtTheFirstAndRelayTheLaterOutputs) {
  // The Neg also writes k's output slot before k does (exporters reuse temp slots): k's output is
  // made at q's place into a slot of its own, and copied to 11 at k's.
  std::vector<wgml::ir::Instruction> chain = qkv();
  std::get<wgml::ir::NegNode>(std::get<wgml::ir::Node>(chain[1])).out = Tid{11};
  wgml::ir::Program p = program_of(std::move(chain), {11, 12});
  EXPECT_EQ(wgml::runtime::fuse_instructions(p).products, 1u);
  EXPECT_EQ(names(p), (std::vector<std::string>{"wgml.QuantizedProducts", "NegNode", "IdCopyNode", "IdCopyNode"}));
  EXPECT_EQ(p.num_temp_tensors, 18u);  // 16 and 17 hold k's and v's products until their copies
  const auto& op = std::get<wgml::ir::OnnxOp>(p.chains[0].instructions[0]);
  ASSERT_EQ(op.inputs.size(), 10u);
  for (uint32_t k = 0; k < 10; ++k) EXPECT_EQ(op.inputs[k]->idx, k);
  ASSERT_EQ(op.outputs.size(), 3u);
  EXPECT_EQ(op.outputs[0]->idx, 10u);
  EXPECT_EQ(op.outputs[1]->idx, 16u);
  EXPECT_EQ(op.outputs[2]->idx, 17u);
  EXPECT_EQ(copy_at(p, 2), std::pair(16u, 11u));
  EXPECT_EQ(copy_at(p, 3), std::pair(17u, 12u));
  // The parts, run where the kernel does not fit, write where the op does.
  const auto& parts = p.chains.at(*op.parts_chain).instructions;
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(std::get<wgml::ir::QuantizedMatmulNode>(std::get<wgml::ir::Node>(parts[1])).out.idx, 16u);
}

// Dense q, k and v of one x (slot 0): weights (constants in slots 1-3) transposed into 4, 5 and 6,
// k's and v's after q's product (into 10), v's slot used by a Neg of q's product in between.
std::vector<wgml::ir::Instruction> dense_qkv() {
  const auto product = [](uint32_t w, uint32_t out) {
    return instruction(wgml::ir::AddmmNode{Tid{0}, Tid{w}, Tid{out}, std::nullopt, 1.0f, 1.0f});
  };
  const auto transpose = [](uint32_t x, uint32_t out) { return instruction(wgml::ir::TransposeNode{Tid{x}, Tid{out}, {1, 0}}); };
  return {transpose(1, 4), product(4, 10), instruction(wgml::ir::NegNode{Tid{10}, Tid{6}}), transpose(2, 5), product(5, 11),
          transpose(3, 6), product(6, 12)};
}

TEST(Fusion, DenseQKVProductsFuseAtTheFirstWithTheLaterWeightsTransposedThere) {
  wgml::ir::Program p = program_of(dense_qkv(), {10, 11, 12});
  EXPECT_EQ(wgml::runtime::fuse_instructions(p).dense_products, 1u);
  EXPECT_EQ(names(p), (std::vector<std::string>{"TransposeNode", "TransposeNode", "TransposeNode", "wgml.MatmulProducts",
                                                "NegNode", "IdCopyNode", "IdCopyNode"}));
  const auto& op = std::get<wgml::ir::OnnxOp>(p.chains[0].instructions[3]);
  std::vector<uint32_t> inputs;
  for (const auto& t : op.inputs) inputs.push_back(t->idx);
  EXPECT_EQ(inputs, (std::vector<uint32_t>{0, 4, 16, 17}));  // k's and v's weights in slots of their own
  const auto& again = std::get<wgml::ir::TransposeNode>(std::get<wgml::ir::Node>(p.chains[0].instructions[2]));
  EXPECT_EQ(again.x.idx, 3u);
  EXPECT_EQ(again.out.idx, 17u);
  // The parts read the weights the op reads.
  const auto& parts = p.chains.at(*op.parts_chain).instructions;
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(std::get<wgml::ir::AddmmNode>(std::get<wgml::ir::Node>(parts[2])).mat2.idx, 17u);
}

TEST(Fusion, QKVProductsStayWhereAWeightIsMadeLater) {
  // v's weight is made after q (by the Neg): it is not there at q's place.
  std::vector<wgml::ir::Instruction> late = qkv();
  std::get<wgml::ir::NegNode>(std::get<wgml::ir::Node>(late[1])).out = Tid{7};
  wgml::ir::Program q = program_of(std::move(late), {11, 12});
  EXPECT_EQ(wgml::runtime::fuse_instructions(q).products, 0u);
}

TEST(Fusion, AnOperandOverwrittenBeforeTheAddBlocksTheResidualFusion) {
  // mat1 (slot 0) holds another value by the time the Add runs, so Addmm cannot move there.
  wgml::ir::Program p =
      program_of({instruction(wgml::ir::AddmmNode{Tid{0}, Tid{1}, Tid{3}, std::nullopt, 1.0f, 1.0f}),
                  instruction(wgml::ir::NegNode{Tid{5}, Tid{0}}), instruction(wgml::ir::AddNode{Tid{2}, Tid{3}, Tid{4}})},
                 {4, 0});
  EXPECT_EQ(wgml::runtime::fuse_instructions(p).residual_product, 0u);
}

TEST(Fusion, AnAddmmWithABiasOrAScaleIsLeftAlone) {
  for (const auto& mm : {wgml::ir::AddmmNode{Tid{0}, Tid{1}, Tid{3}, Tid{5}, 1.0f, 1.0f},
                         wgml::ir::AddmmNode{Tid{0}, Tid{1}, Tid{3}, std::nullopt, 2.0f, 1.0f}}) {
    wgml::ir::Program p = program_of({instruction(mm), instruction(wgml::ir::AddNode{Tid{2}, Tid{3}, Tid{4}})}, {4});
    EXPECT_EQ(wgml::runtime::fuse_instructions(p).residual_product, 0u);
  }
}

using wgml::ir::Vid;

wgml::ir::IntOrVid value(uint32_t v) { return wgml::ir::IntOrVid{0, Vid{v}, true}; }

// RoPE of x with cos (slot 1) and sin (2) as rope() above, its temps from slot t on, into `out`.
std::vector<wgml::ir::Instruction> rope_of(Tid x, uint32_t t, Tid out) {
  return {instruction(wgml::ir::MultiplyNode{x, Tid{1}, Tid{t}}),
          instruction(wgml::ir::SliceNode{x, Tid{t + 1}, literal(3), literal(0), literal(2), 1}),
          instruction(wgml::ir::SliceNode{x, Tid{t + 2}, literal(3), literal(2), literal(INT64_MAX), 1}),
          instruction(wgml::ir::NegNode{Tid{t + 2}, Tid{t + 2}}),
          instruction(wgml::ir::ConcatenateNode{{Tid{t + 2}, Tid{t + 1}}, Tid{t + 3}, -1}),
          instruction(wgml::ir::MultiplyNode{Tid{t + 3}, Tid{2}, Tid{t + 4}}),
          instruction(wgml::ir::AddNode{Tid{t}, Tid{t + 4}, out})};
}

// The slot numbers of a fused op's inputs or outputs.
std::vector<uint32_t> slots(const std::vector<std::optional<Tid>>& operands) {
  std::vector<uint32_t> out;
  for (const auto& t : operands) out.push_back(t->idx);
  return out;
}

// One attention layer's prologue as a Llama export writes it: q (slot 0) and k (10) rotated into
// 20 and 21, then k' and v (11) written into the caches (mutable buffers 12 and 13) along axis 2
// from the position in value slot 0, each up to it plus SymSize(update, 2) (value slots 1 to 4).
wgml::ir::Program rotary_kv_writes(std::vector<wgml::ir::Instruction> between = {}) {
  std::vector<wgml::ir::Instruction> chain = rope_of(Tid{0}, 30, Tid{20});
  for (auto& i : rope_of(Tid{10}, 40, Tid{21})) chain.push_back(std::move(i));
  for (auto& i : between) chain.push_back(std::move(i));
  for (const auto& [update, cache, size, stop] : {std::tuple{21u, 12u, 1u, 2u}, std::tuple{11u, 13u, 3u, 4u}}) {
    chain.push_back(instruction(wgml::ir::SymSizeNode{Tid{update}, 2, Vid{size}}));
    chain.push_back(instruction(wgml::ir::AddIntNode{value(0), value(size), Vid{stop}}));
    chain.push_back(
        instruction(wgml::ir::SliceUpdateNode{Tid{cache}, Tid{update}, Tid{cache}, literal(2), value(0), value(stop), 1}));
  }
  wgml::ir::Program p = program_of(std::move(chain), {20});
  p.num_temp_tensors = 48;
  p.num_values = 5;
  for (uint32_t cache : {12u, 13u}) p.mutable_buffers.push_back(wgml::ir::Slot{cache, wgml::ir::SlotType::Tensor});
  return p;
}

TEST(Fusion, RotationsAndCacheWritesOfALayerFuseIntoOneOpAtTheLastWrite) {
  wgml::ir::Program p = rotary_kv_writes();
  const wgml::runtime::FusionCounts counts = wgml::runtime::fuse_instructions(p);
  EXPECT_EQ(counts.rotate_half, 2u);
  EXPECT_EQ(counts.rotary_kv_write, 1u);
  // The value arithmetic stays; k's extent is read from k, which k' has the shape of.
  EXPECT_EQ(names(p), (std::vector<std::string>{"SymSizeNode", "AddIntNode", "SymSizeNode", "AddIntNode", "wgml.RotaryKvWrite"}));
  EXPECT_EQ(std::get<wgml::ir::SymSizeNode>(std::get<wgml::ir::Node>(p.chains[0].instructions[0])).a.idx, 10u);
  const auto& op = std::get<wgml::ir::OnnxOp>(p.chains[0].instructions[4]);
  EXPECT_EQ(slots(op.inputs), (std::vector<uint32_t>{0, 10, 11, 1, 2, 12, 13}));
  EXPECT_EQ(slots(op.outputs), (std::vector<uint32_t>{20, 21, 12, 13}));
  ASSERT_EQ(op.value_attributes.size(), 1u);
  EXPECT_EQ(op.value_attributes[0].first, "start");
  EXPECT_EQ(op.value_attributes[0].second.idx, 0u);
  ASSERT_NE(op.attribute("k_axis"), nullptr);
  EXPECT_EQ(std::get<int64_t>(*op.attribute("k_axis")), 2);
  EXPECT_EQ(std::get<int64_t>(*op.attribute("half")), 2);
  // The parts recompute each write's stop into value slots of their own (5 to 8).
  ASSERT_TRUE(op.parts_chain);
  const auto& parts = p.chains.at(*op.parts_chain).instructions;
  ASSERT_EQ(parts.size(), 8u);
  EXPECT_EQ(wgml::ir::instruction_name(parts[0]), "wgml.RotateHalf");
  EXPECT_EQ(wgml::ir::instruction_name(parts[1]), "wgml.RotateHalf");
  EXPECT_EQ(p.num_values, 9u);
  const auto& k_write = std::get<wgml::ir::SliceUpdateNode>(std::get<wgml::ir::Node>(parts[4]));
  EXPECT_EQ(k_write.stop.vid.idx, 6u);
  EXPECT_EQ(std::get<wgml::ir::AddIntNode>(std::get<wgml::ir::Node>(parts[3])).b.vid.idx, 5u);
  EXPECT_EQ(std::get<wgml::ir::SliceUpdateNode>(std::get<wgml::ir::Node>(parts[7])).stop.vid.idx, 8u);
}

TEST(Fusion, AQOverwrittenBeforeTheWritesIsCopiedAsideAtItsRotation) {
  // Slot 0 (q) takes another value before the writes, as the first layer of an export reads the
  // cache position into q's slot.
  wgml::ir::Program p = rotary_kv_writes({instruction(wgml::ir::NegNode{Tid{10}, Tid{0}})});
  EXPECT_EQ(wgml::runtime::fuse_instructions(p).rotary_kv_write, 1u);
  EXPECT_EQ(names(p), (std::vector<std::string>{"IdCopyNode", "NegNode", "SymSizeNode", "AddIntNode", "SymSizeNode", "AddIntNode",
                                                "wgml.RotaryKvWrite"}));
  EXPECT_EQ(copy_at(p, 0), std::pair(0u, 48u));
  const auto& op = std::get<wgml::ir::OnnxOp>(p.chains[0].instructions.back());
  EXPECT_EQ(op.inputs[0]->idx, 48u);
  const auto& q_part = std::get<wgml::ir::OnnxOp>(p.chains.at(*op.parts_chain).instructions[0]);
  EXPECT_EQ(q_part.inputs[0]->idx, 48u);
}

TEST(Fusion, CacheWritesAtTwoStartsOrUpToAnotherStopAreLeftAlone) {
  wgml::ir::Program other_start = rotary_kv_writes();
  auto& v_write = std::get<wgml::ir::SliceUpdateNode>(std::get<wgml::ir::Node>(other_start.chains[0].instructions.back()));
  v_write.start = value(4);
  EXPECT_EQ(wgml::runtime::fuse_instructions(other_start).rotary_kv_write, 0u);
  // v's stop counts its extent along axis 1, not the axis it writes.
  wgml::ir::Program other_axis = rotary_kv_writes();
  auto& size = other_axis.chains[0].instructions[other_axis.chains[0].instructions.size() - 3];
  std::get<wgml::ir::SymSizeNode>(std::get<wgml::ir::Node>(size)).dim = 1;
  EXPECT_EQ(wgml::runtime::fuse_instructions(other_axis).rotary_kv_write, 0u);
}

TEST(Fusion, ARotationReadOrAStartChangedBeforeTheWritesKeepsThemApart) {
  // q' read before the writes: it cannot be made at the v write's place.
  wgml::ir::Program read = rotary_kv_writes({instruction(wgml::ir::NegNode{Tid{20}, Tid{22}})});
  read.outputs.push_back(wgml::ir::Slot{22, wgml::ir::SlotType::Tensor});
  EXPECT_EQ(wgml::runtime::fuse_instructions(read).rotary_kv_write, 0u);
  // The start written between the k and v writes (each still start + extent at its own write).
  wgml::ir::Program moved = rotary_kv_writes();
  auto& chain = moved.chains[0].instructions;
  chain.insert(chain.end() - 3, instruction(wgml::ir::AddIntNode{value(0), literal(1), Vid{0}}));
  EXPECT_EQ(wgml::runtime::fuse_instructions(moved).rotary_kv_write, 0u);
}

// rotary_kv_writes() then the attention over the caches up to the bound in value slot 5 (the start
// plus one, made after the writes, as an export makes it), q' its query, into slot 24: the output.
wgml::ir::Program rotary_attention(std::vector<wgml::ir::Instruction> before_attention = {}) {
  wgml::ir::Program p = rotary_kv_writes();
  auto& chain = p.chains[0].instructions;
  chain.push_back(instruction(wgml::ir::AddIntNode{value(0), literal(1), Vid{5}}));
  for (auto& i : before_attention) chain.push_back(std::move(i));
  chain.push_back(instruction(wgml::ir::SliceNode{Tid{12}, Tid{22}, literal(2), literal(0), value(5), 1}));
  chain.push_back(instruction(wgml::ir::SliceNode{Tid{13}, Tid{23}, literal(2), literal(0), value(5), 1}));
  chain.push_back(instruction(wgml::ir::SdpaNode{Tid{20}, Tid{22}, Tid{23}, Tid{24}, 0.5f, std::nullopt, false}));
  p.outputs = {wgml::ir::Slot{24, wgml::ir::SlotType::Tensor}};
  p.num_values = 6;
  return p;
}

TEST(Fusion, ARotaryWriteAndTheAttentionOverItsCachesFuseAtTheAttention) {
  wgml::ir::Program p = rotary_attention();
  const wgml::runtime::FusionCounts counts = wgml::runtime::fuse_instructions(p);
  EXPECT_EQ(counts.rotary_kv_write, 1u);
  EXPECT_EQ(counts.cache_attention, 1u);
  EXPECT_EQ(counts.rotary_sdpa, 1u);
  EXPECT_EQ(names(p), (std::vector<std::string>{"SymSizeNode", "AddIntNode", "SymSizeNode", "AddIntNode", "AddIntNode",
                                                "wgml.RotarySdpa"}));
  const auto& op = std::get<wgml::ir::OnnxOp>(p.chains[0].instructions.back());
  EXPECT_EQ(slots(op.inputs), (std::vector<uint32_t>{0, 10, 11, 1, 2, 12, 13}));
  EXPECT_EQ(slots(op.outputs), (std::vector<uint32_t>{24, 12, 13}));
  ASSERT_EQ(op.value_attributes.size(), 2u);
  EXPECT_EQ(op.value_attributes[0].first, "start");
  EXPECT_EQ(op.value_attributes[1].first, "kvStop");
  EXPECT_EQ(op.value_attributes[1].second.idx, 5u);
  ASSERT_NE(op.attribute("scale"), nullptr);
  ASSERT_NE(op.attribute("half"), nullptr);
  // Its parts: the rotary write and the attention, q' and k' in slots of their own.
  ASSERT_TRUE(op.parts_chain);
  const auto& parts = p.chains.at(*op.parts_chain).instructions;
  ASSERT_EQ(parts.size(), 2u);
  const auto& write = std::get<wgml::ir::OnnxOp>(parts[0]);
  const auto& attention = std::get<wgml::ir::OnnxOp>(parts[1]);
  EXPECT_EQ(write.op_type, "RotaryKvWrite");
  EXPECT_EQ(attention.op_type, "Sdpa");
  EXPECT_EQ(attention.inputs[0]->idx, write.outputs[0]->idx);
  EXPECT_GE(write.outputs[0]->idx, 48u);
  EXPECT_GE(write.outputs[1]->idx, 48u);
}

TEST(Fusion, InputsAndTheStartReusedBeforeTheAttentionAreCopiedAsideAtTheWrite) {
  // k's and v's slots and the start's value slot written between the write and the attention.
  wgml::ir::Program p =
      rotary_attention({instruction(wgml::ir::NegNode{Tid{1}, Tid{10}}), instruction(wgml::ir::NegNode{Tid{2}, Tid{11}}),
                        instruction(wgml::ir::AddIntNode{value(5), literal(7), Vid{0}})});
  EXPECT_EQ(wgml::runtime::fuse_instructions(p).rotary_sdpa, 1u);
  const auto& main = p.chains[0].instructions;
  EXPECT_EQ(names(p),
            (std::vector<std::string>{"SymSizeNode", "AddIntNode", "SymSizeNode", "AddIntNode", "IdCopyNode", "IdCopyNode",
                                      "AddIntNode", "AddIntNode", "NegNode", "NegNode", "AddIntNode", "wgml.RotarySdpa"}));
  EXPECT_EQ(copy_at(p, 4), std::pair(10u, 48u));
  EXPECT_EQ(copy_at(p, 5), std::pair(11u, 49u));
  const auto& start_copy = std::get<wgml::ir::AddIntNode>(std::get<wgml::ir::Node>(main[6]));
  EXPECT_EQ(start_copy.a.vid.idx, 0u);
  const auto& op = std::get<wgml::ir::OnnxOp>(main.back());
  EXPECT_EQ(op.inputs[1]->idx, 48u);
  EXPECT_EQ(op.inputs[2]->idx, 49u);
  EXPECT_EQ(op.value_attributes[0].second.idx, start_copy.out.idx);
  const auto& write = std::get<wgml::ir::OnnxOp>(p.chains.at(*op.parts_chain).instructions[0]);
  EXPECT_EQ(write.inputs[1]->idx, 48u);
  EXPECT_EQ(write.value_attributes[0].second.idx, start_copy.out.idx);
}

TEST(Fusion, ARotatedKeyReadOrACacheTouchedBeforeTheAttentionKeepsThemApart) {
  wgml::ir::Program read = rotary_attention({instruction(wgml::ir::NegNode{Tid{21}, Tid{25}})});
  read.outputs.push_back(wgml::ir::Slot{25, wgml::ir::SlotType::Tensor});
  EXPECT_EQ(wgml::runtime::fuse_instructions(read).rotary_sdpa, 0u);
  wgml::ir::Program touched = rotary_attention({instruction(wgml::ir::NegNode{Tid{12}, Tid{25}})});
  EXPECT_EQ(wgml::runtime::fuse_instructions(touched).rotary_sdpa, 0u);
}

wgml::ir::IntOrVidOrTid index_tensor(uint32_t t) {
  return wgml::ir::IntOrVidOrTid{0, {}, Tid{t}, wgml::ir::IntOrVidOrTid::Tensor};
}

// A 4-bit embedding's lookup: rows of the table (slot 0), its scales (1) and biases (2) taken by the
// ids in slot 3 (into 5, 6, 7), dequantized into slot 4.
std::vector<wgml::ir::Instruction> embedding_lookup(uint32_t biases_ids = 3) {
  return {instruction(wgml::ir::TakeNode{Tid{0}, Tid{5}, index_tensor(3), 0}),
          instruction(wgml::ir::TakeNode{Tid{1}, Tid{6}, index_tensor(3), 0}),
          instruction(wgml::ir::TakeNode{Tid{2}, Tid{7}, index_tensor(biases_ids), 0}),
          instruction(wgml::ir::DequantizeNode{Tid{5}, Tid{6}, Tid{4}, Tid{7}, 64, 4, "affine", std::nullopt, std::nullopt})};
}

TEST(Fusion, AQuantizedEmbeddingsLookupDequantizesTheGatheredRowsInOneOp) {
  wgml::ir::Program p = program_of(embedding_lookup(), {4});
  EXPECT_EQ(wgml::runtime::fuse_instructions(p).gathered_dequantize, 1u);
  ASSERT_EQ(names(p), std::vector<std::string>{"mlx.Dequantize"});
  const auto& op = std::get<wgml::ir::OnnxOp>(p.chains[0].instructions[0]);
  ASSERT_EQ(op.inputs.size(), 5u);  // w, scales, biases, global_scale, rows
  EXPECT_EQ(op.inputs[0]->idx, 0u);
  EXPECT_EQ(op.inputs[1]->idx, 1u);
  EXPECT_EQ(op.inputs[2]->idx, 2u);
  EXPECT_FALSE(op.inputs[3]);
  EXPECT_EQ(op.inputs[4]->idx, 3u);
  EXPECT_EQ(op.outputs.at(0)->idx, 4u);
  EXPECT_EQ(p.chains.at(*op.parts_chain).instructions.size(), 4u);
}

TEST(Fusion, RowsTakenByDifferentIdsAreNoLookup) {
  wgml::ir::Program p = program_of(embedding_lookup(8), {4});
  EXPECT_EQ(wgml::runtime::fuse_instructions(p).gathered_dequantize, 0u);
  EXPECT_EQ(p.chains[0].instructions.size(), 4u);
}

}  // namespace
