// Indexing and rearranging nodes: Gather, TakeAlongAxis, ScatterAdd, Tile, Pad, Repeat, Roll,
// Flip, Tri, Tril, Triu. Each output element is read from one input element (or is a fill value),
// found by mapping its multi-index back to the input.
#include <cstring>
#include <vector>

#include "backend/cpu/broadcast.h"
#include "backend/cpu/cpu_backend.h"
#include "core/elements.h"
#include "core/layout.h"

namespace wgml::backend::cpu {
namespace {

using runtime::ExecContext;
using runtime::fail;
using Index = std::vector<int64_t>;

// Output dims from run-time ints (64-bit in ONNX programs): an overflow fails, never wraps.
int64_t dim_sum(int64_t a, int64_t b, const char* op) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    fail(std::string(op) + ": output dimension " + std::to_string(a) + " + " + std::to_string(b) + " overflows int64");
  return r;
}

int64_t dim_product(int64_t a, int64_t b, const char* op) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    fail(std::string(op) + ": output dimension " + std::to_string(a) + " * " + std::to_string(b) + " overflows int64");
  return r;
}

int64_t flat_index(const Index& idx, const Shape& shape) {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + idx[d];
  return f;
}

// out[i] = flat(x)[source(i)] where source returns >= 0, else the element `fill` (x's dtype).
template <class F>
Tensor remap(const Tensor& x, const Shape& shape, F source, const Tensor* fill = nullptr) {
  Tensor out(x.dtype(), shape);
  const size_t elem = dtype_size(x.dtype());
  uint8_t* dst = out.mutable_data();
  Index idx(shape.size(), 0);
  for (int64_t i = 0; i < out.numel(); ++i) {
    const int64_t src = source(idx);
    if (src >= 0)
      std::memcpy(dst + i * elem, x.data() + src * elem, elem);
    else if (fill)
      std::memcpy(dst + i * elem, fill->data(), elem);
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0 && ++idx[d] == shape[d]; --d) idx[d] = 0;
  }
  return out;
}

int64_t index_at(const Tensor& t, int64_t i) { return load_as_int64(t.dtype(), t.data(), i); }

// A possibly negative index into an axis of `size`, wrapped and bounds-checked.
int64_t wrap_index(int64_t i, int64_t size, const char* op) {
  const int64_t w = i < 0 ? i + size : i;
  if (w < 0 || w >= size)
    fail(std::string(op) + ": index " + std::to_string(i) + " is out of range for an axis of size " + std::to_string(size));
  return w;
}

void check_integer_indices(const Tensor& t, const char* op) {
  if (!is_integral(t.dtype())) fail(std::string(op) + ": indices must be integers");
}

void gather(const ir::GatherNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  if (n.indices.size() != n.axes.size()) fail("Gather: expected one index tensor per axis");
  if (static_cast<int>(n.slice_sizes.size()) != x.rank()) fail("Gather: slice_sizes must have one entry per input dimension");
  std::vector<Tensor> indices;
  Shape batch;
  for (ir::Tid t : n.indices) {
    check_integer_indices(ctx.tensor(t), "Gather");
    batch = broadcast_shapes(batch, ctx.tensor(t).shape());
  }
  for (ir::Tid t : n.indices) indices.push_back(broadcast_to(ctx.tensor(t), batch));
  for (size_t k = 0; k < n.axes.size(); ++k)
    if (n.axes[k] < 0 || n.axes[k] >= x.rank()) fail("Gather: axis out of range");
  Shape shape = batch;
  for (int d = 0; d < x.rank(); ++d) {
    if (n.slice_sizes[d] < 0 || n.slice_sizes[d] > x.dim(d)) fail("Gather: slice size exceeds the input");
    shape.push_back(n.slice_sizes[d]);
  }
  const size_t nb = batch.size();
  ctx.set_tensor(n.out, remap(x, shape, [&](const Index& idx) {
                   const int64_t b = flat_index(Index(idx.begin(), idx.begin() + nb), batch);
                   Index src(idx.begin() + nb, idx.end());
                   for (size_t k = 0; k < n.axes.size(); ++k) {
                     const int a = n.axes[k];
                     const int64_t start = wrap_index(index_at(indices[k], b), x.dim(a), "Gather");
                     if (start + n.slice_sizes[a] > x.dim(a)) fail("Gather: slice runs past the end of the axis");
                     src[a] += start;
                   }
                   return flat_index(src, x.shape());
                 }));
}

void take_along_axis(const ir::TakeAlongAxisNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  const Tensor& ind = ctx.tensor(n.indices);
  check_integer_indices(ind, "TakeAlongAxis");
  if (ind.rank() != x.rank()) fail("TakeAlongAxis: indices must have the input's rank");
  const int axis = normalize_axis(n.axis, x.rank());
  Shape x_shape = x.shape(), i_shape = ind.shape();
  x_shape[axis] = ind.dim(axis);
  const Shape shape = broadcast_shapes(x_shape, i_shape);
  i_shape = shape;
  const Tensor idx = broadcast_to(ind, i_shape);
  ctx.set_tensor(n.out, remap(x, shape, [&](const Index& i) {
                   Index src = i;
                   for (int d = 0; d < x.rank(); ++d)
                     if (x.dim(d) == 1) src[d] = 0;
                   src[axis] = wrap_index(index_at(idx, flat_index(i, shape)), x.dim(axis), "TakeAlongAxis");
                   return flat_index(src, x.shape());
                 }));
}

void scatter_add(const ir::ScatterAddNode& n, ExecContext& ctx) {
  Tensor out = ctx.tensor(n.x);
  const Tensor& ind = ctx.tensor(n.indices);
  check_integer_indices(ind, "ScatterAdd");
  const int axis = normalize_axis(n.axis, out.rank());
  if (ind.rank() != out.rank()) fail("ScatterAdd: indices must have the input's rank");
  const Tensor upd = broadcast_to(cast(ctx.tensor(n.updates), out.dtype()), ind.shape());
  const DType t = out.dtype();
  uint8_t* dst = out.mutable_data();
  // One update at a time in the output dtype, in row-major order, as MLX accumulates.
  Index idx(static_cast<size_t>(ind.rank()), 0);
  for (int64_t i = 0; i < ind.numel(); ++i) {
    Index target = idx;
    target[axis] = wrap_index(index_at(ind, i), out.dim(axis), "ScatterAdd");
    for (int d = 0; d < out.rank(); ++d)
      if (target[d] >= out.dim(d)) fail("ScatterAdd: indices extend past the input");
    const int64_t o = flat_index(target, out.shape());
    if (is_floating(t))
      store_double(t, dst, o, load_as_double(t, dst, o) + load_as_double(t, upd.data(), i));
    else
      store_int64(t, dst, o, load_as_int64(t, dst, o) + load_as_int64(t, upd.data(), i));
    for (int d = ind.rank() - 1; d >= 0 && ++idx[d] == ind.dim(d); --d) idx[d] = 0;
  }
  ctx.set_tensor(n.out, std::move(out));
}

void tile(const ir::TileNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  std::vector<int64_t> reps = ctx.resolve(n.reps);
  for (int64_t r : reps)
    if (r < 0) fail("Tile: repetitions must be >= 0");
  Shape in = x.shape();
  while (static_cast<int>(reps.size()) < x.rank()) reps.insert(reps.begin(), 1);
  while (in.size() < reps.size()) in.insert(in.begin(), 1);
  Shape shape;
  for (size_t d = 0; d < in.size(); ++d) shape.push_back(dim_product(in[d], reps[d], "Tile"));
  ctx.set_tensor(n.out, remap(x, shape, [&](const Index& i) {
                   Index src = i;
                   for (size_t d = 0; d < in.size(); ++d) src[d] %= in[d];
                   return flat_index(src, in);
                 }));
}

void pad(const ir::PadNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  const std::vector<int64_t> widths = ctx.resolve(n.pad_width);
  if (widths.size() % 2 != 0) fail("Pad: pad_width must hold (low, high) pairs");
  const size_t pairs = widths.size() / 2;
  if (pairs != static_cast<size_t>(x.rank()) && pairs != 1)
    fail("Pad: expected " + std::to_string(x.rank()) + " (low, high) pairs, found " + std::to_string(pairs));
  if (n.mode != "constant" && n.mode != "edge") fail("Pad: unsupported mode \"" + n.mode + "\"");
  std::vector<int64_t> low, high;
  for (int d = 0; d < x.rank(); ++d) {
    const size_t p = pairs == 1 ? 0 : static_cast<size_t>(d);
    low.push_back(widths[2 * p]);
    high.push_back(widths[2 * p + 1]);
    if (low.back() < 0 || high.back() < 0) fail("Pad: pad widths must be >= 0");
  }
  Shape shape;
  for (int d = 0; d < x.rank(); ++d) shape.push_back(dim_sum(dim_sum(x.dim(d), low[d], "Pad"), high[d], "Pad"));
  const bool edge = n.mode == "edge";
  if (edge && x.numel() == 0 && shape_numel(shape) > 0) fail("Pad: edge mode needs a non-empty input");
  // The constant goes through float32, then the input's dtype (MLX's array(value).astype).
  Tensor fill(x.dtype(), {});
  store_double(x.dtype(), fill.mutable_data(), 0, static_cast<float>(n.constant_value));
  ctx.set_tensor(n.out, remap(
                            x, shape,
                            [&](const Index& i) -> int64_t {
                              Index src = i;
                              for (int d = 0; d < x.rank(); ++d) {
                                src[d] -= low[d];
                                if (src[d] < 0 || src[d] >= x.dim(d)) {
                                  if (!edge) return -1;
                                  src[d] = src[d] < 0 ? 0 : x.dim(d) - 1;
                                }
                              }
                              return flat_index(src, x.shape());
                            },
                            &fill));
}

void repeat(const ir::RepeatNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  const int64_t reps = ctx.resolve(n.repeats);
  if (reps < 0) fail("Repeat: repeats must be >= 0, found " + std::to_string(reps));
  const int axis = normalize_axis(n.axis, x.rank());
  Shape shape = x.shape();
  shape[axis] = dim_product(shape[axis], reps, "Repeat");
  ctx.set_tensor(n.out, remap(x, shape, [&](const Index& i) {
                   Index src = i;
                   src[axis] /= reps;
                   return flat_index(src, x.shape());
                 }));
}

void roll(const ir::RollNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  const std::vector<int64_t> shifts = ctx.resolve(n.shift);
  if (shifts.size() != n.axes.size()) fail("Roll: expected one shift per axis");
  std::vector<int64_t> shift_of(static_cast<size_t>(x.rank()), 0);
  // Shifts are reduced modulo the axis size first, so any int64 shift adds up without overflow.
  for (size_t k = 0; k < n.axes.size(); ++k) {
    const int axis = normalize_axis(n.axes[k], x.rank());
    if (x.dim(axis) > 0) shift_of[axis] = (shift_of[axis] + shifts[k] % x.dim(axis)) % x.dim(axis);
  }
  ctx.set_tensor(n.out, remap(x, x.shape(), [&](const Index& i) {
                   Index src = i;
                   for (int d = 0; d < x.rank(); ++d) {
                     const int64_t size = x.dim(d);
                     src[d] = ((i[d] - shift_of[d]) % size + size) % size;
                   }
                   return flat_index(src, x.shape());
                 }));
}

void flip(const ir::FlipNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  std::vector<bool> flipped(static_cast<size_t>(x.rank()), false);
  for (int32_t a : n.axes) flipped[normalize_axis(a, x.rank())] = true;
  ctx.set_tensor(n.out, remap(x, x.shape(), [&](const Index& i) {
                   Index src = i;
                   for (int d = 0; d < x.rank(); ++d)
                     if (flipped[d]) src[d] = x.dim(d) - 1 - i[d];
                   return flat_index(src, x.shape());
                 }));
}

void tri(const ir::TriNode& n, ExecContext& ctx) {
  const int64_t rows = ctx.resolve(n.n), cols = ctx.resolve(n.m);
  if (rows < 0 || cols < 0) fail("Tri: sizes must be >= 0");
  const auto t = dtype_from_scalar_type(n.scalar_type);
  if (!t) fail("Tri: unsupported scalar_type " + std::to_string(n.scalar_type));
  Tensor out(*t, {rows, cols});
  uint8_t* dst = out.mutable_data();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) store_double(*t, dst, i * cols + j, j <= i + n.k ? 1.0 : 0.0);
  ctx.set_tensor(n.out, std::move(out));
}

// Keeps the elements of the last two dims where keep(row, col) holds, zeroes the rest.
template <class Keep>
Tensor triangle(const Tensor& x, Keep keep) {
  if (x.rank() < 2) fail("Tril/Triu: expected a tensor of rank >= 2");
  const Tensor zero(x.dtype(), {});
  const int r = x.rank();
  return remap(
      x, x.shape(), [&](const Index& i) { return keep(i[r - 2], i[r - 1]) ? flat_index(i, x.shape()) : -1; }, &zero);
}

void tril(const ir::TrilNode& n, ExecContext& ctx) {
  ctx.set_tensor(n.out, triangle(ctx.tensor(n.x), [&](int64_t i, int64_t j) { return j <= i + n.k; }));
}

void triu(const ir::TriuNode& n, ExecContext& ctx) {
  ctx.set_tensor(n.out, triangle(ctx.tensor(n.x), [&](int64_t i, int64_t j) { return j >= i + n.k; }));
}

}  // namespace

void register_index_ops(runtime::KernelTable& t) {
  using namespace ir;
  t.add<GatherNode, gather>();
  t.add<TakeAlongAxisNode, take_along_axis>();
  t.add<ScatterAddNode, scatter_add>();
  t.add<TileNode, tile>();
  t.add<PadNode, pad>();
  t.add<RepeatNode, repeat>();
  t.add<RollNode, roll>();
  t.add<FlipNode, flip>();
  t.add<TriNode, tri>();
  t.add<TrilNode, tril>();
  t.add<TriuNode, triu>();
}

}  // namespace wgml::backend::cpu
