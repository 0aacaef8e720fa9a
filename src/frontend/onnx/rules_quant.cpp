// Linear quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearMatMul and
// MatMulInteger, and ONNX Runtime's MatMulIntegerToFloat and DynamicQuantizeMatMul (com.microsoft),
// as mlx arithmetic (divide, round half to even, add, clip, cast). Scales and zero points are per
// tensor, per axis or per block, as ONNX defines them.
#include <algorithm>
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

// x (float32) quantized to uint8 with a range that covers x and 0: scale = (max - min) / 255
// (1 / 255 for an all-zero x), zero point = saturate(round(-min / scale)); the quantized values and
// the zero point as float32 integers in [0, 255].
struct DynamicQuantized {
  Tid values, scale, zero_point;
};

DynamicQuantized quantize_dynamically(NodeLowering& n, Tid xt) {
  const DType f = DType::Float32;
  const Tid zero = n.scalar(0, f);
  const Tid hi = n.binary<MaximumNode>(reduce_all(n, xt, true), zero);
  const Tid lo = n.binary<MinimumNode>(reduce_all(n, xt, false), zero);
  const Tid span = n.binary<SubtractNode>(hi, lo);
  const Tid width = where_op(n, n.binary<EqualNode>(span, zero), n.scalar(1, f), span);
  const Tid scale = n.binary<DivideNode>(width, n.scalar(255, f));
  const Tid initial_zero = n.binary<SubtractNode>(zero, n.binary<DivideNode>(lo, scale));
  const Tid zero_point = n.unary<RoundNode>(clip_op(n, initial_zero, n.scalar(0, f), n.scalar(255, f)));
  const Tid shifted = n.binary<AddNode>(n.unary<RoundNode>(n.binary<DivideNode>(xt, scale)), zero_point);
  return {clip_op(n, shifted, n.scalar(0, f), n.scalar(255, f)), scale, zero_point};
}

void dynamic_quantize_linear(NodeLowering& n) {
  const Value& x = n.in(0);
  const DynamicQuantized q = quantize_dynamically(n, n.cast(n.in_tensor(0), x.dtype, DType::Float32));
  n.set_output(0, n.convert(q.values, DType::UInt8), DType::UInt8, x.dims);
  n.set_output(1, n.cast(q.scale, DType::Float32, x.dtype), x.dtype, {});
  n.set_output(2, n.convert(q.zero_point, DType::UInt8), DType::UInt8, {});
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

// Input `input` as float32, where the node has it; else none.
std::optional<Tid> optional_float(NodeLowering& n, size_t input) {
  if (!n.has_input(input)) return std::nullopt;
  return n.cast(n.in_tensor(input), n.in(input).dtype, DType::Float32);
}

bool holds_one_value(const Value& v) {
  return std::all_of(v.dims.begin(), v.dims.end(), [](int64_t d) { return d == 1; });
}

// Input `input` as float32, which must hold one value (a per-tensor scale or zero point of A).
Tid one_value(NodeLowering& n, size_t input, const char* what) {
  if (!holds_one_value(n.in(input))) n.unsupported(std::string(what) + " with more than one value (per-row quantization of A)");
  return n.cast(n.in_tensor(input), n.in(input).dtype, DType::Float32);
}

// ONNX Runtime's integer products rescaled to floats (com.microsoft MatMulIntegerToFloat and
// DynamicQuantizeMatMul): (a - a_zero) @ (B - b_zero) * a_scale * b_scale + bias, B [K, N] of int8
// or uint8 with b_scale and b_zero per tensor or per column. `a_centered` is a - a_zero as float32
// integers; their products add up exactly in float32 while they stay below 2^24.
void integer_product_to_float(NodeLowering& n, const Value& a, Tid a_centered, Tid a_scale, size_t b_input, size_t b_scale_input,
                              size_t b_zero_input, size_t bias_input) {
  const Value& b = n.in(b_input);
  if (a.rank() < 2 || b.rank() != 2) n.unsupported("operands other than A of rank >= 2 and a matrix B");
  const Value& b_scale = n.in(b_scale_input);
  if (!holds_one_value(b_scale) && !(b_scale.rank() == 1 && b_scale.dims[0] == b.dims[1] && b.dims[1] != kUnknownDim))
    n.fail("b_scale of one value or one per column of B");
  Tid b_centered = n.cast(n.in_tensor(b_input), b.dtype, DType::Float32);
  if (const auto zero = optional_float(n, b_zero_input)) b_centered = n.binary<SubtractNode>(b_centered, *zero);
  const Tid scale = n.binary<MultiplyNode>(a_scale, n.cast(n.in_tensor(b_scale_input), b_scale.dtype, DType::Float32));
  Tid y = n.binary<MultiplyNode>(matmul_op(n, a_centered, b_centered), scale);
  if (const auto bias = optional_float(n, bias_input)) y = n.binary<AddNode>(y, *bias);
  Dims dims = a.dims;
  dims.back() = b.dims[1];
  n.set_output(0, n.cast(y, DType::Float32, b_scale.dtype), b_scale.dtype, dims);
}

// MatMulIntegerToFloat: A, B, a_scale, b_scale, a_zero_point, b_zero_point, bias.
void mat_mul_integer_to_float(NodeLowering& n) {
  const Value& a = n.in(0);
  Tid a_centered = n.cast(n.in_tensor(0), a.dtype, DType::Float32);
  if (n.has_input(4)) a_centered = n.binary<SubtractNode>(a_centered, one_value(n, 4, "a_zero_point"));
  integer_product_to_float(n, a, a_centered, one_value(n, 2, "a_scale"), 1, 3, 5, 6);
}

// DynamicQuantizeMatMul: A (float) quantized to uint8 as DynamicQuantizeLinear does, then
// MatMulIntegerToFloat with B, b_scale, b_zero_point, bias.
void dynamic_quantize_mat_mul(NodeLowering& n) {
  const Value& a = n.in(0);
  if (!is_floating(a.dtype)) n.fail("a floating-point A");
  const DynamicQuantized q = quantize_dynamically(n, n.cast(n.in_tensor(0), a.dtype, DType::Float32));
  integer_product_to_float(n, a, n.binary<SubtractNode>(q.values, q.zero_point), q.scale, 1, 2, 3, 4);
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
  r.push_back({"com.microsoft", "MatMulIntegerToFloat", 1, mat_mul_integer_to_float});
  r.push_back({"com.microsoft", "DynamicQuantizeMatMul", 1, dynamic_quantize_mat_mul});
}

}  // namespace wgml::frontend::onnx
