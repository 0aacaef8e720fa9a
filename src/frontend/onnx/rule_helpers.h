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
ir::Tid slice_axis(NodeLowering& n, ir::Tid x, int axis, ir::IntOrVid start, ir::IntOrVid stop, int32_t step = 1);
ir::Tid expand_dims(NodeLowering& n, ir::Tid x, int axis);
ir::Tid concat_op(NodeLowering& n, const std::vector<ir::Tid>& parts, int axis);
ir::Tid matmul_op(NodeLowering& n, ir::Tid a, ir::Tid b);         // batched, broadcast batch dims
ir::Tid arange(NodeLowering& n, ir::IntOrVid stop, DType dtype);  // 0, 1, ..., stop - 1
ir::Tid squeeze_axes(NodeLowering& n, ir::Tid x, const std::vector<int>& axes);

// ONNX Runtime's block-quantized weights (MatMulNBits' B, GatherBlockQuantized's data) in MLX's
// affine layout: `rows` rows of `k` unsigned `bits`-bit values packed from the low bits into
// k * bits / 8 bytes, a scale per block of `block` values, and optional zero points (uint8 packed
// like the values, one row's blocks after another, each row starting at a byte; or of the scales'
// type; 2^(bits-1) where absent). The packed bytes read as little-endian uint32 words are MLX's
// layout; (q - zero) * scale is scale * q + bias with bias = -zero * scale.
struct AffineWeights {
  Tensor words;   // uint32 [rows, k * bits / 32]
  Tensor scales;  // `dtype` [rows, k / block]
  Tensor biases;  // `dtype` [rows, k / block]
};
AffineWeights affine_weights(NodeLowering& n, const Tensor& packed, const Tensor& scales, const Tensor* zero_points, int64_t rows,
                             int64_t k, int64_t bits, int64_t block, DType dtype);

// Rows `ids` (an integer tensor of any shape) of a table: Take along axis 0.
ir::Tid take_rows(NodeLowering& n, ir::Tid table, ir::Tid ids);

// Rotary position embedding (rules_attention.cpp): the first `dims` of each head's `head_size`
// values rotated pairwise, halves (x[i], x[i + dims/2]) or, interleaved, neighbours (x[2i],
// x[2i+1]); the rest passed through.
struct Rotation {
  int64_t dims;
  int64_t head_size;
  bool interleaved;
};
// h [B, S, heads, head_size] rotated by cos and sin [B or 1, S, dims / 2] (one angle per position
// and pair, the same for every head), as ONNX's and ONNX Runtime's RotaryEmbedding define it.
ir::Tid rotate_heads(NodeLowering& n, ir::Tid h, ir::Tid cos, ir::Tid sin, const Rotation& r, DType t);

// ONNX Conv of x [N, C, spatial...] with w [M, C/group, kernel...] (the node's attributes), as an
// mlx Conv node between channels-last transposes; bias [M] optional.
Value convolution(NodeLowering& n, const Value& x, const Value& w, std::optional<ir::Tid> bias);

// A constant with its axes reordered (out axis i is axis perm[i]): weights are laid out for the
// mlx nodes once, at load time.
Tensor permute_constant(const Tensor& t, const std::vector<int>& perm);

// Keeps the node in the ai.onnx domain (its CPU kernel implements ONNX's definition); output i
// gets dtypes[i] and dims[i].
void keep(NodeLowering& n, const std::vector<DType>& dtypes, const std::vector<Dims>& dims);
// Keeps an element-wise node: one output of `dtype`, dims broadcast over all inputs.
void keep_elementwise(NodeLowering& n, DType dtype);

// Whether input `input` is present but known only at run time (a graph input, say): ops whose
// axes or shape come that way stay in the ai.onnx domain, where their kernel reads them.
bool known_only_at_run_time(NodeLowering& n, size_t input);
// Keeps the node with one output of `dtype` and `rank` dims unknown at load time.
void keep_with_rank(NodeLowering& n, DType dtype, int rank);
// The length of a 1-D input, which must be known at load time.
int64_t static_length(NodeLowering& n, size_t input, const std::string& what);

// Axes of a reduction or squeeze: from the attribute (older opsets) or input `input`.
std::optional<std::vector<int64_t>> axes_attr_or_input(NodeLowering& n, int since_opset_as_input, size_t input);

}  // namespace wgml::frontend::onnx
