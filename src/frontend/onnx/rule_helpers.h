#pragma once
// Small building blocks the op rules share: broadcasting of known dims, one-node emitters for
// nodes with more than two operands, and keeping an op in the ai.onnx domain.
#include <optional>
#include <vector>

#include "frontend/onnx/lowering.h"

namespace wgml::frontend::onnx {

// Multidirectional (numpy) broadcasting of dims known at load time.
Dims broadcast_dims(const Dims& a, const Dims& b);
// A tensor's element as a double (0-D or one-element tensors).
double load_scalar(const Tensor& t);
ir::IntOrVid literal(int64_t v);

ir::Tid where_op(NodeLowering& n, ir::Tid condition, ir::Tid x, ir::Tid y);
ir::Tid clip_op(NodeLowering& n, ir::Tid x, std::optional<ir::Tid> lo, std::optional<ir::Tid> hi);
ir::Tid full_like(NodeLowering& n, ir::Tid x, double v, DType dtype);
ir::Tid full(NodeLowering& n, const std::vector<ir::IntOrVid>& shape, double v, DType dtype);
// A 0-D tensor holding a value slot (or literal), e.g. a dimension known only at run time.
ir::Tid scalar_of(NodeLowering& n, ir::IntOrVid v, DType dtype);
ir::Tid slice_axis(NodeLowering& n, ir::Tid x, int axis, ir::IntOrVid start, ir::IntOrVid stop,
                   int32_t step = 1);
ir::Tid expand_dims(NodeLowering& n, ir::Tid x, int axis);
ir::Tid squeeze_axes(NodeLowering& n, ir::Tid x, const std::vector<int>& axes);

// A constant with its axes reordered (out axis i is axis perm[i]): weights are laid out for the
// mlx nodes once, at load time.
Tensor permute_constant(const Tensor& t, const std::vector<int>& perm);

// Keeps the node in the ai.onnx domain (its CPU kernel implements ONNX's definition); output i
// gets dtypes[i] and dims[i].
void keep(NodeLowering& n, const std::vector<DType>& dtypes, const std::vector<Dims>& dims);
// Keeps an element-wise node: one output of `dtype`, dims broadcast over all inputs.
void keep_elementwise(NodeLowering& n, DType dtype);

// Axes of a reduction or squeeze: from the attribute (older opsets) or input `input`.
std::optional<std::vector<int64_t>> axes_attr_or_input(NodeLowering& n, int since_opset_as_input,
                                                       size_t input);

}  // namespace wgml::frontend::onnx
