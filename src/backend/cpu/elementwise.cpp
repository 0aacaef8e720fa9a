// Element-wise nodes: unary math, binary arithmetic with broadcasting and MLX type promotion,
// comparisons, logical and bitwise ops, Where, Clip, AsType.
#include <cmath>

#include "backend/cpu/broadcast.h"
#include "backend/cpu/cpu_backend.h"
#include "core/elements.h"

namespace wgml::backend::cpu {
namespace {

using runtime::ExecContext;
using runtime::fail;

// Float math on integer or bool inputs produces float32, as in MLX.
DType float_result(DType t) { return is_floating(t) ? t : DType::Float32; }

template <class F>
Tensor map_unary(const Tensor& x, DType out_type, F f) {
  Tensor out(out_type, x.shape());
  uint8_t* dst = out.mutable_data();
  for (int64_t i = 0; i < x.numel(); ++i) store_double(out_type, dst, i, f(load_as_double(x.dtype(), x.data(), i)));
  return out;
}

template <class F>
Tensor map_unary_int(const Tensor& x, F f) {
  Tensor out(x.dtype(), x.shape());
  uint8_t* dst = out.mutable_data();
  for (int64_t i = 0; i < x.numel(); ++i) store_int64(x.dtype(), dst, i, f(load_as_int64(x.dtype(), x.data(), i)));
  return out;
}

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }
double silu(double v) { return v * sigmoid(v); }
double rsqrt(double v) { return 1.0 / std::sqrt(v); }
double reciprocal(double v) { return 1.0 / v; }
double square(double v) { return v * v; }
double neg(double v) { return -v; }
double sign(double v) { return (v > 0) - (v < 0); }  // MLX: NaN has sign 0
double gelu_exact(double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }
double gelu_tanh(double v) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v)));
}

// A float-valued unary node: x -> f(x), float32 for non-float inputs.
template <class N, double (*F)(double)>
void float_unary(const N& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  ctx.set_tensor(n.out, map_unary(x, float_result(x.dtype()), F));
}

// A unary node that keeps integer dtypes (abs, neg, square, sign, floor, ceil).
template <class N, double (*F)(double), int64_t (*I)(int64_t)>
void dtype_preserving_unary(const N& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  if (is_floating(x.dtype()))
    ctx.set_tensor(n.out, map_unary(x, x.dtype(), F));
  else
    ctx.set_tensor(n.out, map_unary_int(x, I));
}

int64_t identity_i(int64_t v) { return v; }
int64_t abs_i(int64_t v) { return v < 0 ? -v : v; }
int64_t neg_i(int64_t v) { return -v; }
int64_t square_i(int64_t v) { return v * v; }
int64_t sign_i(int64_t v) { return (v > 0) - (v < 0); }
double fabs_d(double v) { return std::fabs(v); }
double floor_d(double v) { return std::floor(v); }
double ceil_d(double v) { return std::ceil(v); }
double exp_d(double v) { return std::exp(v); }
double log_d(double v) { return std::log(v); }
double sqrt_d(double v) { return std::sqrt(v); }
double tanh_d(double v) { return std::tanh(v); }
double sin_d(double v) { return std::sin(v); }
double cos_d(double v) { return std::cos(v); }
double tan_d(double v) { return std::tan(v); }
double asin_d(double v) { return std::asin(v); }
double acos_d(double v) { return std::acos(v); }
double atan_d(double v) { return std::atan(v); }
double sinh_d(double v) { return std::sinh(v); }
double cosh_d(double v) { return std::cosh(v); }
double asinh_d(double v) { return std::asinh(v); }
double acosh_d(double v) { return std::acosh(v); }
double atanh_d(double v) { return std::atanh(v); }
double log2_d(double v) { return std::log2(v); }
double log10_d(double v) { return std::log10(v); }
double log1p_d(double v) { return std::log1p(v); }
double erf_d(double v) { return std::erf(v); }
double expm1_d(double v) { return std::expm1(v); }
double trunc_d(double v) { return std::trunc(v); }

void gelu(const ir::GeluNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  if (n.approximate != "none" && n.approximate != "tanh")
    fail("Gelu: approximate must be \"none\" or \"tanh\", found \"" + n.approximate + "\"");
  ctx.set_tensor(n.out, map_unary(x, float_result(x.dtype()), n.approximate == "tanh" ? gelu_tanh : gelu_exact));
}

void round_node(const ir::RoundNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  if (!is_floating(x.dtype())) return ctx.set_tensor(n.out, x);
  const double scale = std::pow(10.0, n.decimals);
  const DType t = x.dtype();
  // MLX rounds half to even, scaling by 10^decimals in the tensor's own float type.
  ctx.set_tensor(n.out, map_unary(x, t, [&](double v) {
                   if (n.decimals == 0) return std::nearbyint(v);
                   return std::nearbyint(static_cast<float>(v * scale)) / scale;
                 }));
}

void logical_not(const ir::LogicalNotNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  ctx.set_tensor(n.out, map_unary(x, DType::Bool, [](double v) { return v == 0 ? 1.0 : 0.0; }));
}

void bitwise_invert(const ir::BitwiseInvertNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  if (is_floating(x.dtype())) fail("BitwiseInvert: expected an integer or bool tensor");
  if (x.dtype() == DType::Bool)
    return ctx.set_tensor(n.out, map_unary(x, DType::Bool, [](double v) { return v == 0 ? 1.0 : 0.0; }));
  ctx.set_tensor(n.out, map_unary_int(x, [](int64_t v) { return ~v; }));
}

// ---- binary ----

enum class Kind { Arithmetic, Compare, Logical, Bitwise, TrueDivide };

struct BinaryOp {
  double (*f)(double, double);
  int64_t (*i)(int64_t, int64_t);  // null: compute in floating point
  Kind kind = Kind::Arithmetic;
};

Tensor apply_binary(const Tensor& a, const Tensor& b, const BinaryOp& op) {
  DType compute = promote_types(a.dtype(), b.dtype());
  if (op.kind == Kind::TrueDivide || (!op.i && !is_floating(compute))) compute = float_result(compute);
  if (op.kind == Kind::Bitwise && is_floating(compute)) fail("bitwise op: expected integer or bool tensors");
  DType out_type = compute;
  if (op.kind == Kind::Compare || op.kind == Kind::Logical) out_type = DType::Bool;
  const Shape shape = broadcast_shapes(a.shape(), b.shape());
  Tensor out(out_type, shape);
  BroadcastIndex ia(a.shape(), shape), ib(b.shape(), shape);
  uint8_t* dst = out.mutable_data();
  const bool integer = op.i && !is_floating(compute) && op.kind != Kind::Logical;
  for (int64_t k = 0; k < out.numel(); ++k, ia.next(), ib.next()) {
    if (integer) {
      const int64_t r = op.i(load_as_int64(a.dtype(), a.data(), ia.offset()), load_as_int64(b.dtype(), b.data(), ib.offset()));
      store_int64(out_type, dst, k, r);
    } else {
      double x = load_as_double(a.dtype(), a.data(), ia.offset());
      double y = load_as_double(b.dtype(), b.data(), ib.offset());
      store_double(out_type, dst, k, op.f(x, y));
    }
  }
  return out;
}

double add_d(double a, double b) { return a + b; }
int64_t add_i(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); }
double sub_d(double a, double b) { return a - b; }
int64_t sub_i(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b)); }
double mul_d(double a, double b) { return a * b; }
int64_t mul_i(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); }
double div_d(double a, double b) { return a / b; }
double max_d(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
int64_t max_i(int64_t a, int64_t b) { return std::max(a, b); }
double min_d(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }
int64_t min_i(int64_t a, int64_t b) { return std::min(a, b); }
double pow_d(double a, double b) { return std::pow(a, b); }
int64_t pow_i(int64_t a, int64_t b) {
  if (b < 0) return 0;
  int64_t r = 1;
  for (; b > 0; --b) r = mul_i(r, a);
  return r;
}
double atan2_d(double a, double b) { return std::atan2(a, b); }
double logaddexp_d(double a, double b) {
  const double m = std::max(a, b);
  if (std::isinf(m) && m < 0) return m;
  return m + std::log1p(std::exp(-std::fabs(a - b)));
}
double floordiv_d(double a, double b) { return std::floor(a / b); }
int64_t floordiv_i(int64_t a, int64_t b) {
  if (b == 0) fail("FloorDivide: integer division by zero");
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
double rem_d(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
int64_t rem_i(int64_t a, int64_t b) {
  if (b == 0) fail("Remainder: integer division by zero");
  const int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
double lt_d(double a, double b) { return a < b; }
int64_t lt_i(int64_t a, int64_t b) { return a < b; }
double le_d(double a, double b) { return a <= b; }
int64_t le_i(int64_t a, int64_t b) { return a <= b; }
double gt_d(double a, double b) { return a > b; }
int64_t gt_i(int64_t a, int64_t b) { return a > b; }
double ge_d(double a, double b) { return a >= b; }
int64_t ge_i(int64_t a, int64_t b) { return a >= b; }
double eq_d(double a, double b) { return a == b; }
int64_t eq_i(int64_t a, int64_t b) { return a == b; }
double ne_d(double a, double b) { return a != b; }
int64_t ne_i(int64_t a, int64_t b) { return a != b; }
double and_d(double a, double b) { return a != 0 && b != 0; }
double or_d(double a, double b) { return a != 0 || b != 0; }
int64_t band_i(int64_t a, int64_t b) { return a & b; }
int64_t bor_i(int64_t a, int64_t b) { return a | b; }
int64_t bxor_i(int64_t a, int64_t b) { return a ^ b; }
double unused_d(double, double) { return 0; }

template <class N, double (*F)(double, double), int64_t (*I)(int64_t, int64_t), Kind K>
void binary(const N& n, ExecContext& ctx) {
  ctx.set_tensor(n.out, apply_binary(ctx.tensor(n.a), ctx.tensor(n.b), BinaryOp{F, I, K}));
}

void where(const ir::WhereNode& n, ExecContext& ctx) {
  const Tensor& c = ctx.tensor(n.condition);
  const Tensor& x = ctx.tensor(n.x);
  const Tensor& y = ctx.tensor(n.y);
  const DType t = promote_types(x.dtype(), y.dtype());
  const Shape shape = broadcast_shapes(c.shape(), broadcast_shapes(x.shape(), y.shape()));
  Tensor out(t, shape);
  BroadcastIndex ic(c.shape(), shape), ix(x.shape(), shape), iy(y.shape(), shape);
  uint8_t* dst = out.mutable_data();
  for (int64_t k = 0; k < out.numel(); ++k, ic.next(), ix.next(), iy.next()) {
    const bool take_x = load_as_double(c.dtype(), c.data(), ic.offset()) != 0;
    const Tensor& src = take_x ? x : y;
    const int64_t off = take_x ? ix.offset() : iy.offset();
    if (is_floating(t))
      store_double(t, dst, k, load_as_double(src.dtype(), src.data(), off));
    else
      store_int64(t, dst, k, load_as_int64(src.dtype(), src.data(), off));
  }
  ctx.set_tensor(n.out, std::move(out));
}

void clip(const ir::ClipNode& n, ExecContext& ctx) {
  Tensor out = ctx.tensor(n.x);
  if (const Tensor* lo = ctx.optional_tensor(n.a_min)) out = apply_binary(out, *lo, BinaryOp{max_d, max_i, Kind::Arithmetic});
  if (const Tensor* hi = ctx.optional_tensor(n.a_max)) out = apply_binary(out, *hi, BinaryOp{min_d, min_i, Kind::Arithmetic});
  ctx.set_tensor(n.out, std::move(out));
}

void as_type(const ir::AsTypeNode& n, ExecContext& ctx) {
  const auto t = dtype_from_scalar_type(n.scalar_type);
  if (!t) fail("AsType: unsupported scalar_type " + std::to_string(n.scalar_type));
  ctx.set_tensor(n.out, cast(ctx.tensor(n.x), *t));
}

}  // namespace

void register_elementwise(runtime::KernelTable& t) {
  using namespace ir;
  t.add<SiluNode, float_unary<SiluNode, silu>>();
  t.add<SigmoidNode, float_unary<SigmoidNode, sigmoid>>();
  t.add<TanhNode, float_unary<TanhNode, tanh_d>>();
  t.add<RsqrtNode, float_unary<RsqrtNode, rsqrt>>();
  t.add<LogNode, float_unary<LogNode, log_d>>();
  t.add<ExpNode, float_unary<ExpNode, exp_d>>();
  t.add<SinNode, float_unary<SinNode, sin_d>>();
  t.add<CosNode, float_unary<CosNode, cos_d>>();
  t.add<TanNode, float_unary<TanNode, tan_d>>();
  t.add<ArcsinNode, float_unary<ArcsinNode, asin_d>>();
  t.add<ArccosNode, float_unary<ArccosNode, acos_d>>();
  t.add<ArctanNode, float_unary<ArctanNode, atan_d>>();
  t.add<SinhNode, float_unary<SinhNode, sinh_d>>();
  t.add<CoshNode, float_unary<CoshNode, cosh_d>>();
  t.add<ArcsinhNode, float_unary<ArcsinhNode, asinh_d>>();
  t.add<ArccoshNode, float_unary<ArccoshNode, acosh_d>>();
  t.add<ArctanhNode, float_unary<ArctanhNode, atanh_d>>();
  t.add<Log2Node, float_unary<Log2Node, log2_d>>();
  t.add<Log10Node, float_unary<Log10Node, log10_d>>();
  t.add<Log1pNode, float_unary<Log1pNode, log1p_d>>();
  t.add<ErfNode, float_unary<ErfNode, erf_d>>();
  t.add<Expm1Node, float_unary<Expm1Node, expm1_d>>();
  t.add<ReciprocalNode, float_unary<ReciprocalNode, reciprocal>>();
  t.add<SqrtNode, float_unary<SqrtNode, sqrt_d>>();
  t.add<AbsNode, dtype_preserving_unary<AbsNode, fabs_d, abs_i>>();
  t.add<NegNode, dtype_preserving_unary<NegNode, neg, neg_i>>();
  t.add<SquareNode, dtype_preserving_unary<SquareNode, square, square_i>>();
  t.add<SignNode, dtype_preserving_unary<SignNode, sign, sign_i>>();
  t.add<FloorNode, dtype_preserving_unary<FloorNode, floor_d, identity_i>>();
  t.add<CeilNode, dtype_preserving_unary<CeilNode, ceil_d, identity_i>>();
  t.add<TruncNode, dtype_preserving_unary<TruncNode, trunc_d, identity_i>>();
  t.add<GeluNode, gelu>();
  t.add<RoundNode, round_node>();
  t.add<LogicalNotNode, logical_not>();
  t.add<BitwiseInvertNode, bitwise_invert>();
  t.add<AddNode, binary<AddNode, add_d, add_i, Kind::Arithmetic>>();
  t.add<SubtractNode, binary<SubtractNode, sub_d, sub_i, Kind::Arithmetic>>();
  t.add<MultiplyNode, binary<MultiplyNode, mul_d, mul_i, Kind::Arithmetic>>();
  t.add<DivideNode, binary<DivideNode, div_d, nullptr, Kind::TrueDivide>>();
  t.add<MaximumNode, binary<MaximumNode, max_d, max_i, Kind::Arithmetic>>();
  t.add<MinimumNode, binary<MinimumNode, min_d, min_i, Kind::Arithmetic>>();
  t.add<PowerNode, binary<PowerNode, pow_d, pow_i, Kind::Arithmetic>>();
  t.add<Atan2Node, binary<Atan2Node, atan2_d, nullptr, Kind::Arithmetic>>();
  t.add<LogAddExpNode, binary<LogAddExpNode, logaddexp_d, nullptr, Kind::Arithmetic>>();
  t.add<FloorDivideNode, binary<FloorDivideNode, floordiv_d, floordiv_i, Kind::Arithmetic>>();
  t.add<RemainderNode, binary<RemainderNode, rem_d, rem_i, Kind::Arithmetic>>();
  t.add<LessNode, binary<LessNode, lt_d, lt_i, Kind::Compare>>();
  t.add<LessEqualNode, binary<LessEqualNode, le_d, le_i, Kind::Compare>>();
  t.add<GreaterNode, binary<GreaterNode, gt_d, gt_i, Kind::Compare>>();
  t.add<GreaterEqualNode, binary<GreaterEqualNode, ge_d, ge_i, Kind::Compare>>();
  t.add<EqualNode, binary<EqualNode, eq_d, eq_i, Kind::Compare>>();
  t.add<NotEqualNode, binary<NotEqualNode, ne_d, ne_i, Kind::Compare>>();
  t.add<LogicalAndNode, binary<LogicalAndNode, and_d, nullptr, Kind::Logical>>();
  t.add<LogicalOrNode, binary<LogicalOrNode, or_d, nullptr, Kind::Logical>>();
  t.add<BitwiseAndNode, binary<BitwiseAndNode, unused_d, band_i, Kind::Bitwise>>();
  t.add<BitwiseOrNode, binary<BitwiseOrNode, unused_d, bor_i, Kind::Bitwise>>();
  t.add<BitwiseXorNode, binary<BitwiseXorNode, unused_d, bxor_i, Kind::Bitwise>>();
  t.add<WhereNode, where>();
  t.add<ClipNode, clip>();
  t.add<AsTypeNode, as_type>();
}

}  // namespace wgml::backend::cpu
