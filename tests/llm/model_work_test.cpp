// What a call of an LLM program does, counted from the program (src/llm/model_work.h), against the
// shapes of the models the programs were exported from.
#include "llm/model_work.h"

#include <gtest/gtest.h>

#include "frontend/pte/pte_file.h"
#include "io/bytes.h"
#include "ir/payload.h"

namespace {

const std::string kSource = WGML_SOURCE_DIR;

wgml::ir::Program payload_program(const std::string& path) { return wgml::ir::read_payload(wgml::io::map_file(path), path); }

wgml::ir::Program pte_program(const std::string& path) {
  const wgml::frontend::PteContents pte = wgml::frontend::read_pte(wgml::io::map_file(path), path);
  return wgml::ir::read_payload(pte.payload, pte.payload_name);
}

// A Llama's matrix products, in weight elements a token: per layer q, k, v and o, gate, up and
// down; then the lm_head (vocab x hidden).
uint64_t llama_product_elements(uint64_t layers, uint64_t hidden, uint64_t q_width, uint64_t kv_width, uint64_t mlp,
                                uint64_t vocab) {
  return layers * (2 * hidden * q_width + 2 * hidden * kv_width + 3 * hidden * mlp) + vocab * hidden;
}

TEST(ModelWork, TinyLlamaCountsEveryLinearAndTheLogitsOfEveryRow) {
  // hidden 64, 2 layers, 4 heads and 2 KV heads of 16, MLP 128, vocab 512, tied embeddings. The
  // export makes the logits of every row ([1, T, 512]), so the lm_head multiplies every token.
  const wgml::llm::ModelWork work = wgml::llm::model_work(pte_program(kSource + "/tests/fixtures/llm/tiny-llama-fp32/model.pte"));
  EXPECT_EQ(work.product_elements_per_token, llama_product_elements(2, 64, 64, 32, 128, 512));
  EXPECT_EQ(work.product_elements_per_call, 0u);
  EXPECT_DOUBLE_EQ(work.product_flop(8, 1), 2.0 * 8 * 106496);
  // Every constant is read a step: the embedding is the lm_head too, so it is not gathered only.
  EXPECT_EQ(work.weight_bytes_per_step, 427304u);
}

TEST(ModelWork, Llama1bDenseAndFourBitMultiplyTheSameElements) {
  // Llama-3.2-1B: hidden 2048, 16 layers, 32 heads and 8 KV heads of 64, MLP 8192, vocab 128256.
  const uint64_t elements = llama_product_elements(16, 2048, 2048, 512, 8192, 128256);
  const std::string programs = kSource + "/bench/llm_decode/programs/";
  const wgml::llm::ModelWork dense = wgml::llm::model_work(payload_program(programs + "llama-1b-bf16.mlxg"));
  const wgml::llm::ModelWork four_bit = wgml::llm::model_work(payload_program(programs + "llama-1b-bf16-4w.mlxg"));
  EXPECT_EQ(dense.product_elements_per_token, elements);
  // Packed 4-bit words count 8 elements each.
  EXPECT_EQ(four_bit.product_elements_per_token, elements);
  // bfloat16 weights, 2 bytes an element (the tied embedding once), the 33 norms of 2048, and a few
  // small tables (RoPE's frequencies).
  const uint64_t weights_and_norms = 2 * (elements + 33 * 2048);
  EXPECT_GE(dense.weight_bytes_per_step, weights_and_norms);
  EXPECT_LT(dense.weight_bytes_per_step, weights_and_norms + 1024);
  // 4 bits an element, with a bfloat16 scale and bias per 32 (and the norms): about a third.
  EXPECT_LT(four_bit.weight_bytes_per_step, dense.weight_bytes_per_step / 3);
}

}  // namespace
