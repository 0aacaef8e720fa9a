// Quantized nodes in MLX's affine mode: w = scales * q + biases, with q unsigned and packed
// LSB-first into uint32 words along the reduction axis (values may straddle words).
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/strided.h"
#include "core/elements.h"

namespace wgml::backend::cpu {
namespace {

using runtime::ExecContext;
using runtime::fail;

void check_affine(const std::string& mode, int32_t bits, int32_t group_size) {
  if (mode != "affine")
    fail("quantization mode \"" + mode + "\" is not supported by the CPU backend yet (affine is)");
  if (bits < 1 || bits > 8) fail("bits must be in [1, 8], found " + std::to_string(bits));
  if (group_size <= 0) fail("group_size must be positive, found " + std::to_string(group_size));
}

uint32_t unpack(const uint32_t* row, int64_t index, int bits) {
  const int64_t bit = index * bits;
  const int64_t word = bit / 32, shift = bit % 32;
  uint64_t v = row[word] >> shift;
  if (shift + bits > 32) v |= uint64_t{row[word + 1]} << (32 - shift);
  return static_cast<uint32_t>(v & ((uint64_t{1} << bits) - 1));
}

// Dequantizes w [..., rows, packed] to [..., rows, packed*32/bits] in `out_type`.
Tensor dequantize_affine(const Tensor& w, const Tensor& scales, const Tensor* biases,
                         int bits, int group_size, DType out_type) {
  if (w.dtype() != DType::UInt32 || w.rank() < 1) fail("quantized weights must be uint32");
  const int64_t packed = w.dim(w.rank() - 1);
  const int64_t cols = packed * 32 / bits;
  if ((packed * 32) % bits != 0 || cols % group_size != 0)
    fail("packed width " + std::to_string(packed) + " does not hold whole groups of " +
         std::to_string(group_size) + " " + std::to_string(bits) + "-bit values");
  const int64_t rows = w.numel() / std::max<int64_t>(packed, 1);
  const int64_t groups = cols / group_size;
  if (scales.numel() != rows * groups || (biases && biases->numel() != rows * groups))
    fail("scales/biases must have " + std::to_string(rows * groups) + " elements");
  Shape shape = w.shape();
  shape.back() = cols;
  Tensor out(out_type, shape);
  uint8_t* dst = out.mutable_data();
  const auto* words = w.data_as<uint32_t>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t g = r * groups + c / group_size;
      const double s = load_as_double(scales.dtype(), scales.data(), g);
      const double b = biases ? load_as_double(biases->dtype(), biases->data(), g) : 0.0;
      store_double(out_type, dst, r * cols + c, s * unpack(words + r * packed, c, bits) + b);
    }
  return out;
}

void dequantize(const ir::DequantizeNode& n, ExecContext& ctx) {
  check_affine(n.mode, n.bits, n.group_size);
  const Tensor& scales = ctx.tensor(n.scales);
  DType out_type = scales.dtype();
  if (n.dtype) {
    const auto t = dtype_from_scalar_type(*n.dtype);
    if (!t) fail("Dequantize: unsupported dtype " + std::to_string(*n.dtype));
    out_type = *t;
  }
  ctx.set_tensor(n.out, dequantize_affine(ctx.tensor(n.w), scales, ctx.optional_tensor(n.biases),
                                          n.bits, n.group_size, out_type));
}

Tensor transpose_last2(const Tensor& w) {
  std::vector<int> perm(static_cast<size_t>(w.rank()));
  for (int d = 0; d < w.rank(); ++d) perm[d] = d;
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return permute(w, perm);
}

void quantized_matmul(const ir::QuantizedMatmulNode& n, ExecContext& ctx) {
  check_affine(n.mode, n.bits, n.group_size);
  const Tensor& x = ctx.tensor(n.x);
  const Tensor& scales = ctx.tensor(n.scales);
  Tensor w = dequantize_affine(ctx.tensor(n.w), scales, ctx.optional_tensor(n.biases), n.bits,
                               n.group_size, DType::Float64);
  if (w.rank() < 2) fail("QuantizedMatmul: weights must have rank >= 2");
  if (n.transpose) w = transpose_last2(w);
  ctx.set_tensor(n.out, matmul(x, w, x.dtype()));
}

}  // namespace

void register_quantized_ops(runtime::KernelTable& t) {
  t.add<ir::DequantizeNode, dequantize>();
  t.add<ir::QuantizedMatmulNode, quantized_matmul>();
}

}  // namespace wgml::backend::cpu
