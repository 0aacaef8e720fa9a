// Neural-network nodes with MLX "fast" semantics: Addmm, RMSNorm, LayerNorm, Softmax, Rope, Sdpa,
// UpdateAndAttend.
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <vector>

#include "backend/cpu/broadcast.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/kv_cache.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/rounding.h"
#include "backend/cpu/strided.h"
#include "core/elements.h"
#include "core/layout.h"

namespace wgml::backend::cpu {
namespace {

using runtime::ExecContext;
using runtime::fail;

double at(const Tensor& t, int64_t i) { return load_as_double(t.dtype(), t.data(), i); }

// MLX's addmm is alpha * (a @ b) + beta * c in one float GEMM (one rounding); without a bias
// ExecuTorch emits a plain matmul, so alpha is not applied.
void addmm(const ir::AddmmNode& n, ExecContext& ctx) {
  const Tensor& a = ctx.tensor(n.mat1);
  const Tensor& b = ctx.tensor(n.mat2);
  const Tensor* bias = ctx.optional_tensor(n.bias);
  const DType t = promote_types(a.dtype(), b.dtype());
  if (!bias) return ctx.set_tensor(n.out, matmul(a, b, t));
  const Tensor prod = matmul(a, b, DType::Float64);
  const Tensor biased = broadcast_to(*bias, prod.shape());
  Tensor out(promote_types(t, bias->dtype()), prod.shape());
  uint8_t* dst = out.mutable_data();
  for (int64_t i = 0; i < prod.numel(); ++i)
    store_double(out.dtype(), dst, i, double{n.alpha} * at(prod, i) + double{n.beta} * at(biased, i));
  ctx.set_tensor(n.out, std::move(out));
}

// Applies f(row_in, row_out) to every row along the last axis; results are stored in `out_type`.
template <class F>
Tensor per_last_axis(const Tensor& x, DType out_type, F f) {
  if (x.rank() < 1) fail("expected a tensor of rank >= 1");
  const int64_t len = x.dim(x.rank() - 1);
  Tensor out(out_type, x.shape());
  std::vector<double> in(static_cast<size_t>(len)), res(static_cast<size_t>(len));
  uint8_t* dst = out.mutable_data();
  for (int64_t r = 0; len > 0 && r < x.numel() / len; ++r) {
    for (int64_t i = 0; i < len; ++i) in[i] = at(x, r * len + i);
    f(in, res);
    for (int64_t i = 0; i < len; ++i) store_double(out_type, dst, r * len + i, res[i]);
  }
  return out;
}

// A weight or bias row, rounded to `t` as MLX casts it (absent: `fill`).
std::vector<double> optional_row(const Tensor* t, int64_t len, double fill, DType type) {
  std::vector<double> out(static_cast<size_t>(len), fill);
  if (!t) return out;
  if (t->numel() != len) fail("weight/bias has " + std::to_string(t->numel()) + " elements, expected " + std::to_string(len));
  for (int64_t i = 0; i < len; ++i) out[i] = round_to(type, at(*t, i));
  return out;
}

DType norm_type(const Tensor& x) {
  if (!is_floating(x.dtype())) fail("norm: expected a floating tensor");
  return x.dtype();
}

// MLX: normalise in float32, cast to x's dtype, then multiply by the weight in that dtype.
void rms_norm(const ir::RMSNormNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  const DType t = norm_type(x);
  const Tensor* weight = ctx.optional_tensor(n.weight);
  const auto w = optional_row(weight, x.dim(x.rank() - 1), 1.0, t);
  ctx.set_tensor(n.out, per_last_axis(x, t, [&](const std::vector<double>& in, std::vector<double>& out) {
                   double ss = 0;
                   for (double v : in) ss += v * v;
                   const double inv = 1.0 / std::sqrt(ss / static_cast<double>(in.size()) + double{n.eps});
                   for (size_t i = 0; i < in.size(); ++i) {
                     const double normed = round_to(t, round_to(DType::Float32, in[i] * inv));
                     out[i] = weight ? round_to(t, normed * w[i]) : normed;
                   }
                 }));
}

void layer_norm(const ir::LayerNormNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  const DType t = norm_type(x);
  const int64_t len = x.dim(x.rank() - 1);
  const Tensor* weight = ctx.optional_tensor(n.weight);
  const Tensor* bias = ctx.optional_tensor(n.bias);
  const auto w = optional_row(weight, len, 1.0, t);
  const auto b = optional_row(bias, len, 0.0, t);
  ctx.set_tensor(n.out, per_last_axis(x, t, [&](const std::vector<double>& in, std::vector<double>& out) {
                   double mean = 0, var = 0;
                   for (double v : in) mean += v;
                   mean /= static_cast<double>(in.size());
                   for (double v : in) var += (v - mean) * (v - mean);
                   const double inv = 1.0 / std::sqrt(var / static_cast<double>(in.size()) + double{n.eps});
                   for (size_t i = 0; i < in.size(); ++i) {
                     double v = round_to(t, round_to(DType::Float32, (in[i] - mean) * inv));
                     if (weight) v = round_to(t, v * w[i]);
                     if (bias) v = round_to(t, v + b[i]);
                     out[i] = v;
                   }
                 }));
}

// Softmax of one row. Half-precision inputs without `precise` compute in their own dtype as MLX
// does (each exp, sum and product rounded); everything else in double, rounded once.
void softmax_row(const std::vector<double>& in, std::vector<double>& out, DType compute) {
  const Rounder r{compute};
  double m = -std::numeric_limits<double>::infinity();
  for (double v : in) m = std::max(m, v);
  double sum = 0;
  for (size_t i = 0; i < in.size(); ++i) sum = r(sum + (out[i] = r(std::exp(r(in[i] - m)))));
  const double inv = r(1.0 / sum);
  for (double& v : out) v = r(v * inv);
}

DType softmax_compute_type(DType t, bool precise) {
  return (t == DType::Float16 || t == DType::BFloat16) && !precise ? t : DType::Float64;
}

void softmax(const ir::SoftmaxNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  if (!is_floating(x.dtype())) fail("Softmax: expected a floating tensor");
  const int axis = normalize_axis(n.axis, x.rank());
  const DType compute = softmax_compute_type(x.dtype(), n.precise);
  // Move the axis last, normalise rows, move it back.
  std::vector<int> perm, inverse(static_cast<size_t>(x.rank()));
  for (int d = 0; d < x.rank(); ++d)
    if (d != axis) perm.push_back(d);
  perm.push_back(axis);
  for (int i = 0; i < x.rank(); ++i) inverse[perm[i]] = i;
  ctx.set_tensor(
      n.out,
      permute(per_last_axis(permute(x, perm), x.dtype(),
                            [&](const std::vector<double>& in, std::vector<double>& out) { softmax_row(in, out, compute); }),
              inverse));
}

// MLX's rope: angles (positions + offset) * scale times inverse frequencies, all in float32;
// cos and sin cast to x's dtype; the rotation's products and sums in x's dtype.
void rope(const ir::RopeNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  if (x.rank() < 3) fail("Rope: expected rank >= 3 ([..., T, D]), found rank " + std::to_string(x.rank()));
  if (!is_floating(x.dtype())) fail("Rope: expected a floating tensor");
  const int64_t d_model = x.dim(x.rank() - 1), steps = x.dim(x.rank() - 2);
  const int64_t dims = n.dims;
  if (dims <= 0 || dims % 2 != 0 || dims > d_model)
    fail("Rope: dims must be even and at most " + std::to_string(d_model) + ", found " + std::to_string(dims));
  const int64_t half = dims / 2;
  const DType t = x.dtype();
  const auto f32 = [](double v) { return static_cast<double>(static_cast<float>(v)); };
  std::vector<double> inv_freq(static_cast<size_t>(half));
  const Tensor* freqs = ctx.optional_tensor(n.freqs);
  if (freqs && freqs->numel() != half) fail("Rope: freqs must have dims/2 elements");
  const float log_step = std::log(n.base) / static_cast<float>(half);
  for (int64_t i = 0; i < half; ++i)
    inv_freq[i] = freqs ? round_to(freqs->dtype(), 1.0 / at(*freqs, i))
                        : f32(std::exp(static_cast<float>(-static_cast<float>(i) * log_step)));
  // Offset: a value slot, or a tensor holding one offset or one per batch (leading dim).
  const int64_t batch = x.dim(0), per_batch = x.numel() / std::max<int64_t>(batch, 1);
  auto offset_for = [&](int64_t b) -> double {
    if (n.offset.is_vid) return ctx.int_value(n.offset.vid);
    const Tensor& o = ctx.tensor(n.offset.tid);
    if (o.numel() == 1) return at(o, 0);
    if (o.numel() != batch) fail("Rope: offset tensor must have 1 or " + std::to_string(batch) + " elements");
    return at(o, b);
  };
  Tensor out = x;
  uint8_t* dst = out.mutable_data();
  const int64_t rows = x.numel() / std::max<int64_t>(d_model, 1);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t b = (r * d_model) / per_batch;
    const double pos = f32(f32(static_cast<double>(r % steps) + offset_for(b)) * n.scale);
    const int64_t base = r * d_model;
    for (int64_t i = 0; i < half; ++i) {
      const double theta = f32(pos * inv_freq[i]);
      const double c = round_to(t, std::cos(static_cast<float>(theta)));
      const double s = round_to(t, std::sin(static_cast<float>(theta)));
      const int64_t i1 = n.traditional ? base + 2 * i : base + i;
      const int64_t i2 = n.traditional ? base + 2 * i + 1 : base + i + half;
      const double x1 = at(x, i1), x2 = at(x, i2);
      store_double(t, dst, i1, round_to(t, x1 * c) - round_to(t, x2 * s));
      store_double(t, dst, i2, round_to(t, x1 * s) + round_to(t, x2 * c));
    }
  }
  ctx.set_tensor(n.out, std::move(out));
}

// MLX's attention on the CPU: q scaled in its dtype, scores rounded to it, masked positions set
// to the dtype's lowest finite value (a fully masked row stays finite), softmax in float32, then
// probabilities (rounded) times v. Causal masking is aligned bottom-right.
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale, const Tensor* mask, bool causal) {
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4) fail("attention: q, k and v must be rank 4 [B, H, L, D]");
  const int64_t B = q.dim(0), Hq = q.dim(1), Lq = q.dim(2), D = q.dim(3);
  const int64_t Hkv = k.dim(1), Lk = k.dim(2), Dv = v.dim(3);
  if (k.dim(0) != B || v.dim(0) != B || k.dim(3) != D || v.dim(1) != Hkv || v.dim(2) != Lk || Hkv == 0 || Hq % Hkv != 0)
    fail("attention: incompatible q/k/v shapes (GQA needs Hq divisible by Hkv)");
  const DType t = q.dtype();
  const Rounder r{t};
  const Tensor mask_full = mask ? broadcast_to(*mask, {B, Hq, Lq, Lk}) : Tensor();
  const double lowest = t == DType::Float16 ? -65504.0 : (t == DType::BFloat16 ? -3.3895313892515355e38 : -3.4028234663852886e38);
  const double qscale = round_to(t, scale);
  Tensor out(t, {B, Hq, Lq, Dv});
  uint8_t* dst = out.mutable_data();
  std::vector<double> scores(static_cast<size_t>(Lk)), probs(static_cast<size_t>(Lk));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t hk = h / (Hq / Hkv);
      for (int64_t i = 0; i < Lq; ++i) {
        for (int64_t j = 0; j < Lk; ++j) {
          double s = 0;
          for (int64_t d = 0; d < D; ++d)
            s += r(qscale * at(q, ((b * Hq + h) * Lq + i) * D + d)) * at(k, ((b * Hkv + hk) * Lk + j) * D + d);
          s = r(s);
          if (causal && j > i + Lk - Lq) s = lowest;
          if (mask) {
            const int64_t mi = ((b * Hq + h) * Lq + i) * Lk + j;
            if (mask_full.dtype() == DType::Bool) {
              if (at(mask_full, mi) == 0) s = lowest;
            } else {
              s = r(s + round_to(t, at(mask_full, mi)));
            }
          }
          scores[j] = s;
        }
        softmax_row(scores, probs, DType::Float64);
        for (int64_t d = 0; d < Dv; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < Lk; ++j) acc += r(probs[j]) * at(v, ((b * Hkv + hk) * Lk + j) * Dv + d);
          store_double(t, dst, ((b * Hq + h) * Lq + i) * Dv + d, acc);
        }
      }
    }
  return out;
}

void sdpa(const ir::SdpaNode& n, ExecContext& ctx) {
  const Tensor& q = ctx.tensor(n.q);
  if (!is_floating(q.dtype())) fail("Sdpa: expected floating q");
  ctx.set_tensor(n.out, attention(q, ctx.tensor(n.k), ctx.tensor(n.v), n.scale, ctx.optional_tensor(n.mask), n.causal));
}

// dst [1, H, S, D] with `update` [1, H, T, D] written at `position`, grown as needed.
Tensor write_rows(Tensor dst, const Tensor& update, int64_t position) {
  const int64_t H = update.dim(1), T = update.dim(2), D = update.dim(3);
  if (!dst.defined()) dst = Tensor(update.dtype(), {1, H, 0, D});
  if (dst.dim(1) != H || dst.dim(3) != D || dst.dtype() != update.dtype())
    fail("UpdateAndAttend: K/V heads, head size or dtype changed between steps");
  if (position + T > dst.dim(2)) {
    Tensor grown(dst.dtype(), {1, H, position + T, D});
    const size_t row = static_cast<size_t>(D) * dtype_size(dst.dtype());
    for (int64_t h = 0; h < H; ++h)
      for (int64_t s = 0; s < dst.dim(2); ++s)
        std::memcpy(grown.mutable_data() + (h * (position + T) + s) * row, dst.data() + (h * dst.dim(2) + s) * row, row);
    dst = std::move(grown);
  }
  const size_t row = static_cast<size_t>(D) * dtype_size(dst.dtype());
  uint8_t* out = dst.mutable_data();
  for (int64_t h = 0; h < H; ++h)
    for (int64_t s = 0; s < T; ++s)
      std::memcpy(out + (h * dst.dim(2) + position + s) * row, update.data() + (h * T + s) * row, row);
  return dst;
}

// The first `len` positions of a cache tensor [1, H, S, D], cast to `t`.
Tensor history(const Tensor& cache, int64_t len, DType t) {
  std::vector<int64_t> strides{cache.dim(1) * cache.dim(2) * cache.dim(3), cache.dim(2) * cache.dim(3), cache.dim(3), 1};
  return cast(gather_strided(cache, {1, cache.dim(1), len, cache.dim(3)}, strides, 0), t);
}

void update_and_attend(const ir::UpdateAndAttendNode& n, ExecContext& ctx) {
  if (!n.layer_id) fail("UpdateAndAttend: layer_id is not set");
  if (!n.scale) fail("UpdateAndAttend: scale is not set");
  const Tensor& q = ctx.tensor(n.q);
  const Tensor& k = ctx.tensor(n.k);
  const Tensor& v = ctx.tensor(n.v);
  const Tensor& pos = ctx.tensor(n.position);
  if (pos.numel() < 1 || (pos.dtype() != DType::Int32 && pos.dtype() != DType::Int64))
    fail("UpdateAndAttend: position must be a non-empty int32 or int64 tensor");
  if (k.rank() != 4 || v.rank() != 4 || k.dim(0) != 1 || k.shape() != v.shape())
    fail("UpdateAndAttend: k and v must be [1, H, T, D] of one shape");
  const int64_t position = load_as_int64(pos.dtype(), pos.data(), 0);
  if (position < 0) fail("UpdateAndAttend: position must be >= 0");
  KvCache::Layer& layer = ctx.persistent_state<KvCache>().layers[*n.layer_id];
  layer.k = write_rows(layer.k, k, position);
  layer.v = write_rows(layer.v, v, position);
  const int64_t steps = k.dim(2), len = position + steps;
  Tensor out = attention(q, history(layer.k, len, q.dtype()), history(layer.v, len, q.dtype()), *n.scale, nullptr, steps > 1);
  if (n.out_dtype) {
    const auto t = dtype_from_scalar_type(*n.out_dtype);
    if (!t) fail("UpdateAndAttend: unsupported out_dtype " + std::to_string(*n.out_dtype));
    out = cast(out, *t);
  }
  ctx.set_tensor(n.out, std::move(out));
}

}  // namespace

void register_nn_ops(runtime::KernelTable& t) {
  using namespace ir;
  t.add<AddmmNode, addmm>();
  t.add<RMSNormNode, rms_norm>();
  t.add<LayerNormNode, layer_norm>();
  t.add<SoftmaxNode, softmax>();
  t.add<RopeNode, rope>();
  t.add<SdpaNode, sdpa>();
  t.add<UpdateAndAttendNode, update_and_attend>();
}

}  // namespace wgml::backend::cpu
