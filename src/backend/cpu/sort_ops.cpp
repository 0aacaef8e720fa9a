// Nodes that work on whole rows along one axis: Sort, Argsort, Partition, ArgPartition, Cumsum,
// Median. Rows are sorted stably with NaN last, as MLX's CPU sort does; a full sort is one valid
// partition (MLX leaves the order within each side unspecified).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/strided.h"
#include "core/elements.h"
#include "core/layout.h"

namespace wgml::backend::cpu {
namespace {

using runtime::ExecContext;
using runtime::fail;

// x with `axis` moved last (and the permutation that moves it back).
struct AxisLast {
  Tensor moved;
  std::vector<int> back;
  int64_t len = 0, rows = 0;
};

AxisLast axis_last(const Tensor& x, int axis) {
  std::vector<int> perm;
  for (int d = 0; d < x.rank(); ++d)
    if (d != axis) perm.push_back(d);
  perm.push_back(axis);
  AxisLast a;
  a.back.resize(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) a.back[perm[i]] = static_cast<int>(i);
  a.moved = permute(x, perm);
  a.len = x.dim(axis);
  a.rows = a.len == 0 ? 0 : x.numel() / a.len;
  return a;
}

bool nan_last_less(double a, double b) {
  if (std::isnan(a)) return false;
  if (std::isnan(b)) return true;
  return a < b;
}

// Indices of one row in stable NaN-last order.
std::vector<int64_t> sorted_order(const Tensor& t, int64_t row, int64_t len) {
  std::vector<double> v(static_cast<size_t>(len));
  for (int64_t j = 0; j < len; ++j) v[j] = load_as_double(t.dtype(), t.data(), row * len + j);
  std::vector<int64_t> order(static_cast<size_t>(len));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return nan_last_less(v[a], v[b]); });
  return order;
}

// The rows along `axis`, each sorted: the values (indices = false) or the uint32 positions.
Tensor sort_along(const Tensor& x, int32_t axis_in, bool indices) {
  if (x.rank() == 0) fail("sort: expected a tensor of rank >= 1");
  const int axis = normalize_axis(axis_in, x.rank());
  AxisLast a = axis_last(x, axis);
  Tensor out(indices ? DType::UInt32 : x.dtype(), a.moved.shape());
  const size_t elem = dtype_size(x.dtype());
  uint8_t* dst = out.mutable_data();
  for (int64_t r = 0; r < a.rows; ++r) {
    const auto order = sorted_order(a.moved, r, a.len);
    for (int64_t j = 0; j < a.len; ++j) {
      if (indices)
        store_int64(DType::UInt32, dst, r * a.len + j, order[j]);
      else
        std::memcpy(dst + (r * a.len + j) * elem, a.moved.data() + (r * a.len + order[j]) * elem, elem);
    }
  }
  return permute(out, a.back);
}

void sort(const ir::SortNode& n, ExecContext& ctx) { ctx.set_tensor(n.out, sort_along(ctx.tensor(n.x), n.axis, false)); }
void argsort(const ir::ArgsortNode& n, ExecContext& ctx) { ctx.set_tensor(n.out, sort_along(ctx.tensor(n.x), n.axis, true)); }

void check_kth(int64_t kth, const Tensor& x, int32_t axis) {
  const int64_t len = x.rank() ? x.dim(normalize_axis(axis, x.rank())) : 0;
  if (kth < -len || kth >= len)
    fail("partition: kth " + std::to_string(kth) + " is out of range for an axis of size " + std::to_string(len));
}

void partition(const ir::PartitionNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  check_kth(ctx.resolve(n.kth), x, n.axis);
  ctx.set_tensor(n.out, sort_along(x, n.axis, false));
}

void arg_partition(const ir::ArgPartitionNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  check_kth(ctx.resolve(n.kth), x, n.axis);
  ctx.set_tensor(n.out, sort_along(x, n.axis, true));
}

// Running sums in the output dtype, one rounding per step as MLX accumulates; bool sums as int32.
void cumsum(const ir::CumsumNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  if (x.rank() == 0) fail("Cumsum: expected a tensor of rank >= 1");
  const int axis = normalize_axis(n.axis, x.rank());
  const DType t = x.dtype() == DType::Bool ? DType::Int32 : x.dtype();
  AxisLast a = axis_last(cast(x, t), axis);
  Tensor out(t, a.moved.shape());
  uint8_t* dst = out.mutable_data();
  const bool floating = is_floating(t);
  for (int64_t r = 0; r < a.rows; ++r) {
    Tensor acc(t, {});
    for (int64_t s = 0; s < a.len; ++s) {
      const int64_t j = n.reverse ? a.len - 1 - s : s;
      const int64_t src = r * a.len + j;
      if (!n.inclusive) std::memcpy(dst + src * dtype_size(t), acc.data(), dtype_size(t));
      if (floating)
        store_double(t, acc.mutable_data(), 0, load_as_double(t, acc.data(), 0) + load_as_double(t, a.moved.data(), src));
      else
        store_int64(t, acc.mutable_data(), 0, load_as_int64(t, acc.data(), 0) + load_as_int64(t, a.moved.data(), src));
      if (n.inclusive) std::memcpy(dst + src * dtype_size(t), acc.data(), dtype_size(t));
    }
  }
  ctx.set_tensor(n.out, permute(out, a.back));
}

// MLX's median: sort the flattened reduced axes, take the middle element (the mean of the two
// middle ones, added and halved in the result dtype, for even counts); any NaN gives NaN.
void median(const ir::MedianNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  std::vector<bool> reduced(static_cast<size_t>(x.rank()), n.axes.empty());
  for (int32_t a : n.axes) {
    const int d = normalize_axis(a, x.rank());
    if (reduced[d] && !n.axes.empty()) fail("Median: axis " + std::to_string(d) + " repeats");
    reduced[d] = true;
  }
  std::vector<int> perm;
  Shape kept, keep_dims;
  int64_t len = 1;
  for (int d = 0; d < x.rank(); ++d)
    if (!reduced[d]) perm.push_back(d), kept.push_back(x.dim(d));
  for (int d = 0; d < x.rank(); ++d) {
    keep_dims.push_back(reduced[d] ? 1 : x.dim(d));
    if (reduced[d]) perm.push_back(d), len *= x.dim(d);
  }
  if (len == 0) fail("Median: cannot take the median along an empty axis");
  const DType t = is_floating(x.dtype()) ? x.dtype() : DType::Float32;
  const Tensor moved = permute(x, perm);
  Tensor out(t, n.keepdims ? keep_dims : kept);
  uint8_t* dst = out.mutable_data();
  Tensor tmp(t, {2});
  uint8_t* pair = tmp.mutable_data();
  for (int64_t r = 0; r < out.numel(); ++r) {
    const auto order = sorted_order(moved, r, len);
    auto value = [&](int64_t k) { return load_as_double(x.dtype(), moved.data(), r * len + order[k]); };
    if (std::isnan(value(len - 1))) {
      store_double(t, dst, r, NAN);
      continue;
    }
    store_double(t, pair, 0, value(len / 2));
    if (len % 2 == 0) {
      store_double(t, pair, 1, value(len / 2 - 1));
      store_double(t, pair, 0, load_as_double(t, pair, 0) + load_as_double(t, pair, 1));
      store_double(t, pair, 0, load_as_double(t, pair, 0) * 0.5);
    }
    store_double(t, dst, r, load_as_double(t, pair, 0));
  }
  ctx.set_tensor(n.out, std::move(out));
}

}  // namespace

void register_sort_ops(runtime::KernelTable& t) {
  using namespace ir;
  t.add<SortNode, sort>();
  t.add<ArgsortNode, argsort>();
  t.add<PartitionNode, partition>();
  t.add<ArgPartitionNode, arg_partition>();
  t.add<CumsumNode, cumsum>();
  t.add<MedianNode, median>();
}

}  // namespace wgml::backend::cpu
