#pragma once
// Fused ops: a run of main-chain instructions that a GPU runs as one kernel, found once at load.
// Each fused op is an ir::OnnxOp in the domain of the spec that computes it ("mlx" where an
// existing spec does, "wgml" for a kernel of its own) that keeps the instructions it replaces as a
// chain of their own (`parts_chain`): a backend without a kernel for it, or a request its kernel
// does not fit (a dtype, a shape), runs those instructions as exported, so a fused program means
// exactly what the original does.
#include "ir/program.h"

namespace wgml::runtime {

struct FusionCounts {
  // x * cos + rotate_half(x) * sin (Hugging Face RoPE) -> wgml.RotateHalf
  size_t rotate_half = 0;
  // Add(Addmm(a, b), r) -> mlx.Addmm with bias r; Add(QuantizedMatmul, r) -> mlx.QuantizedMatmul
  // with addend r
  size_t residual_product = 0;
  // Sdpa(q, Slice(k_cache, 0, n), Slice(v_cache, 0, n)) -> mlx.Sdpa reading the caches up to n
  size_t cache_attention = 0;
  // QuantizedMatmul(Multiply(Silu(g), u)) -> mlx.QuantizedMatmul of g with `up` u (where g and u
  // are not the products of one x that swiglu takes)
  size_t gated_product = 0;
  // Multiply(Silu(x @ w_gate), x @ w_up) -> wgml.QuantizedSwiGlu (both 4-bit) or wgml.MatmulSwiGlu
  // (both Addmm without a bias): the gate and up projections as one product
  size_t swiglu = 0;
  // Three QuantizedMatmul of one x, weights quantized alike -> wgml.QuantizedProducts (a Llama
  // attention's q, k and v projections), at the place of the first
  size_t products = 0;
  // Three Addmm without a bias of one mat1 -> wgml.MatmulProducts (dense q, k and v), at the place
  // of the first (a later weight's Transpose made again there)
  size_t dense_products = 0;
  // Dequantize(Take(w, i), Take(scales, i), Take(biases, i)) -> mlx.Dequantize of the tables with
  // `rows` i (a quantized embedding's lookup)
  size_t gathered_dequantize = 0;
  // RotateHalf(q), RotateHalf(k) and the k and v cache writes at one start, each up to start +
  // its extent -> wgml.RotaryKvWrite (a second stage, over the RotateHalf ops the first made)
  size_t rotary_kv_write = 0;
  // RotaryKvWrite and the Sdpa over the caches it writes, reading its q' -> wgml.RotarySdpa (a
  // third stage, over the second's)
  size_t rotary_sdpa = 0;
};

// Rewrites `p`'s main chain in place; returns what it fused. A pattern is fused only when each of
// its intermediate values is read by the pattern alone and its inputs keep their values until the
// place of its last instruction, where the fused op goes (products of one x: the place of the
// first, where every later product's inputs are made and no output's slot is in use).
FusionCounts fuse_instructions(ir::Program& p);

}  // namespace wgml::runtime
