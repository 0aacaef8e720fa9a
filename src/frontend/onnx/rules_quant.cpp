// Linear quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearMatMul and
// MatMulInteger as mlx arithmetic (divide, round half to even, add, clip, cast). Scales and zero
// points are per tensor, per axis or per block, as ONNX defines them.
#include <limits>

#include "frontend/onnx/lowering.h"
#include "frontend/onnx/rule_helpers.h"

namespace wgml::frontend::onnx {
namespace {

using namespace ir;

// The integer range a quantized type saturates to.
std::pair<double, double> quantized_range(NodeLowering& n, DType t) {
  switch (t) {
    case DType::UInt8:
      return {0, 255};
    case DType::Int8:
      return {-128, 127};
    case DType::Int16:
      return {-32768, 32767};
    case DType::Int32:
      return {-2147483648.0, 2147483647.0};
    default:
      n.unsupported("quantization to " + std::string(dtype_name(t)));
  }
}

// A scale or zero point shaped to broadcast against x: one value as is; a vector along `axis`;
// a blocked tensor repeated `block` times along `axis` and cut to x's size there.
Tid broadcastable(NodeLowering& n, size_t input, const Value& x, int64_t axis_attr, int64_t block) {
  const Value& p = n.in(input);
  const Tid t = n.in_tensor(input);
  if (p.rank() == 0 || (p.rank() == 1 && p.dims[0] == 1)) return p.rank() == 0 ? t : n.reshape(t, {});
  const int axis = n.axis(axis_attr, x.rank());
  if (block <= 0) {
    std::vector<IntOrVid> shape(x.rank(), literal(1));
    shape[axis] = literal(-1);
    return n.reshape(t, shape);
  }
  if (p.rank() != x.rank()) n.fail("a blocked scale of the input's rank");
  std::vector<IntOrVid> grouped = n.g.shape_of(p);
  grouped.insert(grouped.begin() + axis + 1, literal(block));
  const Tid repeated = n.g.new_temp();
  n.g.emit(BroadcastToNode{.x = expand_dims(n, t, axis + 1), .out = repeated, .shape = grouped});
  std::vector<IntOrVid> merged = n.g.shape_of(p);
  merged[axis] = n.g.mul(merged[axis], literal(block));
  return slice_axis(n, n.reshape(repeated, merged), axis, literal(0), n.g.dim(x, axis));
}

// saturate(round(value) + zero point) as `out`, value being float.
Tid requantize(NodeLowering& n, Tid value, DType float_type, std::optional<Tid> zero_point, DType out) {
  const auto [lo, hi] = quantized_range(n, out);
  Tid q = n.unary<RoundNode>(value);
  if (zero_point) q = n.binary<AddNode>(q, n.cast(*zero_point, out, float_type));
  q = clip_op(n, q, n.scalar(lo, float_type), n.scalar(hi, float_type));
  return n.convert(q, out);
}

DType attr_dtype(NodeLowering& n, const char* name, DType fallback) {
  const pb::AttributeProto* a = n.attr(name);
  if (!a || a->i() == 0) return fallback;
  const auto t = ir::dtype_from_onnx(static_cast<int32_t>(a->i()));
  if (!t) n.unsupported(std::string(name) + " " + onnx_type_name(static_cast<int32_t>(a->i())));
  return *t;
}

void quantize_linear(NodeLowering& n) {
  const Value& x = n.in(0);
  const int64_t axis = n.attr_int("axis", 1);
  const int64_t block = n.attr_int("block_size", 0);
  const DType out = n.has_input(2) ? n.in(2).dtype : attr_dtype(n, "output_dtype", DType::UInt8);
  const DType compute = attr_dtype(n, "precision", x.dtype == DType::Float64 ? DType::Float64 : DType::Float32);
  const Tid scale = n.cast(broadcastable(n, 1, x, axis, block), n.in(1).dtype, compute);
  const Tid scaled = n.binary<DivideNode>(n.cast(n.in_tensor(0), x.dtype, compute), scale);
  std::optional<Tid> zero_point;
  if (n.has_input(2)) zero_point = broadcastable(n, 2, x, axis, block);
  n.set_output(0, requantize(n, scaled, compute, zero_point, out), out, x.dims);
}

void dequantize_linear(NodeLowering& n) {
  const Value& x = n.in(0);
  const int64_t axis = n.attr_int("axis", 1);
  const int64_t block = n.attr_int("block_size", 0);
  const DType scale_type = n.in(1).dtype;
  const DType out = attr_dtype(n, "output_dtype", scale_type);
  Tid dx = n.cast(n.in_tensor(0), x.dtype, DType::Float32);
  if (n.has_input(2)) dx = n.binary<SubtractNode>(dx, n.cast(broadcastable(n, 2, x, axis, block), n.in(2).dtype, DType::Float32));
  const Tid scale = n.cast(broadcastable(n, 1, x, axis, block), scale_type, DType::Float32);
  n.set_output(0, n.cast(n.binary<MultiplyNode>(dx, scale), DType::Float32, out), out, x.dims);
}

Tid reduce_all(NodeLowering& n, Tid x, bool max) {
  const Tid out = n.g.new_temp();
  if (max)
    n.g.emit(MaxNode{.x = x, .out = out, .axes = {}, .keepdims = false});
  else
    n.g.emit(MinNode{.x = x, .out = out, .axes = {}, .keepdims = false});
  return out;
}

// uint8 quantization whose range covers x and 0: scale = (max - min) / 255 (1 / 255 for an
// all-zero x), zero point = saturate(round(-min / scale)).
void dynamic_quantize_linear(NodeLowering& n) {
  const Value& x = n.in(0);
  const DType f = DType::Float32;
  const Tid xt = n.cast(n.in_tensor(0), x.dtype, f);
  const Tid zero = n.scalar(0, f);
  const Tid hi = n.binary<MaximumNode>(reduce_all(n, xt, true), zero);
  const Tid lo = n.binary<MinimumNode>(reduce_all(n, xt, false), zero);
  const Tid span = n.binary<SubtractNode>(hi, lo);
  const Tid width = where_op(n, n.binary<EqualNode>(span, zero), n.scalar(1, f), span);
  const Tid scale = n.binary<DivideNode>(width, n.scalar(255, f));
  const Tid initial_zero = n.binary<SubtractNode>(zero, n.binary<DivideNode>(lo, scale));
  const Tid zero_point = n.unary<RoundNode>(clip_op(n, initial_zero, n.scalar(0, f), n.scalar(255, f)));
  const Tid shifted = n.binary<AddNode>(n.unary<RoundNode>(n.binary<DivideNode>(xt, scale)), zero_point);
  const Tid y = n.convert(clip_op(n, shifted, n.scalar(0, f), n.scalar(255, f)), DType::UInt8);
  n.set_output(0, y, DType::UInt8, x.dims);
  n.set_output(1, n.cast(scale, f, x.dtype), x.dtype, {});
  n.set_output(2, n.convert(zero_point, DType::UInt8), DType::UInt8, {});
}

// (a - a_zero) for a matrix operand: a per-row zero point of A (or per-column of B) broadcasts
// along the other axis.
Tid centered(NodeLowering& n, size_t input, size_t zero_input, bool per_row) {
  const Tid a = n.cast(n.in_tensor(input), n.in(input).dtype, DType::Float64);
  if (!n.has_input(zero_input)) return a;
  const Value& z = n.in(zero_input);
  Tid zt = n.cast(n.in_tensor(zero_input), z.dtype, DType::Float64);
  if (z.rank() == 1 && z.dims[0] != 1)
    zt = n.reshape(zt, per_row ? std::vector<IntOrVid>{literal(-1), literal(1)} : std::vector<IntOrVid>{literal(1), literal(-1)});
  return n.binary<SubtractNode>(a, zt);
}

Dims matmul_dims(const Value& a, const Value& b) {
  Dims dims = broadcast_dims(Dims(a.dims.begin(), a.dims.end() - 2), Dims(b.dims.begin(), b.dims.end() - 2));
  dims.push_back(a.dims[a.rank() - 2]);
  dims.push_back(b.dims.back());
  return dims;
}

void mat_mul_integer(NodeLowering& n) {
  const Value& a = n.in(0);
  const Value& b = n.in(1);
  if (a.rank() < 2 || b.rank() < 2) n.unsupported("MatMulInteger on vectors");
  const Tid product = matmul_op(n, centered(n, 0, 2, true), centered(n, 1, 3, false));
  n.set_output(0, n.convert(product, DType::Int32), DType::Int32, matmul_dims(a, b));
}

Tid as_float(NodeLowering& n, size_t input) { return n.cast(n.in_tensor(input), n.in(input).dtype, DType::Float64); }

// Integer product, rescaled by a_scale * b_scale / y_scale, requantized around y_zero_point.
void q_linear_mat_mul(NodeLowering& n) {
  const Value& a = n.in(0);
  const Value& b = n.in(3);
  if (a.rank() < 2 || b.rank() < 2) n.unsupported("QLinearMatMul on vectors");
  const Tid product = matmul_op(n, centered(n, 0, 2, true), centered(n, 3, 5, false));
  Tid a_scale = as_float(n, 1), b_scale = as_float(n, 4);
  if (n.in(1).rank() == 1 && n.in(1).dims[0] != 1) a_scale = n.reshape(a_scale, {literal(-1), literal(1)});
  const Tid rescale = n.binary<DivideNode>(n.binary<MultiplyNode>(a_scale, b_scale), as_float(n, 6));
  const DType out = n.has_input(7) ? n.in(7).dtype : a.dtype;
  std::optional<Tid> zero_point;
  if (n.has_input(7)) zero_point = n.in_tensor(7);
  const Tid y = requantize(n, n.binary<MultiplyNode>(product, rescale), DType::Float64, zero_point, out);
  n.set_output(0, y, out, matmul_dims(a, b));
}

// x - zero point, as float: the zero point of a weight may be one per output channel.
Value centered_operand(NodeLowering& n, size_t input, size_t zero_input, bool per_channel) {
  const Value& v = n.in(input);
  Tid t = n.cast(n.in_tensor(input), v.dtype, DType::Float32);
  if (n.has_input(zero_input)) {
    const Value& z = n.in(zero_input);
    Tid zt = n.cast(n.in_tensor(zero_input), z.dtype, DType::Float32);
    if (per_channel && z.rank() == 1 && z.dims[0] != 1) {
      std::vector<IntOrVid> shape(v.rank(), literal(1));
      shape[0] = literal(-1);
      zt = n.reshape(zt, shape);
    }
    t = n.binary<SubtractNode>(t, zt);
  }
  return Lowering::runtime(t, DType::Float32, v.dims);
}

void conv_integer(NodeLowering& n) {
  const Value y = convolution(n, centered_operand(n, 0, 2, false), centered_operand(n, 1, 3, true), std::nullopt);
  n.set_output(0, n.convert(n.unary<RoundNode>(n.g.tensor(y)), DType::Int32), DType::Int32, y.dims);
}

// The integer convolution (plus int32 bias), rescaled by x_scale * w_scale / y_scale (w_scale
// per output channel or one) and requantized around y_zero_point.
void q_linear_conv(NodeLowering& n) {
  std::optional<Tid> bias;
  if (n.has_input(8)) bias = n.cast(n.in_tensor(8), n.in(8).dtype, DType::Float32);
  const Value y = convolution(n, centered_operand(n, 0, 2, false), centered_operand(n, 3, 5, true), bias);
  Tid w_scale = n.cast(n.in_tensor(4), n.in(4).dtype, DType::Float32);
  if (n.in(4).rank() == 1 && n.in(4).dims[0] != 1) {
    std::vector<IntOrVid> shape(y.rank(), literal(1));
    shape[1] = literal(-1);
    w_scale = n.reshape(w_scale, shape);
  }
  const Tid x_scale = n.cast(n.in_tensor(1), n.in(1).dtype, DType::Float32);
  const Tid y_scale = n.cast(n.in_tensor(6), n.in(6).dtype, DType::Float32);
  const Tid rescale = n.binary<DivideNode>(n.binary<MultiplyNode>(x_scale, w_scale), y_scale);
  const DType out = n.has_input(7) ? n.in(7).dtype : n.in(0).dtype;
  std::optional<Tid> zero_point;
  if (n.has_input(7)) zero_point = n.in_tensor(7);
  n.set_output(0, requantize(n, n.binary<MultiplyNode>(n.g.tensor(y), rescale), DType::Float32, zero_point, out), out, y.dims);
}

}  // namespace

void add_quant_rules(std::vector<OpRule>& r) {
  r.push_back({"", "QuantizeLinear", 10, quantize_linear});
  r.push_back({"", "DequantizeLinear", 10, dequantize_linear});
  r.push_back({"", "DynamicQuantizeLinear", 11, dynamic_quantize_linear});
  r.push_back({"", "MatMulInteger", 10, mat_mul_integer});
  r.push_back({"", "QLinearMatMul", 10, q_linear_mat_mul});
  r.push_back({"", "ConvInteger", 10, conv_integer});
  r.push_back({"", "QLinearConv", 10, q_linear_conv});
}

}  // namespace wgml::frontend::onnx
