// Neural-network nodes with MLX "fast" semantics: Addmm, RMSNorm, LayerNorm, Softmax, Rope, Sdpa.
#include <cmath>
#include <limits>
#include <vector>

#include "backend/cpu/broadcast.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/strided.h"
#include "core/elements.h"
#include "core/layout.h"

namespace wgml::backend::cpu {
namespace {

using runtime::ExecContext;
using runtime::fail;

double at(const Tensor& t, int64_t i) { return load_as_double(t.dtype(), t.data(), i); }

void addmm(const ir::AddmmNode& n, ExecContext& ctx) {
  const Tensor& a = ctx.tensor(n.mat1);
  const Tensor& b = ctx.tensor(n.mat2);
  const DType t = promote_types(a.dtype(), b.dtype());
  Tensor prod = matmul(a, b, DType::Float64);
  const Tensor* bias = ctx.optional_tensor(n.bias);
  const Tensor biased = bias ? broadcast_to(*bias, prod.shape()) : Tensor();
  Tensor out(bias ? promote_types(t, bias->dtype()) : t, prod.shape());
  uint8_t* dst = out.mutable_data();
  for (int64_t i = 0; i < prod.numel(); ++i) {
    double v = n.alpha * at(prod, i);
    if (bias) v += n.beta * at(biased, i);
    store_double(out.dtype(), dst, i, v);
  }
  ctx.set_tensor(n.out, std::move(out));
}

// Applies f(row_in, row_out, length) to every row along the last axis.
template <class F>
Tensor per_last_axis(const Tensor& x, F f) {
  if (x.rank() < 1) fail("expected a tensor of rank >= 1");
  const int64_t len = x.dim(x.rank() - 1);
  Tensor out(x.dtype(), x.shape());
  std::vector<double> in(static_cast<size_t>(len)), res(static_cast<size_t>(len));
  uint8_t* dst = out.mutable_data();
  for (int64_t r = 0; len > 0 && r < x.numel() / len; ++r) {
    for (int64_t i = 0; i < len; ++i) in[i] = at(x, r * len + i);
    f(in, res);
    for (int64_t i = 0; i < len; ++i) store_double(x.dtype(), dst, r * len + i, res[i]);
  }
  return out;
}

std::vector<double> optional_row(const Tensor* t, int64_t len, double fill) {
  std::vector<double> out(static_cast<size_t>(len), fill);
  if (!t) return out;
  if (t->numel() != len) fail("weight/bias has " + std::to_string(t->numel()) + " elements, expected " + std::to_string(len));
  for (int64_t i = 0; i < len; ++i) out[i] = at(*t, i);
  return out;
}

void rms_norm(const ir::RMSNormNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  const auto w = optional_row(ctx.optional_tensor(n.weight), x.dim(x.rank() - 1), 1.0);
  ctx.set_tensor(n.out, per_last_axis(x, [&](const std::vector<double>& in, std::vector<double>& out) {
    double ss = 0;
    for (double v : in) ss += v * v;
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(in.size()) + n.eps);
    for (size_t i = 0; i < in.size(); ++i) out[i] = in[i] * inv * w[i];
  }));
}

void layer_norm(const ir::LayerNormNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  const int64_t len = x.dim(x.rank() - 1);
  const auto w = optional_row(ctx.optional_tensor(n.weight), len, 1.0);
  const auto b = optional_row(ctx.optional_tensor(n.bias), len, 0.0);
  ctx.set_tensor(n.out, per_last_axis(x, [&](const std::vector<double>& in, std::vector<double>& out) {
    double mean = 0, var = 0;
    for (double v : in) mean += v;
    mean /= static_cast<double>(in.size());
    for (double v : in) var += (v - mean) * (v - mean);
    const double inv = 1.0 / std::sqrt(var / static_cast<double>(in.size()) + n.eps);
    for (size_t i = 0; i < in.size(); ++i) out[i] = (in[i] - mean) * inv * w[i] + b[i];
  }));
}

void softmax_row(const std::vector<double>& in, std::vector<double>& out) {
  double m = -std::numeric_limits<double>::infinity();
  for (double v : in) m = std::max(m, v);
  double sum = 0;
  for (size_t i = 0; i < in.size(); ++i) sum += (out[i] = std::exp(in[i] - m));
  for (double& v : out) v /= sum;
}

void softmax(const ir::SoftmaxNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  const int axis = normalize_axis(n.axis, x.rank());
  // Move the axis last, normalise rows, move it back.
  std::vector<int> perm, inverse(static_cast<size_t>(x.rank()));
  for (int d = 0; d < x.rank(); ++d)
    if (d != axis) perm.push_back(d);
  perm.push_back(axis);
  for (int i = 0; i < x.rank(); ++i) inverse[perm[i]] = i;
  ctx.set_tensor(n.out, permute(per_last_axis(permute(x, perm), softmax_row), inverse));
}

void rope(const ir::RopeNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  if (x.rank() < 3) fail("Rope: expected rank >= 3 ([..., T, D]), found rank " + std::to_string(x.rank()));
  const int64_t d_model = x.dim(x.rank() - 1), steps = x.dim(x.rank() - 2);
  const int64_t dims = n.dims;
  if (dims <= 0 || dims % 2 != 0 || dims > d_model)
    fail("Rope: dims must be even and at most " + std::to_string(d_model) + ", found " + std::to_string(dims));
  const int64_t half = dims / 2;
  std::vector<double> inv_freq(static_cast<size_t>(half));
  const Tensor* freqs = ctx.optional_tensor(n.freqs);
  if (freqs && freqs->numel() != half) fail("Rope: freqs must have dims/2 elements");
  for (int64_t i = 0; i < half; ++i)
    inv_freq[i] = freqs ? 1.0 / at(*freqs, i) : std::pow(static_cast<double>(n.base), -2.0 * i / dims);
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
  const int64_t rows = x.numel() / d_model;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t b = (r * d_model) / per_batch;
    const double pos = (static_cast<double>(r % steps) + offset_for(b)) * n.scale;
    const int64_t base = r * d_model;
    for (int64_t i = 0; i < half; ++i) {
      // MLX computes angles in fp32 and casts cos/sin to x's dtype.
      const float theta = static_cast<float>(pos) * static_cast<float>(inv_freq[i]);
      const double c = std::cos(theta), s = std::sin(theta);
      const int64_t i1 = n.traditional ? base + 2 * i : base + i;
      const int64_t i2 = n.traditional ? base + 2 * i + 1 : base + i + half;
      const double x1 = at(x, i1), x2 = at(x, i2);
      store_double(x.dtype(), dst, i1, x1 * c - x2 * s);
      store_double(x.dtype(), dst, i2, x1 * s + x2 * c);
    }
  }
  ctx.set_tensor(n.out, std::move(out));
}

void sdpa(const ir::SdpaNode& n, ExecContext& ctx) {
  const Tensor& q = ctx.tensor(n.q);
  const Tensor& k = ctx.tensor(n.k);
  const Tensor& v = ctx.tensor(n.v);
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4) fail("Sdpa: q, k and v must be rank 4 [B, H, L, D]");
  const int64_t B = q.dim(0), Hq = q.dim(1), Lq = q.dim(2), D = q.dim(3);
  const int64_t Hkv = k.dim(1), Lk = k.dim(2), Dv = v.dim(3);
  if (k.dim(0) != B || v.dim(0) != B || k.dim(3) != D || v.dim(1) != Hkv || v.dim(2) != Lk || Hkv == 0 || Hq % Hkv != 0)
    fail("Sdpa: incompatible q/k/v shapes (GQA needs Hq divisible by Hkv)");
  const Tensor* mask = ctx.optional_tensor(n.mask);
  const Tensor mask_full = mask ? broadcast_to(*mask, {B, Hq, Lq, Lk}) : Tensor();
  Tensor out(q.dtype(), {B, Hq, Lq, Dv});
  uint8_t* dst = out.mutable_data();
  std::vector<double> scores(static_cast<size_t>(Lk)), probs(static_cast<size_t>(Lk));
  const double neg_inf = -std::numeric_limits<double>::infinity();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t hk = h / (Hq / Hkv);
      for (int64_t i = 0; i < Lq; ++i) {
        for (int64_t j = 0; j < Lk; ++j) {
          double s = 0;
          for (int64_t d = 0; d < D; ++d)
            s += at(q, ((b * Hq + h) * Lq + i) * D + d) * at(k, ((b * Hkv + hk) * Lk + j) * D + d);
          s *= n.scale;
          if (n.causal && j > i + Lk - Lq) s = neg_inf;
          if (mask) {
            const int64_t mi = ((b * Hq + h) * Lq + i) * Lk + j;
            if (mask_full.dtype() == DType::Bool) {
              if (at(mask_full, mi) == 0) s = neg_inf;
            } else {
              s += at(mask_full, mi);
            }
          }
          scores[j] = s;
        }
        softmax_row(scores, probs);
        for (int64_t d = 0; d < Dv; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < Lk; ++j) acc += probs[j] * at(v, ((b * Hkv + hk) * Lk + j) * Dv + d);
          store_double(q.dtype(), dst, ((b * Hq + h) * Lq + i) * Dv + d, acc);
        }
      }
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
}

}  // namespace wgml::backend::cpu
