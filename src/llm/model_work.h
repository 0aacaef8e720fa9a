#pragma once
// What one call of an LLM program does, counted from the program itself, so that a benchmark can
// put its times against the device's rooflines: the weight bytes a decode step streams (memory
// bound) and the multiply-adds of its matrix products (what bounds a prompt's calls).
#include <cstdint>

#include "ir/program.h"

namespace wgml::llm {

struct ModelWork {
  // Every constant as loaded (init-chain outputs at their computed size) except tables only
  // gathered from (an untied embedding: a step reads one row): what a decode step reads.
  uint64_t weight_bytes_per_step = 0;
  // Weight elements of the matrix products whose weight is a constant (Addmm's mat2, a
  // QuantizedMatmul's w at its bits per value), split by the rows they multiply: rows whose count
  // the call's tokens set, and rows of a static count (the lm_head of a program that makes only
  // the last row's logits runs once a call).
  uint64_t product_elements_per_token = 0;
  uint64_t product_elements_per_call = 0;

  // The flop of the products of a prompt of `tokens` tokens fed in `calls` calls (2 per
  // multiply-add; attention's products are not counted).
  double product_flop(int64_t tokens, int64_t calls) const;
};

ModelWork model_work(const ir::Program& program);

}  // namespace wgml::llm
