#pragma once
// Strided element gathers: the one primitive behind transpose, slice, broadcast and as_strided
// on the CPU reference.
#include <vector>

#include "wgml/tensor.h"

namespace wgml::backend::cpu {

// out[i_0..i_n] = flat(x)[offset + sum_k i_k * strides[k]] (strides in elements, may be 0 or
// negative). Throws when any addressed element lies outside x.
Tensor gather_strided(const Tensor& x, const Shape& shape, const Shape& strides, int64_t offset);

// x with its axes reordered: out axis i is x axis perm[i].
Tensor permute(const Tensor& x, const std::vector<int>& perm);
Tensor permute(const Tensor& x, const Shape& perm);

// A Transpose node's perm for a tensor of `rank`, each axis normalised; throws on a wrong length
// or a repeated axis.
Shape checked_permutation(const std::vector<int32_t>& perm, int rank);

// Whether permuting by `perm` (checked) leaves every element of a contiguous `shape` at its place:
// the axes it moves out of order all have size 1.
bool keeps_memory_order(const Shape& shape, const Shape& perm);

// Resolved python-style slice of one axis: `count` elements from `start` by `step`.
struct SliceRange {
  int64_t start = 0, step = 1, count = 0;
};
SliceRange normalize_slice(int64_t start, int64_t stop, int64_t step, int64_t dim);

}  // namespace wgml::backend::cpu
