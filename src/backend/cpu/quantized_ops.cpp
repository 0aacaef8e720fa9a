// Quantized nodes: Dequantize, QuantizedMatmul, GatherQmm, and the plain GatherMm.
//
// Modes (MLX's): `affine` w = scale * q + bias, q unsigned, packed LSB-first into uint32 words
// along K (3/5/6-bit values straddle words); `nvfp4` E2M1 values with E4M3 scales per 16 and an
// optional global scale; `mxfp4` E2M1 and `mxfp8` E4M3 values with E8M0 (power-of-two) scales per
// 32. The matmuls (QuantizedMatmul, GatherQmm) accumulate in double and round once, when the
// result is stored: MLX's GPU kernels accumulate f16/bf16 products in float (its CPU kernels round
// the running sum to the compute dtype after every element, an error that grows with K).
// Dequantize follows MLX's element arithmetic step by step: scale * q and + bias are each
// rounded to the compute dtype.
#include <cmath>
#include <vector>

#include "backend/cpu/broadcast.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/rounding.h"
#include "core/elements.h"
#include "core/layout.h"

namespace wgml::backend::cpu {
namespace {

using runtime::ExecContext;
using runtime::fail;

enum class Mode { Affine, Nvfp4, Mxfp4, Mxfp8 };

struct Format {
  Mode mode = Mode::Affine;
  int bits = 4;
  int group_size = 64;
};

Format parse_format(const std::string& mode, int32_t bits, int32_t group_size) {
  if (mode == "affine") {
    if (bits != 2 && bits != 3 && bits != 4 && bits != 5 && bits != 6 && bits != 8)
      fail("affine quantization: bits must be 2, 3, 4, 5, 6 or 8, found " + std::to_string(bits));
    if (group_size != 32 && group_size != 64 && group_size != 128)
      fail("affine quantization: group_size must be 32, 64 or 128, found " + std::to_string(group_size));
    return {Mode::Affine, bits, group_size};
  }
  const Format f = mode == "nvfp4"   ? Format{Mode::Nvfp4, 4, 16}
                   : mode == "mxfp4" ? Format{Mode::Mxfp4, 4, 32}
                   : mode == "mxfp8"
                       ? Format{Mode::Mxfp8, 8, 32}
                       : (fail("unknown quantization mode \"" + mode + "\" (expected affine, nvfp4, mxfp4 or mxfp8)"), Format{});
  if (bits != f.bits || group_size != f.group_size)
    fail(mode + " quantization requires bits " + std::to_string(f.bits) + " and group_size " + std::to_string(f.group_size) +
         ", found " + std::to_string(bits) + " and " + std::to_string(group_size));
  return f;
}

// The rounding of compute dtype t; float32 compute stays in double (the oracle's accumulation).
Rounder compute_rounder(DType t) { return Rounder{t == DType::Float32 ? DType::Float64 : t}; }

double e2m1(uint32_t code) {
  static constexpr double kLut[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};
  return kLut[code & 0xf];
}

double e4m3(uint32_t byte) {
  const int sign = (byte >> 7) & 1, exp = (byte >> 3) & 0xf, mant = byte & 7;
  if (exp == 0xf && mant == 7) return NAN;
  const double v = exp == 0 ? std::ldexp(mant / 8.0, -6) : std::ldexp(1.0 + mant / 8.0, exp - 7);
  return sign ? -v : v;
}

// A quantized matrix w [..., rows, packed] with scales (and biases) [..., rows, groups]: element
// values and per-group scales as MLX's kernels see them in compute dtype `t`.
struct QuantizedMatrix {
  const Tensor& w;
  const Tensor& scales;
  const Tensor* biases;
  Format f;
  int64_t rows = 0, cols = 0, groups = 0;

  QuantizedMatrix(const Tensor& w_, const Tensor& s_, const Tensor* b_, Format format)
      : w(w_), scales(s_), biases(b_), f(format) {
    if (w.dtype() != DType::UInt32 || w.rank() < 2) fail("quantized weights must be uint32 of rank >= 2");
    const int64_t packed = w.dim(w.rank() - 1);
    cols = packed * 32 / f.bits;
    rows = w.numel() / std::max<int64_t>(packed, 1);
    groups = cols / f.group_size;
    if (cols % f.group_size != 0 || scales.numel() != rows * groups)
      fail("scales must hold one entry per group of " + std::to_string(f.group_size) + " (" + std::to_string(rows * groups) +
           "), found " + std::to_string(scales.numel()));
    if (f.mode == Mode::Affine && (!biases || biases->numel() != rows * groups))
      fail("affine quantization needs biases shaped like the scales");
    if (f.mode != Mode::Affine && scales.dtype() != DType::UInt8) fail(std::string("fp quantization scales must be uint8"));
  }

  // The stored value of element (row, col): q for affine, the fp4/fp8 number otherwise.
  double raw(int64_t row, int64_t col) const {
    const auto* words = w.data_as<uint32_t>() + row * (cols * f.bits / 32);
    const int64_t bit = col * f.bits;
    uint64_t v = words[bit / 32] >> (bit % 32);
    if (bit % 32 + f.bits > 32) v |= uint64_t{words[bit / 32 + 1]} << (32 - bit % 32);
    const uint32_t code = static_cast<uint32_t>(v & ((uint64_t{1} << f.bits) - 1));
    if (f.mode == Mode::Affine) return code;
    return f.mode == Mode::Mxfp8 ? e4m3(code) : e2m1(code);
  }

  double scale(int64_t row, int64_t col, const Rounder& r) const {
    const int64_t g = row * groups + col / f.group_size;
    const double s = load_as_double(scales.dtype(), scales.data(), g);
    if (f.mode == Mode::Affine) return r(s);
    if (f.mode == Mode::Nvfp4) return r(e4m3(static_cast<uint32_t>(s)));
    return r(std::ldexp(1.0, static_cast<int>(s) - 127));  // E8M0 (0 is 2^-127)
  }

  double bias(int64_t row, int64_t col, const Rounder& r) const {
    return biases ? r(load_as_double(biases->dtype(), biases->data(), row * groups + col / f.group_size)) : 0;
  }

  // w = scale * q + bias, each step rounded in `r` (affine); fp values stay unscaled (the
  // kernels multiply by the scale separately).
  double affine_weight(int64_t row, int64_t col, const Rounder& r) const {
    return r(r(scale(row, col, r) * raw(row, col)) + bias(row, col, r));
  }
};

DType dequantize_dtype(const ir::DequantizeNode& n, const Tensor& scales, Mode mode) {
  if (n.dtype) {
    const auto t = dtype_from_scalar_type(*n.dtype);
    if (!t || !is_floating(*t)) fail("Dequantize: dtype must be a floating type");
    return *t;
  }
  return mode == Mode::Affine ? scales.dtype() : DType::BFloat16;
}

void dequantize(const ir::DequantizeNode& n, ExecContext& ctx) {
  const Format f = parse_format(n.mode, n.bits, n.group_size);
  const Tensor& scales = ctx.tensor(n.scales);
  const QuantizedMatrix q(ctx.tensor(n.w), scales, ctx.optional_tensor(n.biases), f);
  DType out_type = dequantize_dtype(n, scales, f.mode);
  const Tensor* global = ctx.optional_tensor(n.global_scale);
  if (global && f.mode != Mode::Nvfp4) fail("Dequantize: global_scale applies to nvfp4 only");
  // MLX's nvfp4 path divides the global scale by 448 * 6 and multiplies it in: with a float32
  // global scale the product (and the result) is float32.
  double global_factor = 1;
  DType scale_type = out_type;
  if (global) {
    scale_type = promote_types(out_type, global->dtype());
    const Rounder rg = compute_rounder(scale_type);
    global_factor = rg(load_as_double(global->dtype(), global->data(), 0) / rg(448.0 * 6.0));
  }
  const Rounder r = compute_rounder(f.mode == Mode::Affine ? scales.dtype() : out_type);
  const Rounder rs = compute_rounder(scale_type);
  Shape shape = q.w.shape();
  shape.back() = q.cols;
  const DType result_type = f.mode == Mode::Affine ? out_type : scale_type;
  Tensor out(result_type, shape);
  uint8_t* dst = out.mutable_data();
  for (int64_t row = 0; row < q.rows; ++row)
    for (int64_t col = 0; col < q.cols; ++col) {
      const double v = f.mode == Mode::Affine ? q.affine_weight(row, col, r)
                                              : rs(r(q.raw(row, col)) * rs(q.scale(row, col, r) * global_factor));
      store_double(result_type, dst, row * q.cols + col, v);
    }
  ctx.set_tensor(n.out, std::move(out));
}

// x_row [K] . (column n of the selected matrix) in double: each weight is scale * value (+ bias)
// of the stored numbers, exactly. transpose: the matrix is [N, K] (x @ w.T), else [K, N]; its
// first row is `row_base`.
double quantized_dot(const double* x, const QuantizedMatrix& q, int64_t row_base, int64_t n, int64_t k_size, bool transpose) {
  const Rounder exact{DType::Float64};
  double sum = 0;
  for (int64_t k = 0; k < k_size; ++k) {
    const int64_t row = transpose ? row_base + n : row_base + k, col = transpose ? k : n;
    const double w = q.f.mode == Mode::Affine ? q.affine_weight(row, col, exact) : q.scale(row, col, exact) * q.raw(row, col);
    sum += x[k] * w;
  }
  return sum;
}

std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = load_as_double(t.dtype(), t.data(), i);
  return v;
}

// Pairs (a batch index, b batch index) for gather_mm / gather_qmm: the index tensors (or, where
// absent, every batch of that operand in order) broadcast together give the output batch shape.
struct GatheredBatches {
  Shape shape;
  std::vector<int64_t> a, b;
};

GatheredBatches gathered_batches(const Shape& a_batch, const Shape& b_batch, const Tensor* lhs, const Tensor* rhs,
                                 const char* op) {
  auto indices = [&](const Tensor* idx, const Shape& batch) {
    if (idx) {
      if (!is_integral(idx->dtype())) fail(std::string(op) + ": indices must be integers");
      return cast(*idx, DType::Int64);
    }
    Tensor all(DType::Int64, batch);
    for (int64_t i = 0; i < all.numel(); ++i) store_int64(DType::Int64, all.mutable_data(), i, i);
    return all;
  };
  const Tensor li = indices(lhs, a_batch), ri = indices(rhs, b_batch);
  GatheredBatches g;
  g.shape = broadcast_shapes(li.shape(), ri.shape());
  const Tensor lb = broadcast_to(li, g.shape), rb = broadcast_to(ri, g.shape);
  const int64_t na = shape_numel(a_batch), nb = shape_numel(b_batch);
  for (int64_t i = 0; i < shape_numel(g.shape); ++i) {
    g.a.push_back(lb.data_as<int64_t>()[i]);
    g.b.push_back(rb.data_as<int64_t>()[i]);
    if (g.a.back() < 0 || g.a.back() >= na || g.b.back() < 0 || g.b.back() >= nb)
      fail(std::string(op) + ": index out of range of the operand's batch");
  }
  return g;
}

Shape leading(const Tensor& t, int keep) { return Shape(t.shape().begin(), t.shape().end() - keep); }

// out[batch..., M, N] from x [..., M, K] and a stack of quantized matrices [E..., rows, packed].
Tensor quantized_products(const Tensor& x, const QuantizedMatrix& q, bool transpose, const GatheredBatches& g) {
  if (!is_floating(x.dtype())) fail("quantized matmul: x must be a floating tensor");
  if (x.rank() < 2) fail("quantized matmul: x must have rank >= 2");
  const int64_t m_size = x.dim(x.rank() - 2), k_size = x.dim(x.rank() - 1);
  const int64_t rows_per = q.w.dim(q.w.rank() - 2);
  const int64_t n_size = transpose ? rows_per : q.cols;
  if ((transpose ? q.cols : rows_per) != k_size)
    fail("quantized matmul: x has K = " + std::to_string(k_size) +
         ", the weights K = " + std::to_string(transpose ? q.cols : rows_per));
  Shape shape = g.shape;
  shape.push_back(m_size);
  shape.push_back(n_size);
  Tensor out(x.dtype(), shape);
  const std::vector<double> xv = to_doubles(x);
  uint8_t* dst = out.mutable_data();
  for (size_t i = 0; i < g.a.size(); ++i)
    for (int64_t m = 0; m < m_size; ++m)
      for (int64_t n = 0; n < n_size; ++n) {
        const double* xr = xv.data() + (g.a[i] * m_size + m) * k_size;
        const double v = quantized_dot(xr, q, g.b[i] * rows_per, n, k_size, transpose);
        store_double(x.dtype(), dst, (static_cast<int64_t>(i) * m_size + m) * n_size + n, v);
      }
  return out;
}

void quantized_matmul(const ir::QuantizedMatmulNode& n, ExecContext& ctx) {
  const Format f = parse_format(n.mode, n.bits, n.group_size);
  const Tensor& x = ctx.tensor(n.x);
  const QuantizedMatrix q(ctx.tensor(n.w), ctx.tensor(n.scales), ctx.optional_tensor(n.biases), f);
  if (q.w.rank() != 2) fail("QuantizedMatmul: weights must be a matrix");
  const Shape batch = leading(x, 2);
  // Every batch of x against the one matrix, then back to x's batch shape.
  GatheredBatches g;
  g.shape = batch;
  for (int64_t i = 0; i < shape_numel(batch); ++i) g.a.push_back(i), g.b.push_back(0);
  ctx.set_tensor(n.out, quantized_products(x, q, n.transpose, g));
}

void gather_qmm(const ir::GatherQmmNode& n, ExecContext& ctx) {
  const Format f = parse_format(n.mode, n.bits, n.group_size);
  const Tensor& x = ctx.tensor(n.x);
  const Tensor& w = ctx.tensor(n.w);
  const QuantizedMatrix q(w, ctx.tensor(n.scales), ctx.optional_tensor(n.biases), f);
  // sorted_indices(_flag) is a layout promise for MLX's kernels; the numbers do not depend on it.
  if (x.rank() < 2) fail("GatherQmm: x must have rank >= 2");
  const GatheredBatches g = gathered_batches(leading(x, 2), leading(w, 2), ctx.optional_tensor(n.lhs_indices),
                                             ctx.optional_tensor(n.rhs_indices), "GatherQmm");
  ctx.set_tensor(n.out, quantized_products(x, q, n.transpose, g));
}

void gather_mm(const ir::GatherMmNode& n, ExecContext& ctx) {
  const Tensor& a = ctx.tensor(n.a);
  const Tensor& b = ctx.tensor(n.b);
  if (a.rank() < 2 || b.rank() < 2) fail("GatherMm: operands must have rank >= 2");
  const GatheredBatches g = gathered_batches(leading(a, 2), leading(b, 2), ctx.optional_tensor(n.lhs_indices),
                                             ctx.optional_tensor(n.rhs_indices), "GatherMm");
  const int64_t m = a.dim(a.rank() - 2), k = a.dim(a.rank() - 1), nn = b.dim(b.rank() - 1);
  if (b.dim(b.rank() - 2) != k) fail("GatherMm: inner dimensions differ");
  const Tensor a3 = a.reshaped({shape_numel(leading(a, 2)), m, k});
  const Tensor b3 = b.reshaped({shape_numel(leading(b, 2)), k, nn});
  std::vector<Tensor> parts;
  for (size_t i = 0; i < g.a.size(); ++i)
    parts.push_back(matmul(take_index(a3, 0, g.a[i]).reshaped({m, k}), take_index(b3, 0, g.b[i]).reshaped({k, nn}),
                           promote_types(a.dtype(), b.dtype())));
  Shape shape = g.shape;
  shape.push_back(m);
  shape.push_back(nn);
  ctx.set_tensor(n.out, parts.empty() ? Tensor(promote_types(a.dtype(), b.dtype()), shape) : stack(parts, 0).reshaped(shape));
}

}  // namespace

void register_quantized_ops(runtime::KernelTable& t) {
  t.add<ir::DequantizeNode, dequantize>();
  t.add<ir::QuantizedMatmulNode, quantized_matmul>();
  t.add<ir::GatherQmmNode, gather_qmm>();
  t.add<ir::GatherMmNode, gather_mm>();
}

}  // namespace wgml::backend::cpu
