#pragma once
// Broadcasting and dtype promotion with MLX's rules, for the CPU reference kernels.
#include <vector>

#include "wgml/tensor.h"

namespace wgml::backend::cpu {

Shape broadcast_shapes(const Shape& a, const Shape& b);

// Walks the elements of an output shape and yields, for each, the element offset into an input
// broadcast to it.
class BroadcastIndex {
 public:
  BroadcastIndex(const Shape& input, const Shape& output);
  int64_t offset() const { return offset_; }
  void next();

 private:
  Shape out_;
  Shape strides_;  // input strides aligned to output dims, 0 where broadcast
  Shape index_;
  int64_t offset_ = 0;
};

// MLX's promote_types.
DType promote_types(DType a, DType b);

// A tensor broadcast to `shape` and made dense.
Tensor broadcast_to(const Tensor& x, const Shape& shape);

}  // namespace wgml::backend::cpu
