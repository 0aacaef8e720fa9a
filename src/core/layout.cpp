#include "core/layout.h"

#include <cstring>

#include "wgml/error.h"

namespace wgml {
namespace {

// Splits a shape around `axis` into (outer, axis size, inner) element counts.
struct AxisSplit {
  int64_t outer = 1, size = 1, inner = 1;
};

AxisSplit split_at(const Shape& shape, int axis) {
  AxisSplit s;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
    if (d < axis)
      s.outer *= shape[d];
    else if (d == axis)
      s.size = shape[d];
    else
      s.inner *= shape[d];
  }
  return s;
}

std::string shape_string(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

}  // namespace

int normalize_axis(int axis, int rank) {
  const int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    throw Error(ErrorCode::Runtime,
                "axis " + std::to_string(axis) + " is out of range for a tensor of rank " + std::to_string(rank));
  return a;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

Tensor take_index(const Tensor& x, int axis, int64_t index) {
  const AxisSplit s = split_at(x.shape(), axis);
  if (index < 0 || index >= s.size)
    throw Error(ErrorCode::Runtime, "index " + std::to_string(index) + " out of range for axis " + std::to_string(axis) +
                                        " of size " + std::to_string(s.size));
  Shape shape = x.shape();
  shape.erase(shape.begin() + axis);
  Tensor out(x.dtype(), shape);
  const size_t row = static_cast<size_t>(s.inner) * dtype_size(x.dtype());
  uint8_t* dst = out.mutable_data();
  for (int64_t o = 0; o < s.outer; ++o) std::memcpy(dst + o * row, x.data() + (o * s.size + index) * row, row);
  return out;
}

Tensor stack(const std::vector<Tensor>& parts, int axis) {
  if (parts.empty()) throw Error(ErrorCode::Runtime, "stack of zero tensors");
  const Shape& base = parts[0].shape();
  std::vector<Tensor> expanded;
  Shape with_axis = base;
  const int a = normalize_axis(axis, static_cast<int>(base.size()) + 1);
  with_axis.insert(with_axis.begin() + a, 1);
  for (const Tensor& p : parts) {
    if (p.shape() != base || p.dtype() != parts[0].dtype())
      throw Error(ErrorCode::Runtime, "stack: expected every tensor to have shape " + shape_string(base) +
                                          " and one dtype, found " + shape_string(p.shape()));
    expanded.push_back(p.reshaped(with_axis));
  }
  return concatenate(expanded, a);
}

Tensor concatenate(const std::vector<Tensor>& parts, int axis) {
  if (parts.empty()) throw Error(ErrorCode::Runtime, "concatenate of zero tensors");
  const int rank = parts[0].rank();
  const int a = normalize_axis(axis, rank);
  Shape shape = parts[0].shape();
  shape[a] = 0;
  for (const Tensor& p : parts) {
    Shape other = p.shape();
    if (p.rank() != rank || p.dtype() != parts[0].dtype())
      throw Error(ErrorCode::Runtime, "concatenate: expected tensors of one rank and dtype");
    other[a] = shape[a] = shape[a] + p.shape()[a];
    for (int d = 0; d < rank; ++d)
      if (d != a && other[d] != shape[d])
        throw Error(ErrorCode::Runtime, "concatenate: shape " + shape_string(p.shape()) + " does not match " +
                                            shape_string(parts[0].shape()) + " outside axis " + std::to_string(a));
  }
  Tensor out(parts[0].dtype(), shape);
  const AxisSplit total = split_at(shape, a);
  const size_t elem = dtype_size(out.dtype());
  uint8_t* dst = out.mutable_data();
  int64_t offset = 0;
  for (const Tensor& p : parts) {
    const AxisSplit s = split_at(p.shape(), a);
    const size_t chunk = static_cast<size_t>(s.size * s.inner) * elem;
    for (int64_t o = 0; o < s.outer; ++o)
      std::memcpy(dst + ((o * total.size + offset) * total.inner) * elem, p.data() + o * chunk, chunk);
    offset += s.size;
  }
  return out;
}

}  // namespace wgml
