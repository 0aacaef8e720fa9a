// Element-wise ONNX ops: math, arithmetic with broadcasting, comparisons, logic, activations,
// casts. Most map to one mlx node; activations are short compositions of them.
#include <cmath>
#include <limits>
#include <type_traits>

#include "frontend/onnx/lowering.h"
#include "frontend/onnx/rule_helpers.h"

namespace wgml::frontend::onnx {
namespace {

using namespace ir;

template <class N>
void unary(NodeLowering& n) {
  const Value& x = n.in(0);
  n.set_output(0, n.unary<N>(n.in_tensor(0)), x.dtype, x.dims);
}

// ONNX's element-wise ops take operands of one type (MLX would promote instead).
void require_same_dtype(const NodeLowering& n, const Value& a, const Value& b) {
  if (a.dtype != b.dtype)
    n.fail("operands of one dtype, found " + std::string(dtype_name(a.dtype)) + " and " + std::string(dtype_name(b.dtype)));
}

template <class N>
void binary_same_type(NodeLowering& n) {
  const Value& a = n.in(0);
  const Value& b = n.in(1);
  require_same_dtype(n, a, b);
  n.set_output(0, n.binary<N>(n.in_tensor(0), n.in_tensor(1)), a.dtype, broadcast_dims(a.dims, b.dims));
}

// Comparisons of shape values known at load time fold to constants (conditions of Ifs that
// pick a branch by rank, for instance).
template <class N>
std::optional<Value> folded_comparison(NodeLowering& n) {
  const auto a = n.g.literal_ints(n.in(0)), b = n.g.literal_ints(n.in(1));
  if (!a || !b || n.in(0).rank() > 1 || n.in(1).rank() > 1) return std::nullopt;
  if (a->size() != b->size() && a->size() != 1 && b->size() != 1) return std::nullopt;
  const size_t len = std::max(a->size(), b->size());
  Tensor t(DType::Bool, n.in(0).rank() == 0 && n.in(1).rank() == 0 ? Shape{} : Shape{static_cast<int64_t>(len)});
  for (size_t i = 0; i < len; ++i) {
    const int64_t x = (*a)[a->size() == 1 ? 0 : i], y = (*b)[b->size() == 1 ? 0 : i];
    bool r;
    if constexpr (std::is_same_v<N, EqualNode>)
      r = x == y;
    else if constexpr (std::is_same_v<N, LessNode>)
      r = x < y;
    else if constexpr (std::is_same_v<N, LessEqualNode>)
      r = x <= y;
    else if constexpr (std::is_same_v<N, GreaterNode>)
      r = x > y;
    else if constexpr (std::is_same_v<N, GreaterEqualNode>)
      r = x >= y;
    else
      return std::nullopt;
    t.mutable_data()[i] = r;
  }
  return n.g.constant_value(t);
}

template <class N>
void comparison(NodeLowering& n) {
  const Value& a = n.in(0);
  const Value& b = n.in(1);
  require_same_dtype(n, a, b);
  if (auto folded = folded_comparison<N>(n)) return n.set_output(0, *folded);
  n.set_output(0, n.binary<N>(n.in_tensor(0), n.in_tensor(1)), DType::Bool, broadcast_dims(a.dims, b.dims));
}

// Integer shape values known element by element (literals or value slots) stay known through
// arithmetic: folded where both sides are literals, value-slot nodes where not.
using ElementOp = IntOrVid (*)(Lowering&, IntOrVid, IntOrVid);

std::optional<Value> known_arithmetic(NodeLowering& n, ElementOp op) {
  const Value& a = n.in(0);
  const Value& b = n.in(1);
  require_same_dtype(n, a, b);
  if (is_floating(a.dtype) || a.dtype == DType::Bool || a.rank() > 1 || b.rank() > 1) return std::nullopt;
  const auto ea = n.g.known_elements(a), eb = n.g.known_elements(b);
  if (!ea || !eb) return std::nullopt;
  const size_t len = std::max(ea->size(), eb->size());
  if ((ea->size() != len && ea->size() != 1) || (eb->size() != len && eb->size() != 1)) return std::nullopt;
  std::vector<IntOrVid> out;
  for (size_t i = 0; i < len; ++i) {
    const IntOrVid x = (*ea)[ea->size() == 1 ? 0 : i], y = (*eb)[eb->size() == 1 ? 0 : i];
    out.push_back(op(n.g, x, y));
  }
  Value v;
  v.dtype = a.dtype;
  if (a.rank() == 1 || b.rank() == 1) v.dims = {static_cast<int64_t>(len)};
  v.elements = std::move(out);
  return v;
}

IntOrVid add_elements(Lowering& g, IntOrVid a, IntOrVid b) { return g.add(a, b); }
IntOrVid sub_elements(Lowering& g, IntOrVid a, IntOrVid b) { return g.sub(a, b); }
IntOrVid mul_elements(Lowering& g, IntOrVid a, IntOrVid b) { return g.mul(a, b); }
// ONNX truncates; value slots hold dims (never negative), where flooring is the same.
IntOrVid div_elements(Lowering& g, IntOrVid a, IntOrVid b) {
  if (!a.is_vid && !b.is_vid && b.literal != 0) return literal(a.literal / b.literal);
  return g.floor_div(a, b);
}

template <class N, ElementOp Op>
void arithmetic(NodeLowering& n) {
  if (auto known = known_arithmetic(n, Op)) return n.set_output(0, *known);
  binary_same_type<N>(n);
}

void neg(NodeLowering& n) {
  const Value& x = n.in(0);
  if (!is_floating(x.dtype) && x.rank() <= 1)
    if (auto known = n.g.known_elements(x)) {
      Value out = x;
      out.tid.reset();
      out.constant.reset();
      out.elements = std::vector<IntOrVid>{};
      for (const IntOrVid& e : *known) out.elements->push_back(n.g.sub(literal(0), e));
      return n.set_output(0, out);
    }
  unary<NegNode>(n);
}

// Integer division truncates in ONNX and floors in MLX: integers keep ONNX's own kernel.
void div(NodeLowering& n) {
  require_same_dtype(n, n.in(0), n.in(1));
  if (is_floating(n.in(0).dtype)) return binary_same_type<DivideNode>(n);
  if (auto known = known_arithmetic(n, div_elements)) return n.set_output(0, *known);
  keep_elementwise(n, n.in(0).dtype);
}

void mod(NodeLowering& n) {
  require_same_dtype(n, n.in(0), n.in(1));
  // fmod=0 is Python's remainder (the divisor's sign): MLX's Remainder. fmod=1 is C's fmod.
  if (n.attr_int("fmod", 0) == 0 && !is_floating(n.in(0).dtype)) return binary_same_type<RemainderNode>(n);
  keep_elementwise(n, n.in(0).dtype);
}

// Pow's exponent may have another type; the result has the base's type.
void pow(NodeLowering& n) {
  const Value& base = n.in(0);
  const Value& exponent = n.in(1);
  const Dims dims = broadcast_dims(base.dims, exponent.dims);
  if (!is_floating(base.dtype) && is_floating(exponent.dtype)) {
    const Tid b = n.cast(n.in_tensor(0), base.dtype, exponent.dtype);
    const Tid p = n.binary<PowerNode>(b, n.in_tensor(1));
    return n.set_output(0, n.cast(p, exponent.dtype, base.dtype), base.dtype, dims);
  }
  const Tid e = n.cast(n.in_tensor(1), exponent.dtype, base.dtype);
  n.set_output(0, n.binary<PowerNode>(n.in_tensor(0), e), base.dtype, dims);
}

// Max, Min, Sum: variadic with multidirectional broadcasting.
template <class N>
Value fold_variadic(NodeLowering& n) {
  Value acc = n.in(0);
  Tid t = n.in_tensor(0);
  for (size_t i = 1; i < n.num_inputs(); ++i) {
    require_same_dtype(n, acc, n.in(i));
    t = n.binary<N>(t, n.in_tensor(i));
    acc.dims = broadcast_dims(acc.dims, n.in(i).dims);
  }
  return Lowering::runtime(t, acc.dtype, acc.dims);
}

template <class N>
void variadic(NodeLowering& n) {
  n.set_output(0, fold_variadic<N>(n));
}

void mean(NodeLowering& n) {
  Value sum = fold_variadic<AddNode>(n);
  const Tid count = n.scalar(static_cast<double>(n.num_inputs()), sum.dtype);
  n.set_output(0, n.binary<DivideNode>(n.g.tensor(sum), count), sum.dtype, sum.dims);
}

void where(NodeLowering& n) {
  require_same_dtype(n, n.in(1), n.in(2));
  const Tid out = n.g.new_temp();
  n.g.emit(WhereNode{.condition = n.in_tensor(0), .x = n.in_tensor(1), .y = n.in_tensor(2), .out = out});
  n.set_output(0, out, n.in(1).dtype, broadcast_dims(n.in(0).dims, broadcast_dims(n.in(1).dims, n.in(2).dims)));
}

void not_op(NodeLowering& n) { n.set_output(0, n.unary<LogicalNotNode>(n.in_tensor(0)), DType::Bool, n.in(0).dims); }

void is_nan(NodeLowering& n) {
  const Tid x = n.in_tensor(0);
  n.set_output(0, n.binary<NotEqualNode>(x, x), DType::Bool, n.in(0).dims);
}

void is_inf(NodeLowering& n) {
  const Value& v = n.in(0);
  const Tid x = n.in_tensor(0);
  const bool positive = n.attr_int("detect_positive", 1) != 0;
  const bool negative = n.attr_int("detect_negative", 1) != 0;
  const double inf = std::numeric_limits<double>::infinity();
  Tid out;
  if (positive && negative)
    out = n.binary<EqualNode>(n.unary<AbsNode>(x), n.scalar(inf, v.dtype));
  else if (positive)
    out = n.binary<EqualNode>(x, n.scalar(inf, v.dtype));
  else if (negative)
    out = n.binary<EqualNode>(x, n.scalar(-inf, v.dtype));
  else
    out = full_like(n, x, 0, DType::Bool);
  n.set_output(0, out, DType::Bool, v.dims);
}

// ---- activations ----

// x where x >= 0 (or cond is false), else negative_part: the shape of most ReLU variants.
Tid select_negative(NodeLowering& n, Tid x, DType t, Tid negative_part, bool inclusive_zero = false) {
  const Tid zero = n.scalar(0, t);
  const Tid is_negative = inclusive_zero ? n.binary<LessEqualNode>(x, zero) : n.binary<LessNode>(x, zero);
  return where_op(n, is_negative, negative_part, x);
}

void relu(NodeLowering& n) {
  const Value& v = n.in(0);
  n.set_output(0, n.binary<MaximumNode>(n.in_tensor(0), n.scalar(0, v.dtype)), v.dtype, v.dims);
}

void leaky_relu(NodeLowering& n) {
  const Value& v = n.in(0);
  const Tid x = n.in_tensor(0);
  const Tid scaled = n.binary<MultiplyNode>(x, n.scalar(n.attr_float("alpha", 0.01f), v.dtype));
  n.set_output(0, select_negative(n, x, v.dtype, scaled), v.dtype, v.dims);
}

void prelu(NodeLowering& n) {
  const Value& v = n.in(0);
  const Tid x = n.in_tensor(0);
  const Tid scaled = n.binary<MultiplyNode>(x, n.in_tensor(1));
  n.set_output(0, select_negative(n, x, v.dtype, scaled), v.dtype, broadcast_dims(v.dims, n.in(1).dims));
}

// Before opset 7 a slope of more than one value holds one per channel (axis 1).
void legacy_prelu(NodeLowering& n) {
  const Value& v = n.in(0);
  const Value& slope = n.in(1);
  if (slope.rank() != 1 || slope.dims[0] == 1 || v.rank() < 3) return prelu(n);
  std::vector<IntOrVid> per_channel{literal(slope.dims[0])};
  per_channel.resize(v.rank() - 1, literal(1));
  const Tid x = n.in_tensor(0);
  const Tid scaled = n.binary<MultiplyNode>(x, n.reshape(n.in_tensor(1), per_channel));
  n.set_output(0, select_negative(n, x, v.dtype, scaled), v.dtype, v.dims);
}

// alpha * (exp(x) - 1), the negative branch of Elu and Selu.
Tid exp_minus_one(NodeLowering& n, Tid x, DType t, double alpha) {
  return n.binary<MultiplyNode>(n.unary<Expm1Node>(x), n.scalar(alpha, t));
}

void elu(NodeLowering& n) {
  const Value& v = n.in(0);
  const Tid x = n.in_tensor(0);
  const Tid negative = exp_minus_one(n, x, v.dtype, n.attr_float("alpha", 1.0f));
  n.set_output(0, select_negative(n, x, v.dtype, negative), v.dtype, v.dims);
}

void selu(NodeLowering& n) {
  const Value& v = n.in(0);
  const Tid x = n.in_tensor(0);
  const Tid negative = exp_minus_one(n, x, v.dtype, n.attr_float("alpha", 1.67326319217681884765625f));
  const Tid inner = select_negative(n, x, v.dtype, negative, true);
  const Tid gamma = n.scalar(n.attr_float("gamma", 1.05070102214813232421875f), v.dtype);
  n.set_output(0, n.binary<MultiplyNode>(inner, gamma), v.dtype, v.dims);
}

void celu(NodeLowering& n) {
  const Value& v = n.in(0);
  const Tid x = n.in_tensor(0);
  const double alpha = n.attr_float("alpha", 1.0f);
  const Tid zero = n.scalar(0, v.dtype);
  const Tid scaled = n.binary<DivideNode>(x, n.scalar(alpha, v.dtype));
  const Tid negative = n.binary<MinimumNode>(zero, exp_minus_one(n, scaled, v.dtype, alpha));
  n.set_output(0, n.binary<AddNode>(n.binary<MaximumNode>(zero, x), negative), v.dtype, v.dims);
}

void thresholded_relu(NodeLowering& n) {
  const Value& v = n.in(0);
  const Tid x = n.in_tensor(0);
  const Tid above = n.binary<GreaterNode>(x, n.scalar(n.attr_float("alpha", 1.0f), v.dtype));
  n.set_output(0, where_op(n, above, x, n.scalar(0, v.dtype)), v.dtype, v.dims);
}

Tid hard_sigmoid_of(NodeLowering& n, Tid x, DType t, double alpha, double beta) {
  const Tid affine = n.binary<AddNode>(n.binary<MultiplyNode>(x, n.scalar(alpha, t)), n.scalar(beta, t));
  return clip_op(n, affine, n.scalar(0, t), n.scalar(1, t));
}

void hard_sigmoid(NodeLowering& n) {
  const Value& v = n.in(0);
  n.set_output(0, hard_sigmoid_of(n, n.in_tensor(0), v.dtype, n.attr_float("alpha", 0.2f), n.attr_float("beta", 0.5f)), v.dtype,
               v.dims);
}

void hard_swish(NodeLowering& n) {
  const Value& v = n.in(0);
  const Tid x = n.in_tensor(0);
  n.set_output(0, n.binary<MultiplyNode>(x, hard_sigmoid_of(n, x, v.dtype, 1.0 / 6.0, 0.5)), v.dtype, v.dims);
}

Tid softplus_of(NodeLowering& n, Tid x, DType t) { return n.binary<LogAddExpNode>(x, n.scalar(0, t)); }

void softplus(NodeLowering& n) {
  const Value& v = n.in(0);
  n.set_output(0, softplus_of(n, n.in_tensor(0), v.dtype), v.dtype, v.dims);
}

void softsign(NodeLowering& n) {
  const Value& v = n.in(0);
  const Tid x = n.in_tensor(0);
  const Tid denominator = n.binary<AddNode>(n.unary<AbsNode>(x), n.scalar(1, v.dtype));
  n.set_output(0, n.binary<DivideNode>(x, denominator), v.dtype, v.dims);
}

void mish(NodeLowering& n) {
  const Value& v = n.in(0);
  const Tid x = n.in_tensor(0);
  n.set_output(0, n.binary<MultiplyNode>(x, n.unary<TanhNode>(softplus_of(n, x, v.dtype))), v.dtype, v.dims);
}

void swish(NodeLowering& n) {
  const Value& v = n.in(0);
  const Tid x = n.in_tensor(0);
  const Tid scaled = n.binary<MultiplyNode>(x, n.scalar(n.attr_float("alpha", 1.0f), v.dtype));
  n.set_output(0, n.binary<MultiplyNode>(x, n.unary<SigmoidNode>(scaled)), v.dtype, v.dims);
}

void gelu(NodeLowering& n) {
  const Value& v = n.in(0);
  const std::string approximate = n.attr_string("approximate", "none");
  if (approximate != "none" && approximate != "tanh") n.fail("approximate \"none\" or \"tanh\", found \"" + approximate + "\"");
  const Tid out = n.g.new_temp();
  n.g.emit(GeluNode{.x = n.in_tensor(0), .out = out, .approximate = approximate});
  n.set_output(0, out, v.dtype, v.dims);
}

void shrink(NodeLowering& n) {
  const Value& v = n.in(0);
  const Tid x = n.in_tensor(0);
  const double lambd = n.attr_float("lambd", 0.5f), bias = n.attr_float("bias", 0.0f);
  const Tid below = n.binary<LessNode>(x, n.scalar(-lambd, v.dtype));
  const Tid above = n.binary<GreaterNode>(x, n.scalar(lambd, v.dtype));
  const Tid shifted_up = n.binary<AddNode>(x, n.scalar(bias, v.dtype));
  const Tid shifted_down = n.binary<SubtractNode>(x, n.scalar(bias, v.dtype));
  const Tid upper = where_op(n, above, shifted_down, n.scalar(0, v.dtype));
  n.set_output(0, where_op(n, below, shifted_up, upper), v.dtype, v.dims);
}

// Clip: bounds are attributes before opset 11, optional inputs after.
void clip(NodeLowering& n) {
  const Value& v = n.in(0);
  std::optional<Tid> lo, hi;
  if (n.opset < 11) {
    if (n.attr("min")) lo = n.scalar(n.attr_float("min", 0), v.dtype);
    if (n.attr("max")) hi = n.scalar(n.attr_float("max", 0), v.dtype);
  } else {
    if (n.has_input(1)) lo = n.in_tensor(1);
    if (n.has_input(2)) hi = n.in_tensor(2);
  }
  const Tid out = n.g.new_temp();
  n.g.emit(ClipNode{.x = n.in_tensor(0), .out = out, .a_min = lo, .a_max = hi});
  n.set_output(0, out, v.dtype, v.dims);
}

void round(NodeLowering& n) {
  const Value& v = n.in(0);
  const Tid out = n.g.new_temp();
  n.g.emit(RoundNode{.x = n.in_tensor(0), .out = out, .decimals = 0});
  n.set_output(0, out, v.dtype, v.dims);
}

// ---- casts ----

DType cast_target(NodeLowering& n, int32_t elem_type) {
  const auto t = ir::dtype_from_onnx(elem_type);
  if (!t) n.unsupported("cast to " + onnx_type_name(elem_type));
  return *t;
}

void cast_to(NodeLowering& n, DType to) {
  const Value& v = n.in(0);
  if (v.dtype == to) return n.set_output(0, v);
  // Integer shape values stay known through casts between integer types.
  if (v.elements && !is_floating(to) && to != DType::Bool) {
    Value out = v;
    out.dtype = to;
    out.tid.reset();
    out.constant.reset();
    return n.set_output(0, out);
  }
  n.set_output(0, n.cast(n.in_tensor(0), v.dtype, to), to, v.dims);
}

void cast(NodeLowering& n) {
  const pb::AttributeProto* to = n.attr("to");
  if (!to) n.fail("attribute 'to'");
  cast_to(n, cast_target(n, static_cast<int32_t>(to->i())));
}

void cast_like(NodeLowering& n) { cast_to(n, n.in(1).dtype); }

void identity(NodeLowering& n) { n.set_output(0, n.in(0)); }

// Dropout at inference is the identity; with training_mode (opset 12+) and a ratio it is random.
void dropout(NodeLowering& n) {
  const Value& v = n.in(0);
  bool training = false;
  if (n.opset >= 12 && n.has_input(2))
    if (const auto mode = n.g.literal_ints(n.in(2))) training = !mode->empty() && (*mode)[0] != 0;
  // A zero ratio drops nothing, whatever the mode.
  double ratio = 0.5;
  if (n.has_input(1) && n.in(1).constant) ratio = load_scalar(*n.in(1).constant);
  const bool ratio_known = !n.has_input(1) || n.in(1).constant;
  if (n.opset >= 12 && n.has_input(2) && !n.g.literal_ints(n.in(2)) && !(ratio_known && ratio == 0))
    return keep(n, {v.dtype, DType::Bool}, {v.dims, v.dims});
  if (training && !(ratio_known && ratio == 0)) n.unsupported("training-mode dropout (random)");
  n.set_output(0, v);
  if (n.wants_output(1)) n.set_output(1, full_like(n, n.in_tensor(0), 1, DType::Bool), DType::Bool, v.dims);
}

// Before opset 7 the binary ops broadcast only with broadcast=1, B's dims matching A's from
// `axis` on (A's last dims when axis is absent); without it the shapes are equal. Numpy
// broadcasting gives the same result except where `axis` leaves B's dims short of A's last one.
template <LowerFn Modern>
void legacy_broadcast(NodeLowering& n) {
  if (n.opset < 7 && n.attr_int("broadcast", 0) != 0 && n.attr("axis")) {
    const int a = n.in(0).rank(), b = n.in(1).rank();
    if (n.axis(n.attr_int("axis", 0), a) != a - b) n.unsupported("broadcast from an axis other than A's last dims");
  }
  Modern(n);
}

}  // namespace

void add_elementwise_rules(std::vector<OpRule>& r) {
  auto add = [&](const char* op, LowerFn f, int since = 1) { r.push_back({"", op, since, f}); };
  add("Abs", unary<AbsNode>);
  add("Neg", neg);
  add("Floor", unary<FloorNode>);
  add("Ceil", unary<CeilNode>);
  add("Round", round, 11);
  add("Sqrt", unary<SqrtNode>);
  add("Reciprocal", unary<ReciprocalNode>);
  add("Exp", unary<ExpNode>);
  add("Log", unary<LogNode>);
  add("Sin", unary<SinNode>, 7);
  add("Cos", unary<CosNode>, 7);
  add("Tan", unary<TanNode>, 7);
  add("Asin", unary<ArcsinNode>, 7);
  add("Acos", unary<ArccosNode>, 7);
  add("Atan", unary<ArctanNode>, 7);
  add("Sinh", unary<SinhNode>, 9);
  add("Cosh", unary<CoshNode>, 9);
  add("Asinh", unary<ArcsinhNode>, 9);
  add("Acosh", unary<ArccoshNode>, 9);
  add("Atanh", unary<ArctanhNode>, 9);
  add("Erf", unary<ErfNode>, 9);
  add("Sigmoid", unary<SigmoidNode>);
  add("Tanh", unary<TanhNode>);
  add("Sign", unary<SignNode>, 9);
  add("BitwiseNot", unary<BitwiseInvertNode>, 18);
  add("Not", not_op);
  add("IsNaN", is_nan, 9);
  add("IsInf", is_inf, 10);
  add("Add", legacy_broadcast<arithmetic<AddNode, add_elements>>);
  add("Sub", legacy_broadcast<arithmetic<SubtractNode, sub_elements>>);
  add("Mul", legacy_broadcast<arithmetic<MultiplyNode, mul_elements>>);
  add("Div", legacy_broadcast<div>);
  add("Mod", mod, 10);
  add("Pow", legacy_broadcast<pow>);
  add("BitwiseAnd", binary_same_type<BitwiseAndNode>, 18);
  add("BitwiseOr", binary_same_type<BitwiseOrNode>, 18);
  add("BitwiseXor", binary_same_type<BitwiseXorNode>, 18);
  add("Equal", comparison<EqualNode>, 7);
  add("Less", comparison<LessNode>, 7);
  add("LessOrEqual", comparison<LessEqualNode>, 12);
  add("Greater", comparison<GreaterNode>, 7);
  add("GreaterOrEqual", comparison<GreaterEqualNode>, 12);
  add("And", comparison<LogicalAndNode>, 7);
  add("Or", comparison<LogicalOrNode>, 7);
  add("Xor", comparison<NotEqualNode>, 7);
  // Before opset 8 these took operands of one shape, which numpy broadcasting covers.
  add("Max", variadic<MaximumNode>);
  add("Min", variadic<MinimumNode>);
  add("Sum", variadic<AddNode>);
  add("Mean", mean);
  add("Where", where, 9);
  add("Relu", relu);
  add("LeakyRelu", leaky_relu);
  add("PRelu", legacy_prelu);
  add("PRelu", prelu, 7);
  add("Elu", elu);
  add("Selu", selu);
  add("Celu", celu, 12);
  add("ThresholdedRelu", thresholded_relu, 10);
  add("HardSigmoid", hard_sigmoid);
  add("HardSwish", hard_swish, 14);
  add("Softplus", softplus);
  add("Softsign", softsign);
  add("Mish", mish, 18);
  add("Swish", swish, 24);
  add("Gelu", gelu, 20);
  add("Shrink", shrink, 9);
  add("Clip", clip, 6);
  add("Cast", cast, 6);
  add("CastLike", cast_like, 15);
  add("Identity", identity);
  add("Dropout", dropout, 7);
}

}  // namespace wgml::frontend::onnx
