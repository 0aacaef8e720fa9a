#include "backend/cpu/matmul.h"

#include <vector>

#include "backend/cpu/broadcast.h"
#include "core/elements.h"
#include "runtime/exec_context.h"

namespace wgml::backend::cpu {
namespace {

// The values as float64, in a tensor (counted against the memory budget; a small one recycled).
Tensor to_doubles(const Tensor& t) {
  Tensor out(DType::Float64, t.shape());
  auto* values = out.mutable_data_as<double>();
  for (int64_t i = 0; i < t.numel(); ++i) values[i] = load_as_double(t.dtype(), t.data(), i);
  return out;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, DType out_type) {
  if (a.rank() < 2 || b.rank() < 2) runtime::fail("matmul: operands must have rank >= 2");
  const int64_t m = a.dim(a.rank() - 2), k = a.dim(a.rank() - 1);
  const int64_t kb = b.dim(b.rank() - 2), n = b.dim(b.rank() - 1);
  if (k != kb) runtime::fail("matmul: inner dimensions differ (" + std::to_string(k) + " vs " + std::to_string(kb) + ")");
  const Shape a_batch(a.shape().begin(), a.shape().end() - 2);
  const Shape b_batch(b.shape().begin(), b.shape().end() - 2);
  Shape shape = broadcast_shapes(a_batch, b_batch);
  const Shape batch = shape;
  shape.push_back(m);
  shape.push_back(n);
  Tensor out(out_type, shape);
  const Tensor a_doubles = to_doubles(a), b_doubles = to_doubles(b);
  const double* av = a_doubles.data_as<double>();
  const double* bv = b_doubles.data_as<double>();
  BroadcastIndex ia(a_batch, batch), ib(b_batch, batch);
  uint8_t* dst = out.mutable_data();
  const int64_t batches = shape_numel(batch);
  for (int64_t bi = 0; bi < batches; ++bi, ia.next(), ib.next()) {
    const double* pa = av + ia.offset() * m * k;
    const double* pb = bv + ib.offset() * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) acc += pa[i * k + p] * pb[p * n + j];
        store_double(out_type, dst, (bi * m + i) * n + j, acc);
      }
  }
  return out;
}

}  // namespace wgml::backend::cpu
