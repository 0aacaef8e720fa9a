// Reductions over a set of axes (empty = all), with keepdims; arg-reductions along one axis.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/strided.h"
#include "core/elements.h"
#include "core/layout.h"

namespace wgml::backend::cpu {
namespace {

using runtime::ExecContext;
using runtime::fail;

// x with the reduced axes moved last, as (kept shape, rows of `len` values).
struct Rows {
  Shape kept_shape;  // output shape without keepdims
  Shape keep_shape;  // output shape with keepdims
  int64_t len = 1;
  Tensor moved;
};

Rows rows_for(const Tensor& x, const std::vector<int32_t>& axes_in) {
  std::vector<bool> reduced(static_cast<size_t>(x.rank()), axes_in.empty());
  for (int32_t a : axes_in) reduced[normalize_axis(a, x.rank())] = true;
  Rows r;
  std::vector<int> perm;
  for (int d = 0; d < x.rank(); ++d)
    if (!reduced[d]) {
      perm.push_back(d);
      r.kept_shape.push_back(x.dim(d));
    }
  for (int d = 0; d < x.rank(); ++d) {
    r.keep_shape.push_back(reduced[d] ? 1 : x.dim(d));
    if (reduced[d]) {
      perm.push_back(d);
      r.len *= x.dim(d);
    }
  }
  r.moved = permute(x, perm);
  return r;
}

// Reduces each row of V (double, or int64_t for integer math) with f, writing `out_type`; an
// int64_t result wraps to the output dtype as MLX's integer reductions do.
template <class V = double, class F>
Tensor reduce(const Tensor& x, const std::vector<int32_t>& axes, bool keepdims, DType out_type, F f) {
  Rows r = rows_for(x, axes);
  Tensor out(out_type, keepdims ? r.keep_shape : r.kept_shape);
  std::vector<V> row(static_cast<size_t>(r.len));
  uint8_t* dst = out.mutable_data();
  for (int64_t o = 0; o < out.numel(); ++o) {
    for (int64_t i = 0; i < r.len; ++i) {
      if constexpr (std::is_same_v<V, double>)
        row[i] = load_as_double(x.dtype(), r.moved.data(), o * r.len + i);
      else
        row[i] = load_as_int64(x.dtype(), r.moved.data(), o * r.len + i);
    }
    const auto result = f(row);
    if constexpr (std::is_same_v<decltype(result), const double>)
      store_double(out_type, dst, o, result);
    else
      store_int64(out_type, dst, o, result);
  }
  return out;
}

DType float_result(DType t) { return is_floating(t) ? t : DType::Float32; }
// MLX sums bool and small signed integers into int32, uint8 into uint32; wider types keep theirs.
DType sum_result(DType t) {
  if (t == DType::Bool || t == DType::Int8 || t == DType::Int16) return DType::Int32;
  if (t == DType::UInt8) return DType::UInt32;
  return t;
}

double sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}
double mean(const std::vector<double>& v) { return sum(v) / static_cast<double>(v.size()); }
double prod(const std::vector<double>& v) {
  double p = 1;
  for (double x : v) p *= x;
  return p;
}
// Integer sums and products wrap (two's complement), computed unsigned to stay defined.
int64_t sum_int(const std::vector<int64_t>& v) {
  uint64_t s = 0;
  for (int64_t x : v) s += static_cast<uint64_t>(x);
  return static_cast<int64_t>(s);
}
int64_t prod_int(const std::vector<int64_t>& v) {
  uint64_t p = 1;
  for (int64_t x : v) p *= static_cast<uint64_t>(x);
  return static_cast<int64_t>(p);
}
double max_of(const std::vector<double>& v) {
  double m = -std::numeric_limits<double>::infinity();
  for (double x : v) m = std::isnan(x) || std::isnan(m) ? NAN : std::max(m, x);
  return m;
}
double min_of(const std::vector<double>& v) {
  double m = std::numeric_limits<double>::infinity();
  for (double x : v) m = std::isnan(x) || std::isnan(m) ? NAN : std::min(m, x);
  return m;
}
// MLX divides by max(count - ddof, 0): inf (NaN for a zero sum) once ddof reaches the count.
double variance(const std::vector<double>& v, int ddof) {
  const double m = mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / static_cast<double>(std::max<int64_t>(static_cast<int64_t>(v.size()) - ddof, 0));
}
double logsumexp(const std::vector<double>& v) {
  const double m = max_of(v);
  if (std::isinf(m)) return m;
  double s = 0;
  for (double x : v) s += std::exp(x - m);
  return m + std::log(s);
}

void sum_node(const ir::SumNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  if (!is_floating(x.dtype()))
    return ctx.set_tensor(n.out, reduce<int64_t>(x, n.axes, n.keepdims, sum_result(x.dtype()), sum_int));
  ctx.set_tensor(n.out, reduce(x, n.axes, n.keepdims, sum_result(x.dtype()), sum));
}
// MLX's mean of integers divides their sum, wrapped to the sum's dtype, by the count.
void mean_node(const ir::MeanNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  if (is_floating(x.dtype())) return ctx.set_tensor(n.out, reduce(x, n.axes, n.keepdims, x.dtype(), mean));
  const DType sum_type = sum_result(x.dtype());
  ctx.set_tensor(n.out, reduce<int64_t>(x, n.axes, n.keepdims, DType::Float32, [sum_type](const std::vector<int64_t>& v) {
                   uint8_t wrapped[8];
                   store_int64(sum_type, wrapped, 0, sum_int(v));
                   return static_cast<double>(load_as_int64(sum_type, wrapped, 0)) / static_cast<double>(v.size());
                 }));
}
void prod_node(const ir::ProdNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  if (!is_floating(x.dtype()))
    return ctx.set_tensor(n.out, reduce<int64_t>(x, n.axes, n.keepdims, sum_result(x.dtype()), prod_int));
  ctx.set_tensor(n.out, reduce(x, n.axes, n.keepdims, sum_result(x.dtype()), prod));
}
void max_node(const ir::MaxNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  ctx.set_tensor(n.out, reduce(x, n.axes, n.keepdims, x.dtype(), max_of));
}
void min_node(const ir::MinNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  ctx.set_tensor(n.out, reduce(x, n.axes, n.keepdims, x.dtype(), min_of));
}
void var_node(const ir::VarNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  ctx.set_tensor(n.out, reduce(x, n.axes, n.keepdims, float_result(x.dtype()),
                               [&](const std::vector<double>& v) { return variance(v, n.ddof); }));
}
void std_node(const ir::StdNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  ctx.set_tensor(n.out, reduce(x, n.axes, n.keepdims, float_result(x.dtype()),
                               [&](const std::vector<double>& v) { return std::sqrt(variance(v, n.ddof)); }));
}
// MLX's logsumexp: reducing the trailing axis runs a kernel on x cast to a float type (exact
// here); any other axes compose ops in x's own dtype, so integer inputs subtract the maximum with
// wrap-around before exponentiating. ExecuTorch passes the axes as they are: an empty list reduces
// nothing, and the log-sum-exp of one element is the element.
bool reduces_trailing_axis(const std::vector<int32_t>& axes, const Tensor& x) {
  if (axes.empty() || normalize_axis(axes.back(), x.rank()) != x.rank() - 1) return false;
  for (size_t i = 0; i + 1 < axes.size(); ++i)
    if (normalize_axis(axes[i], x.rank()) + 1 != normalize_axis(axes[i + 1], x.rank()) ||
        x.dim(normalize_axis(axes[i], x.rank())) != 1)
      return false;
  return true;
}

void logsumexp_node(const ir::LogSumExpNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  if (n.axes.empty()) return ctx.set_tensor(n.out, cast(x, float_result(x.dtype())));
  if (is_floating(x.dtype()) || reduces_trailing_axis(n.axes, x))
    return ctx.set_tensor(n.out, reduce(x, n.axes, n.keepdims, float_result(x.dtype()), logsumexp));
  const DType t = x.dtype();
  ctx.set_tensor(n.out, reduce<int64_t>(x, n.axes, n.keepdims, DType::Float32, [t](const std::vector<int64_t>& v) {
                   int64_t m = v.empty() ? 0 : v[0];
                   for (int64_t e : v) m = std::max(m, e);
                   double s = 0;
                   uint8_t wrapped[8];
                   for (int64_t e : v) {
                     store_int64(t, wrapped, 0, e - m);
                     s += static_cast<float>(std::exp(static_cast<double>(load_as_int64(t, wrapped, 0))));  // float32 exp
                   }
                   return std::log(s) + static_cast<double>(m);
                 }));
}

void any_node(const ir::AnyNode& n, ExecContext& ctx) {
  ctx.set_tensor(n.out, reduce(ctx.tensor(n.x), n.axes, n.keepdims, DType::Bool, [](const std::vector<double>& v) {
                   for (double x : v)
                     if (x != 0) return 1.0;
                   return 0.0;
                 }));
}
void all_node(const ir::AllNode& n, ExecContext& ctx) {
  ctx.set_tensor(n.out, reduce(ctx.tensor(n.x), n.axes, n.keepdims, DType::Bool, [](const std::vector<double>& v) {
                   for (double x : v)
                     if (x == 0) return 0.0;
                   return 1.0;
                 }));
}

// First index of the extreme value along one axis, as uint32 (MLX's index type).
template <bool IsMax>
Tensor arg_reduce(const Tensor& x, int32_t axis, bool keepdims) {
  const int a = normalize_axis(axis, x.rank());
  return reduce(x, {a}, keepdims, DType::UInt32, [](const std::vector<double>& v) {
    size_t best = 0;
    for (size_t i = 1; i < v.size(); ++i) {
      if (std::isnan(v[best])) break;
      if (std::isnan(v[i]) || (IsMax ? v[i] > v[best] : v[i] < v[best])) best = i;
    }
    return static_cast<double>(best);
  });
}
void argmax_node(const ir::ArgmaxNode& n, ExecContext& ctx) {
  ctx.set_tensor(n.out, arg_reduce<true>(ctx.tensor(n.x), n.axis, n.keepdims));
}
void argmin_node(const ir::ArgminNode& n, ExecContext& ctx) {
  ctx.set_tensor(n.out, arg_reduce<false>(ctx.tensor(n.x), n.axis, n.keepdims));
}

}  // namespace

void register_reduce_ops(runtime::KernelTable& t) {
  using namespace ir;
  t.add<SumNode, sum_node>();
  t.add<MeanNode, mean_node>();
  t.add<ProdNode, prod_node>();
  t.add<MaxNode, max_node>();
  t.add<MinNode, min_node>();
  t.add<VarNode, var_node>();
  t.add<StdNode, std_node>();
  t.add<LogSumExpNode, logsumexp_node>();
  t.add<AnyNode, any_node>();
  t.add<AllNode, all_node>();
  t.add<ArgmaxNode, argmax_node>();
  t.add<ArgminNode, argmin_node>();
}

}  // namespace wgml::backend::cpu
