#pragma once
// Element-wise access to tensor bytes of any dtype, through double (floats) or int64 (integers).
// The CPU reference and the runtime's casts use these; they favour clarity over speed.
#include <cstdint>
#include <span>
#include <vector>

#include "wgml/tensor.h"

namespace wgml {

double load_as_double(DType t, const uint8_t* base, int64_t i);
int64_t load_as_int64(DType t, const uint8_t* base, int64_t i);
// Stores with the target dtype's conversion rules: floats round to nearest even, integers wrap
// (two's complement), float-to-integer truncates toward zero (NaN -> 0, saturating at the
// int64 range first), anything-to-bool is "nonzero".
void store_double(DType t, uint8_t* base, int64_t i, double v);
void store_int64(DType t, uint8_t* base, int64_t i, int64_t v);

// A copy of `x` converted to `dtype` (a plain copy when the dtypes match).
Tensor cast(const Tensor& x, DType dtype);

// x's elements as floats, in flat order (a logits row for sampling, a weight widened for the GPU):
// one conversion per element for float32, bfloat16 and float16, through double for the rest. The
// second form writes x.numel() floats to `out`.
std::vector<float> to_floats(const Tensor& x);
void to_floats(const Tensor& x, float* out);

// Greedy decoding's pick: the index of the largest value, NaN above every number, the first among
// equals (MLX's argmax; the GPU's wgml.GreedyToken picks the same). -1 when `values` is empty.
int64_t greedy_index(std::span<const float> values);

}  // namespace wgml
