#include "backend/cpu/strided.h"

#include <algorithm>
#include <cstring>

#include "core/layout.h"
#include "runtime/exec_context.h"

namespace wgml::backend::cpu {

Tensor gather_strided(const Tensor& x, const Shape& shape, const Shape& strides, int64_t offset) {
  Tensor out(x.dtype(), shape);
  if (out.numel() == 0) return out;
  int64_t lo = offset, hi = offset;
  for (size_t d = 0; d < shape.size(); ++d) {
    const int64_t span = (shape[d] - 1) * strides[d];
    (span < 0 ? lo : hi) += span;
  }
  if (lo < 0 || hi >= x.numel())
    runtime::fail("strided view addresses elements [" + std::to_string(lo) + ", " + std::to_string(hi) +
                  "] outside a tensor of " + std::to_string(x.numel()) + " elements");
  const size_t elem = dtype_size(x.dtype());
  Shape index(shape.size(), 0);
  int64_t src = offset;
  uint8_t* dst = out.mutable_data();
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::memcpy(dst + i * elem, x.data() + src * elem, elem);
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      src += strides[d];
      if (++index[d] < shape[d]) break;
      src -= strides[d] * index[d];
      index[d] = 0;
    }
  }
  return out;
}

namespace {

template <class Axes>
Tensor permuted(const Tensor& x, const Axes& perm) {
  const Shape in_strides = contiguous_strides(x.shape());
  Shape shape, strides;
  for (const auto p : perm) {
    shape.push_back(x.dim(static_cast<int>(p)));
    strides.push_back(in_strides[static_cast<size_t>(p)]);
  }
  return gather_strided(x, shape, strides, 0);
}

}  // namespace

Tensor permute(const Tensor& x, const std::vector<int>& perm) { return permuted(x, perm); }

Tensor permute(const Tensor& x, const Shape& perm) { return permuted(x, perm); }

Shape checked_permutation(const std::vector<int32_t>& perm, int rank) {
  if (static_cast<int>(perm.size()) != rank)
    runtime::fail("Transpose: perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(rank));
  Shape axes, seen(static_cast<size_t>(rank), 0);
  for (int32_t p : perm) {
    const int a = normalize_axis(p, rank);
    if (seen[a]) runtime::fail("Transpose: axis " + std::to_string(a) + " repeats in perm");
    seen[a] = true;
    axes.push_back(a);
  }
  return axes;
}

bool keeps_memory_order(const Shape& shape, const Shape& perm) {
  int64_t last = -1;
  for (const int64_t a : perm) {
    if (shape[a] == 1) continue;
    if (a < last) return false;
    last = a;
  }
  return true;
}

SliceRange normalize_slice(int64_t start, int64_t stop, int64_t step, int64_t dim) {
  if (step == 0) runtime::fail("slice step must not be zero");
  SliceRange r;
  r.step = step;
  auto clamp_index = [&](int64_t v, int64_t lo, int64_t hi) {
    if (v < 0) v += dim;
    return std::clamp(v, lo, hi);
  };
  if (step > 0) {
    const int64_t s = clamp_index(start, 0, dim), e = clamp_index(stop, 0, dim);
    r.start = s;
    r.count = e > s ? (e - s + step - 1) / step : 0;
  } else {
    const int64_t s = clamp_index(start, -1, dim - 1), e = clamp_index(stop, -1, dim - 1);
    r.start = s;
    r.count = s > e ? (s - e - step - 1) / -step : 0;
  }
  return r;
}

}  // namespace wgml::backend::cpu
