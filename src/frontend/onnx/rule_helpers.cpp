#include "frontend/onnx/rule_helpers.h"

#include <cstring>

#include "core/elements.h"
#include "core/layout.h"

namespace wgml::frontend::onnx {

using namespace ir;

Dims broadcast_dims(const Dims& a, const Dims& b) {
  const size_t rank = std::max(a.size(), b.size());
  Dims out(rank, kUnknownDim);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == 1)
      out[i] = db;
    else if (db == 1)
      out[i] = da;
    else if (da >= 0)
      out[i] = da;  // equal where both are known, or the known one
    else
      out[i] = db;
  }
  return out;
}

double load_scalar(const Tensor& t) {
  if (t.numel() < 1) throw Error(ErrorCode::InvalidProgram, "expected a scalar, found an empty tensor");
  return load_as_double(t.dtype(), t.data(), 0);
}

IntOrVid literal(int64_t v) { return IntOrVid{v, {}, false}; }

Tid where_op(NodeLowering& n, Tid condition, Tid x, Tid y) {
  const Tid out = n.g.new_temp();
  n.g.emit(WhereNode{.condition = condition, .x = x, .y = y, .out = out});
  return out;
}

Tid clip_op(NodeLowering& n, Tid x, std::optional<Tid> lo, std::optional<Tid> hi) {
  const Tid out = n.g.new_temp();
  n.g.emit(ClipNode{.x = x, .out = out, .a_min = lo, .a_max = hi});
  return out;
}

Tid full_like(NodeLowering& n, Tid x, double v, DType dtype) {
  const Tid out = n.g.new_temp();
  const auto st = scalar_type(dtype);
  if (!st) n.unsupported("a fill of dtype " + std::string(dtype_name(dtype)));
  n.g.emit(FullLikeNode{.x = x, .out = out, .v = FloatOrVid{v, {}, false}, .scalar_type = *st});
  return out;
}

Tid full(NodeLowering& n, const std::vector<IntOrVid>& shape, double v, DType dtype) {
  const Tid out = n.g.new_temp();
  const auto st = scalar_type(dtype);
  if (!st) n.unsupported("a fill of dtype " + std::string(dtype_name(dtype)));
  n.g.emit(FullNode{.out = out, .shape = shape, .v = FloatOrVid{v, {}, false}, .scalar_type = *st});
  return out;
}

Tid scalar_of(NodeLowering& n, IntOrVid v, DType dtype) {
  if (!v.is_vid) return n.scalar(static_cast<double>(v.literal), dtype);
  // ARange gives the exact integer; a Full would pass it through float32.
  const auto st = scalar_type(DType::Int64);
  const Tid one = n.g.new_temp();
  n.g.emit(ARangeNode{.out = one, .start = v, .stop = n.g.add(v, literal(1)), .step = literal(1), .scalar_type = *st});
  return n.cast(n.reshape(one, {}), DType::Int64, dtype);
}

Tid slice_axis(NodeLowering& n, Tid x, int axis, IntOrVid start, IntOrVid stop, int32_t step) {
  const Tid out = n.g.new_temp();
  n.g.emit(SliceNode{.x = x, .out = out, .axis = literal(axis), .start = start, .stop = stop, .step = step});
  return out;
}

Tid expand_dims(NodeLowering& n, Tid x, int axis) {
  const Tid out = n.g.new_temp();
  n.g.emit(ExpandDimsNode{.x = x, .out = out, .axis = axis});
  return out;
}

Tid concat_op(NodeLowering& n, const std::vector<Tid>& parts, int axis) {
  const Tid out = n.g.new_temp();
  n.g.emit(ConcatenateNode{.tensors = parts, .out = out, .axis = axis});
  return out;
}

Tid matmul_op(NodeLowering& n, Tid a, Tid b) {
  const Tid out = n.g.new_temp();
  n.g.emit(AddmmNode{.mat1 = a, .mat2 = b, .out = out});
  return out;
}

Tid arange(NodeLowering& n, IntOrVid stop, DType dtype) {
  const auto st = scalar_type(dtype);
  if (!st) n.unsupported("an index range of dtype " + std::string(dtype_name(dtype)));
  const Tid out = n.g.new_temp();
  n.g.emit(ARangeNode{.out = out, .start = literal(0), .stop = stop, .step = literal(1), .scalar_type = *st});
  return out;
}

Tid squeeze_axes(NodeLowering& n, Tid x, const std::vector<int>& axes) {
  const Tid out = n.g.new_temp();
  n.g.emit(SqueezeNode{.x = x, .out = out, .dims = {axes.begin(), axes.end()}});
  return out;
}

Tensor permute_constant(const Tensor& t, const std::vector<int>& perm) {
  Shape shape;
  for (int p : perm) shape.push_back(t.dim(p));
  Tensor out(t.dtype(), shape);
  const size_t element = dtype_size(t.dtype());
  const std::vector<int64_t> in_strides = contiguous_strides(t.shape());
  std::vector<int64_t> index(perm.size(), 0);
  uint8_t* dst = out.mutable_data();
  for (int64_t o = 0; o < out.numel(); ++o) {
    int64_t src = 0;
    for (size_t d = 0; d < perm.size(); ++d) src += index[d] * in_strides[perm[d]];
    std::memcpy(dst + o * element, t.data() + src * element, element);
    for (int d = static_cast<int>(perm.size()) - 1; d >= 0 && ++index[d] == shape[d]; --d) index[d] = 0;
  }
  return out;
}

void keep(NodeLowering& n, const std::vector<DType>& dtypes, const std::vector<Dims>& dims) {
  OnnxOp op = n.kept_op();
  for (size_t i = 0; i < op.outputs.size() && i < dtypes.size(); ++i)
    if (op.outputs[i]) n.set_output(i, *op.outputs[i], dtypes[i], dims[i]);
  n.g.emit(std::move(op));
}

void keep_elementwise(NodeLowering& n, DType dtype) {
  Dims dims = n.in(0).dims;
  for (size_t i = 1; i < n.num_inputs(); ++i)
    if (n.has_input(i)) dims = broadcast_dims(dims, n.in(i).dims);
  keep(n, {dtype}, {dims});
}

bool known_only_at_run_time(NodeLowering& n, size_t input) { return n.has_input(input) && !n.g.literal_ints(n.in(input)); }

void keep_with_rank(NodeLowering& n, DType dtype, int rank) {
  keep(n, {dtype}, {Dims(static_cast<size_t>(std::max(rank, 0)), kUnknownDim)});
}

int64_t static_length(NodeLowering& n, size_t input, const std::string& what) {
  const Value& v = n.in(input);
  if (v.rank() != 1 || v.dims[0] < 0) n.unsupported(what + " whose length is known only at run time");
  return v.dims[0];
}

std::optional<std::vector<int64_t>> axes_attr_or_input(NodeLowering& n, int since_opset_as_input, size_t input) {
  if (n.opset < since_opset_as_input) {
    if (!n.attr("axes")) return std::nullopt;
    return n.attr_ints("axes");
  }
  if (!n.has_input(input)) return std::nullopt;
  return n.literal_ints_input(input, "axes");
}

}  // namespace wgml::frontend::onnx

namespace wgml::frontend::onnx {
namespace {

// The zero point of block `block` of row `row` (see AffineWeights).
double zero_point(const Tensor& zp, int64_t row, int64_t block, int64_t blocks, int64_t bits) {
  if (zp.dtype() != DType::UInt8) return load_as_double(zp.dtype(), zp.data(), row * blocks + block);
  const int64_t row_bytes = (blocks * bits + 7) / 8;
  const int64_t bit = block * bits;
  const uint8_t byte = zp.data()[row * row_bytes + bit / 8];
  return (byte >> (bit % 8)) & ((1 << bits) - 1);
}

}  // namespace

AffineWeights affine_weights(NodeLowering& n, const Tensor& packed, const Tensor& scales, const Tensor* zero_points, int64_t rows,
                             int64_t k, int64_t bits, int64_t block, DType dtype) {
  if (bits != 2 && bits != 4 && bits != 8) n.unsupported("bits " + std::to_string(bits) + " (2, 4 and 8 are supported)");
  if (block != 32 && block != 64 && block != 128)
    n.unsupported("block_size " + std::to_string(block) + " (MLX's group sizes 32, 64, 128 are supported)");
  if (k <= 0 || rows <= 0 || k % block != 0) n.unsupported("a quantized axis that is not a positive multiple of block_size");
  const int64_t blocks = k / block, row_bytes = k * bits / 8;
  if (packed.dtype() != DType::UInt8 || packed.numel() != rows * row_bytes)
    n.fail("quantized values of " + std::to_string(rows * row_bytes) + " uint8 bytes");
  if (scales.numel() != rows * blocks) n.fail("scales of " + std::to_string(rows * blocks) + " values");
  if (zero_points) {
    const int64_t expected = zero_points->dtype() == DType::UInt8 ? rows * ((blocks * bits + 7) / 8) : rows * blocks;
    if (zero_points->numel() != expected) n.fail("zero_points of " + std::to_string(expected) + " values");
  }
  AffineWeights out{Tensor(DType::UInt32, {rows, row_bytes / 4}), Tensor(dtype, {rows, blocks}), Tensor(dtype, {rows, blocks})};
  std::memcpy(out.words.mutable_data(), packed.data(), static_cast<size_t>(rows * row_bytes));
  const double default_zero = static_cast<double>(int64_t{1} << (bits - 1));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t i = r * blocks + blk;
      const double s = load_as_double(scales.dtype(), scales.data(), i);
      const double zero = zero_points ? zero_point(*zero_points, r, blk, blocks, bits) : default_zero;
      store_double(dtype, out.scales.mutable_data(), i, s);
      store_double(dtype, out.biases.mutable_data(), i, -zero * s);
    }
  return out;
}

}  // namespace wgml::frontend::onnx
