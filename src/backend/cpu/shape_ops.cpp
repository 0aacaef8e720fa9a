// Layout and indexing nodes: reshape, transpose, slicing and slice updates, concatenation,
// splitting, fills, ranges and takes.
#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

#include "backend/cpu/broadcast.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/strided.h"
#include "core/elements.h"
#include "core/layout.h"

namespace wgml::backend::cpu {
namespace {

using runtime::ExecContext;
using runtime::fail;

std::string shape_string(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

DType dtype_or(std::optional<int8_t> scalar_type, DType fallback) {
  if (!scalar_type) return fallback;
  const auto t = dtype_from_scalar_type(*scalar_type);
  if (!t) fail("unsupported scalar_type " + std::to_string(*scalar_type));
  return *t;
}

void reshape(const ir::ReshapeNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  Shape shape = ctx.resolve(n.shape);
  int infer = -1;
  int64_t known = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1) {
      if (infer >= 0) fail("Reshape: more than one -1 in " + shape_string(shape));
      infer = static_cast<int>(d);
    } else if (shape[d] < 0) {
      fail("Reshape: negative dimension in " + shape_string(shape));
    } else if (__builtin_mul_overflow(known, shape[d], &known)) {
      fail("Reshape: " + shape_string(shape) + " has more elements than int64 holds");
    }
  }
  if (infer >= 0) shape[infer] = known == 0 ? 0 : x.numel() / known;
  if (shape_numel(shape) != x.numel()) fail("Reshape: cannot reshape " + shape_string(x.shape()) + " to " + shape_string(shape));
  ctx.set_tensor(n.out, x.reshaped(shape));
}

void transpose(const ir::TransposeNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  ctx.set_tensor(n.out, permute(x, checked_permutation(n.perm, x.rank())));
}

void expand_dims(const ir::ExpandDimsNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  Shape shape = x.shape();
  shape.insert(shape.begin() + normalize_axis(n.axis, x.rank() + 1), 1);
  ctx.set_tensor(n.out, x.reshaped(shape));
}

void squeeze(const ir::SqueezeNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  std::vector<bool> drop(x.rank(), false);
  if (n.dims.empty()) {
    for (int d = 0; d < x.rank(); ++d) drop[d] = x.dim(d) == 1;
  }
  // As ExecuTorch's runtime (PyTorch semantics): listed axes whose size is not 1 are kept.
  for (int32_t d : n.dims) {
    const int a = normalize_axis(d, x.rank());
    if (x.dim(a) == 1) drop[a] = true;
  }
  Shape shape;
  for (int d = 0; d < x.rank(); ++d)
    if (!drop[d]) shape.push_back(x.dim(d));
  ctx.set_tensor(n.out, x.reshaped(shape));
}

void broadcast_node(const ir::BroadcastToNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  Shape shape = ctx.resolve(n.shape);
  // -1 keeps the input's size for that (right-aligned) dimension.
  for (size_t d = 0; d < shape.size(); ++d) {
    const int64_t from_end = static_cast<int64_t>(shape.size() - d);
    if (shape[d] == -1 && from_end <= x.rank()) shape[d] = x.dim(x.rank() - static_cast<int>(from_end));
  }
  ctx.set_tensor(n.out, broadcast_to(x, shape));
}

void contiguous(const ir::ContiguousNode& n, ExecContext& ctx) { ctx.set_tensor(n.out, ctx.tensor(n.x)); }

void as_strided(const ir::AsStridedNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  const Shape shape = ctx.resolve(n.shape);
  const auto s = ctx.resolve(n.strides);
  if (s.size() != shape.size()) fail("AsStrided: shape and strides differ in length");
  ctx.set_tensor(n.out, gather_strided(x, shape, std::vector<int64_t>(s.begin(), s.end()), static_cast<int64_t>(n.offset)));
}

void slice(const ir::SliceNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  const int axis = normalize_axis(ctx.resolve_int32(n.axis, "Slice: axis"), x.rank());
  const SliceRange r = normalize_slice(ctx.resolve(n.start), ctx.resolve(n.stop), n.step, x.dim(axis));
  auto strides = contiguous_strides(x.shape());
  Shape shape = x.shape();
  shape[axis] = r.count;
  const int64_t offset = r.count > 0 ? r.start * strides[axis] : 0;
  strides[axis] *= r.step;
  ctx.set_tensor(n.out, gather_strided(x, shape, strides, offset));
}

// Writes `update` (broadcast to the region) into positions start, start+step, ... of `axis`.
Tensor write_along_axis(Tensor dst, const Tensor& update, int axis, const std::vector<int64_t>& positions) {
  Shape region = dst.shape();
  region[axis] = static_cast<int64_t>(positions.size());
  const Tensor src = broadcast_to(cast(update, dst.dtype()), region);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= dst.dim(d);
  for (int d = axis + 1; d < dst.rank(); ++d) inner *= dst.dim(d);
  const size_t row = static_cast<size_t>(inner) * dtype_size(dst.dtype());
  uint8_t* out = dst.mutable_data();
  const int64_t n = static_cast<int64_t>(positions.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j)
      std::memcpy(out + (o * dst.dim(axis) + positions[j]) * row, src.data() + (o * n + j) * row, row);
  return dst;
}

void slice_update(const ir::SliceUpdateNode& n, ExecContext& ctx) {
  const Tensor& dst = ctx.tensor(n.dst);
  const int axis = normalize_axis(ctx.resolve_int32(n.axis, "SliceUpdate: axis"), dst.rank());
  const int64_t dim = dst.dim(axis);
  if (n.step < 1) fail("SliceUpdate: step must be >= 1, found " + std::to_string(n.step));
  auto bound = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + dim : v, 0, dim); };
  const int64_t start = bound(ctx.resolve(n.start)), stop = bound(ctx.resolve(n.stop));
  if (start >= stop) return ctx.set_tensor(n.out, dst);  // the ring KV cache relies on this no-op
  std::vector<int64_t> positions;
  for (int64_t p = start; p < stop; p += n.step) positions.push_back(p);
  ctx.set_tensor(n.out, write_along_axis(dst, ctx.tensor(n.update), axis, positions));
}

void index_copy(const ir::IndexCopyNode& n, ExecContext& ctx) {
  const Tensor& dst = ctx.tensor(n.dst);
  const Tensor& indices = ctx.tensor(n.indices);
  const int axis = normalize_axis(n.axis, dst.rank());
  if (indices.rank() != 1 || !is_integral(indices.dtype())) fail("IndexCopy: indices must be a 1-D integer tensor");
  std::vector<int64_t> positions;
  for (int64_t j = 0; j < indices.numel(); ++j) {
    int64_t p = load_as_int64(indices.dtype(), indices.data(), j);
    if (p < 0) p += dst.dim(axis);
    if (p < 0 || p >= dst.dim(axis))
      fail("IndexCopy: index " + std::to_string(load_as_int64(indices.dtype(), indices.data(), j)) +
           " out of range for axis size " + std::to_string(dst.dim(axis)));
    positions.push_back(p);
  }
  ctx.set_tensor(n.out, write_along_axis(dst, ctx.tensor(n.update), axis, positions));
}

// The list Concatenate and Stack join, kept per program: a step that repeats makes no new one.
struct JoinedTensors {
  std::vector<Tensor> parts;
};

// `join` of the tensors of `tids` in their promoted dtype.
template <class Join>
Tensor join_list(const std::vector<ir::Tid>& tids, ExecContext& ctx, const Join& join) {
  std::vector<Tensor>& parts = ctx.persistent_state<JoinedTensors>().parts;
  parts.clear();
  DType t = ctx.tensor(tids.at(0)).dtype();
  for (ir::Tid id : tids) t = promote_types(t, ctx.tensor(id).dtype());
  for (ir::Tid id : tids) parts.push_back(ctx.tensor(id).dtype() == t ? ctx.tensor(id) : cast(ctx.tensor(id), t));
  Tensor joined;
  try {
    joined = join(parts);
  } catch (...) {
    parts.clear();
    throw;
  }
  parts.clear();  // the parts' tensors are not kept alive by the list
  return joined;
}

void concatenate_node(const ir::ConcatenateNode& n, ExecContext& ctx) {
  if (n.tensors.empty()) fail("Concatenate: no tensors");
  ctx.set_tensor(n.out, join_list(n.tensors, ctx, [&](const std::vector<Tensor>& parts) { return concatenate(parts, n.axis); }));
}

void stack_node(const ir::StackNode& n, ExecContext& ctx) {
  if (n.tensors.empty()) fail("Stack: no tensors");
  ctx.set_tensor(n.out, join_list(n.tensors, ctx, [&](const std::vector<Tensor>& parts) { return stack(parts, n.axis); }));
}

void split(const ir::SplitNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  const int axis = normalize_axis(n.axis, x.rank());
  const auto sizes = ctx.resolve(n.sizes);
  std::vector<int64_t> sections;
  if (sizes.size() == 1) {
    if (sizes[0] <= 0) fail("Split: chunk size must be positive");
    for (int64_t left = x.dim(axis); left > 0; left -= sizes[0]) sections.push_back(std::min<int64_t>(left, sizes[0]));
  } else {
    sections.assign(sizes.begin(), sizes.end());
  }
  if (sections.size() != n.outs.size())
    fail("Split: " + std::to_string(sections.size()) + " sections for " + std::to_string(n.outs.size()) + " outputs");
  auto strides = contiguous_strides(x.shape());
  int64_t begin = 0;
  for (size_t i = 0; i < sections.size(); ++i) {
    Shape shape = x.shape();
    shape[axis] = sections[i];
    if (sections[i] < 0 || sections[i] > x.dim(axis) - begin) fail("Split: sections exceed the axis");
    ctx.set_tensor(n.outs[i], gather_strided(x, shape, strides, begin * strides[axis]));
    begin += sections[i];
  }
}

Tensor filled(DType t, const Shape& shape, float v) {
  Tensor out(t, shape);
  uint8_t* dst = out.mutable_data();
  for (int64_t i = 0; i < out.numel(); ++i) store_double(t, dst, i, v);
  return out;
}

void full(const ir::FullNode& n, ExecContext& ctx) {
  ctx.set_tensor(n.out, filled(dtype_or(n.scalar_type, DType::Float32), ctx.resolve(n.shape), ctx.resolve(n.v)));
}

void full_like(const ir::FullLikeNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  ctx.set_tensor(n.out, filled(dtype_or(n.scalar_type, x.dtype()), x.shape(), ctx.resolve(n.v)));
}

// ceil((stop - start) / step) elements, at least 0, computed without overflow for any int64s.
int64_t arange_count(int64_t start, int64_t stop, int64_t step) {
  if (step > 0 ? stop <= start : stop >= start) return 0;
  using Wide = __int128;
  const Wide span = step > 0 ? Wide{stop} - start : Wide{start} - stop;
  const Wide stride = step > 0 ? Wide{step} : -Wide{step};
  const Wide count = (span + stride - 1) / stride;
  if (count > std::numeric_limits<int64_t>::max())
    fail("ARange: " + std::to_string(static_cast<uint64_t>(count)) + " elements, more than a tensor can hold");
  return static_cast<int64_t>(count);
}

void arange(const ir::ARangeNode& n, ExecContext& ctx) {
  const int64_t start = ctx.resolve(n.start), stop = ctx.resolve(n.stop), step = ctx.resolve(n.step);
  if (step == 0) fail("ARange: step must not be zero");
  const int64_t count = arange_count(start, stop, step);
  const DType t = dtype_or(n.scalar_type, DType::Int32);
  Tensor out(t, {count});
  uint8_t* dst = out.mutable_data();
  // Every element lies between start and stop, so the wrapping unsigned sum is exact.
  for (int64_t i = 0; i < count; ++i)
    store_int64(t, dst, i,
                static_cast<int64_t>(static_cast<uint64_t>(start) + static_cast<uint64_t>(i) * static_cast<uint64_t>(step)));
  ctx.set_tensor(n.out, std::move(out));
}

void take(const ir::TakeNode& n, ExecContext& ctx) {
  const Tensor& x = ctx.tensor(n.x);
  const int axis = normalize_axis(n.axis, x.rank());
  const int64_t dim = x.dim(axis);
  auto wrap = [&](int64_t i) {
    const int64_t w = i < 0 ? i + dim : i;
    if (w < 0 || w >= dim) fail("Take: index " + std::to_string(i) + " out of range for axis size " + std::to_string(dim));
    return w;
  };
  if (n.index.kind != ir::IntOrVidOrTid::Tensor) {
    const int64_t i = ctx.resolve_int(n.index);
    return ctx.set_tensor(n.out, take_index(x, axis, wrap(i)));
  }
  const Tensor& idx = ctx.tensor(n.index.tid);
  std::vector<Tensor> rows;
  for (int64_t j = 0; j < idx.numel(); ++j) rows.push_back(take_index(x, axis, wrap(load_as_int64(idx.dtype(), idx.data(), j))));
  Shape shape(x.shape().begin(), x.shape().begin() + axis);
  shape.insert(shape.end(), idx.shape().begin(), idx.shape().end());
  shape.insert(shape.end(), x.shape().begin() + axis + 1, x.shape().end());
  if (rows.empty()) return ctx.set_tensor(n.out, Tensor(x.dtype(), shape));
  ctx.set_tensor(n.out, stack(rows, axis).reshaped(shape));
}

}  // namespace

void register_shape_ops(runtime::KernelTable& t) {
  using namespace ir;
  t.add<ReshapeNode, reshape>();
  t.add<TransposeNode, transpose>();
  t.add<ExpandDimsNode, expand_dims>();
  t.add<SqueezeNode, squeeze>();
  t.add<BroadcastToNode, broadcast_node>();
  t.add<ContiguousNode, contiguous>();
  t.add<AsStridedNode, as_strided>();
  t.add<SliceNode, slice>();
  t.add<SliceUpdateNode, slice_update>();
  t.add<IndexCopyNode, index_copy>();
  t.add<ConcatenateNode, concatenate_node>();
  t.add<StackNode, stack_node>();
  t.add<SplitNode, split>();
  t.add<FullNode, full>();
  t.add<FullLikeNode, full_like>();
  t.add<ARangeNode, arange>();
  t.add<TakeNode, take>();
}

}  // namespace wgml::backend::cpu
