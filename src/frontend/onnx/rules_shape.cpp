// Shape and layout ONNX ops. Integer shape values (Shape, Gather, Concat, Slice, ... of small
// integer vectors) are tracked element by element, so shape arithmetic folds at load time where
// it is static and becomes value-slot arithmetic where it is not.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "core/elements.h"
#include "frontend/onnx/lowering.h"
#include "frontend/onnx/rule_helpers.h"

namespace wgml::frontend::onnx {
namespace {

using namespace ir;

// Tensors folded at load time stay below this many elements; larger ones are computed at run
// time, so a model cannot make loading allocate without bound.
constexpr int64_t kMaxFoldedElements = int64_t{1} << 22;

Value known_vector(DType dtype, std::vector<IntOrVid> elements, bool scalar = false) {
  Value v;
  v.dtype = dtype;
  if (!scalar) v.dims = {static_cast<int64_t>(elements.size())};
  v.elements = std::move(elements);
  return v;
}

// Whether dims describe a tensor small enough to fold (all dims >= 0, no overflow).
bool folded_size_ok(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || (d > 0 && n > kMaxFoldedElements / d)) return false;
    n *= d;
  }
  return n <= kMaxFoldedElements;
}

int64_t known_or_unknown(const IntOrVid& d) { return d.is_vid ? kUnknownDim : d.literal; }

Dims dims_of(const std::vector<IntOrVid>& shape) {
  Dims dims;
  for (const IntOrVid& d : shape) dims.push_back(known_or_unknown(d));
  return dims;
}

// ---- Constant, Shape, Size, ConstantOfShape, Range ----

void constant(NodeLowering& n) {
  if (auto t = n.attr_tensor("value")) return n.set_output(0, n.g.constant_value(*t));
  auto scalar_tensor = [](DType dtype, Shape shape, auto values, auto store) {
    Tensor t(dtype, std::move(shape));
    for (size_t i = 0; i < values.size(); ++i) store(dtype, t.mutable_data(), i, values[i]);
    return t;
  };
  if (n.attr("value_float"))
    return n.set_output(0, n.g.constant_value(scalar_tensor(DType::Float32, {},
                                                            std::vector<double>{n.attr_float("value_float", 0)}, store_double)));
  if (n.attr("value_int"))
    return n.set_output(
        0, n.g.constant_value(scalar_tensor(DType::Int64, {}, std::vector<int64_t>{n.attr_int("value_int", 0)}, store_int64)));
  if (n.attr("value_floats")) {
    const auto f = n.attr_floats("value_floats");
    return n.set_output(0, n.g.constant_value(scalar_tensor(DType::Float32, {static_cast<int64_t>(f.size())},
                                                            std::vector<double>(f.begin(), f.end()), store_double)));
  }
  if (n.attr("value_ints")) {
    const auto v = n.attr_ints("value_ints");
    return n.set_output(0, n.g.constant_value(scalar_tensor(DType::Int64, {static_cast<int64_t>(v.size())}, v, store_int64)));
  }
  n.unsupported("a Constant without a tensor, float(s) or int(s) value (sparse or string)");
}

void shape(NodeLowering& n) {
  const Value& x = n.in(0);
  const int rank = x.rank();
  auto clamp_bound = [&](int64_t b) { return std::clamp<int64_t>(b < 0 ? b + rank : b, 0, rank); };
  const int64_t start = clamp_bound(n.attr_int("start", 0));
  const int64_t end = clamp_bound(n.attr_int("end", rank));
  std::vector<IntOrVid> dims;
  for (int64_t d = start; d < end; ++d) dims.push_back(n.g.dim(x, static_cast<int>(d)));
  n.set_output(0, known_vector(DType::Int64, dims));
}

void size(NodeLowering& n) {
  const Value& x = n.in(0);
  n.set_output(0, known_vector(DType::Int64, {n.g.product(n.g.shape_of(x))}, true));
}

void constant_of_shape(NodeLowering& n) {
  const auto value = n.attr_tensor("value");
  const DType dtype = value ? value->dtype() : DType::Float32;
  const double fill = value ? load_scalar(*value) : 0.0;
  const std::vector<IntOrVid> shape = n.g.int_elements(n.in(0), n.where() + " input 0");
  const auto literal_shape = n.g.literal_ints(n.in(0));
  if (literal_shape && folded_size_ok(*literal_shape)) {
    Tensor t(dtype, Shape(literal_shape->begin(), literal_shape->end()));
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (value) std::memcpy(t.mutable_data() + i * dtype_size(dtype), value->data(), dtype_size(dtype));
    }
    return n.set_output(0, n.g.constant_value(t));
  }
  n.set_output(0, full(n, shape, fill, dtype), dtype, dims_of(shape));
}

void range(NodeLowering& n) {
  const Value& start = n.in(0);
  const DType t = start.dtype;
  // Integer ranges of known bounds stay known element by element (shape arithmetic).
  const auto s0 = n.g.literal_ints(start), s1 = n.g.literal_ints(n.in(1)), s2 = n.g.literal_ints(n.in(2));
  if (!is_floating(t) && s0 && s1 && s2 && s0->size() == 1 && s1->size() == 1 && s2->size() == 1) {
    const int64_t first = (*s0)[0], limit = (*s1)[0], delta = (*s2)[0];
    if (delta == 0) n.fail("a nonzero delta");
    const double count = std::ceil((static_cast<double>(limit) - static_cast<double>(first)) / static_cast<double>(delta));
    if (count <= 4096) {
      std::vector<IntOrVid> elements;
      for (int64_t i = 0; i < count; ++i) elements.push_back(literal(checked_add(first, checked_mul(i, delta))));
      return n.set_output(0, known_vector(t, elements));
    }
  }
  if (start.constant && n.in(1).constant && n.in(2).constant) {
    const double s = load_scalar(*start.constant), limit = load_scalar(*n.in(1).constant);
    const double delta = load_scalar(*n.in(2).constant);
    if (delta == 0) n.fail("a nonzero delta");
    const double exact_count = std::max(0.0, std::ceil((limit - s) / delta));
    if (!(exact_count <= kMaxFoldedElements)) n.unsupported("a Range of more than 2^22 elements");
    const int64_t count = static_cast<int64_t>(exact_count);
    Tensor out(t, {count});
    for (int64_t i = 0; i < count; ++i) {
      if (is_floating(t))
        store_double(t, out.mutable_data(), i, s + static_cast<double>(i) * delta);
      else
        store_int64(t, out.mutable_data(), i, static_cast<int64_t>(s) + i * static_cast<int64_t>(delta));
    }
    return n.set_output(0, n.g.constant_value(out));
  }
  if (is_floating(t) || !scalar_type(t)) return keep_with_rank(n, t, 1);
  const IntOrVid s = n.g.int_elements(start, "start")[0];
  const IntOrVid limit = n.g.int_elements(n.in(1), "limit")[0];
  const IntOrVid delta = n.g.int_elements(n.in(2), "delta")[0];
  const Tid out = n.g.new_temp();
  n.g.emit(ARangeNode{.out = out, .start = s, .stop = limit, .step = delta, .scalar_type = *scalar_type(t)});
  n.set_output(0, out, t, {kUnknownDim});
}

// ---- Reshape, Flatten, Squeeze, Unsqueeze, Transpose ----

// ONNX reshape targets: 0 copies the input dim (unless allowzero), -1 is inferred.
std::vector<IntOrVid> reshape_target(NodeLowering& n, const Value& x, std::vector<IntOrVid> shape, bool allowzero) {
  for (size_t i = 0; i < shape.size(); ++i)
    if (!shape[i].is_vid && shape[i].literal == 0 && !allowzero) {
      if (static_cast<int>(i) >= x.rank()) n.fail("a 0 in the shape only for an existing input dim");
      shape[i] = n.g.dim(x, static_cast<int>(i));
    }
  return shape;
}

Dims reshaped_dims(const Value& x, const std::vector<IntOrVid>& shape) {
  Dims dims;
  int infer = -1;
  int64_t known = 1;
  bool others_known = true;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!shape[i].is_vid && shape[i].literal == -1) {
      infer = static_cast<int>(i);
      dims.push_back(kUnknownDim);
      continue;
    }
    dims.push_back(known_or_unknown(shape[i]));
    if (dims.back() < 0)
      others_known = false;
    else
      known = checked_mul(known, dims.back());
  }
  if (infer >= 0 && others_known && known > 0 && x.dims_known())
    dims[infer] = std::accumulate(x.dims.begin(), x.dims.end(), int64_t{1}, checked_mul) / known;
  return dims;
}

void emit_reshape(NodeLowering& n, const Value& x, const std::vector<IntOrVid>& shape) {
  const Dims dims = reshaped_dims(x, shape);
  if (x.elements && dims.size() <= 1)  // shape values stay known through reshapes to 0-D/1-D
    return n.set_output(0, known_vector(x.dtype, *x.elements, dims.empty()));
  // A constant stays one, so rules that read their weights at load time see through the reshape
  // (ONNX Runtime's model builder reshapes the tied MatMulNBits weights for GatherBlockQuantized).
  if (x.constant && std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 0; }))
    return n.set_output(0, n.g.constant_value(x.constant->reshaped(Shape(dims.begin(), dims.end()))));
  n.set_output(0, n.reshape(n.in_tensor(0), shape), x.dtype, dims);
}

void reshape(NodeLowering& n) {
  const Value& x = n.in(0);
  const bool allowzero = n.attr_int("allowzero", 0) != 0;
  // A shape read from data may hold 0s that copy input dims: only the kernel can tell.
  if (n.opset >= 5 && !allowzero && !n.g.known_elements(n.in(1)))
    return keep_with_rank(n, x.dtype, static_cast<int>(static_length(n, 1, "a shape")));
  std::vector<IntOrVid> shape;
  if (n.opset < 5) {
    for (int64_t d : n.attr_ints("shape")) shape.push_back(literal(d));
  } else {
    shape = n.g.int_elements(n.in(1), n.where() + " input 1 (shape)");
  }
  emit_reshape(n, x, reshape_target(n, x, shape, allowzero));
}

void flatten(NodeLowering& n) {
  const Value& x = n.in(0);
  int64_t axis = n.attr_int("axis", 1);
  if (axis < -x.rank() || axis > x.rank()) n.fail("an axis in [-rank, rank], found " + std::to_string(axis));
  if (axis < 0) axis += x.rank();
  const std::vector<IntOrVid> dims = n.g.shape_of(x);
  const IntOrVid outer = n.g.product({dims.begin(), dims.begin() + axis});
  const IntOrVid inner = n.g.product({dims.begin() + axis, dims.end()});
  emit_reshape(n, x, {outer, inner});
}

void squeeze(NodeLowering& n) {
  const Value& x = n.in(0);
  if (n.opset >= 13 && known_only_at_run_time(n, 1))
    return keep_with_rank(n, x.dtype, x.rank() - static_cast<int>(static_length(n, 1, "axes")));
  std::vector<int> axes;
  if (auto listed = axes_attr_or_input(n, 13, 1)) {
    for (int64_t a : *listed) axes.push_back(n.axis(a, x.rank()));
  } else {
    for (int d = 0; d < x.rank(); ++d) {
      if (x.dims[d] < 0) n.unsupported("Squeeze without axes on an input whose dims are known only at run time");
      if (x.dims[d] == 1) axes.push_back(d);
    }
  }
  Dims dims;
  for (int d = 0; d < x.rank(); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) dims.push_back(x.dims[d]);
  if (x.elements && dims.size() <= 1) return n.set_output(0, known_vector(x.dtype, *x.elements, dims.empty()));
  n.set_output(0, squeeze_axes(n, n.in_tensor(0), axes), x.dtype, dims);
}

void unsqueeze(NodeLowering& n) {
  const Value& x = n.in(0);
  if (n.opset >= 13 && known_only_at_run_time(n, 1))
    return keep_with_rank(n, x.dtype, x.rank() + static_cast<int>(static_length(n, 1, "axes")));
  const auto listed = axes_attr_or_input(n, 13, 1);
  if (!listed) n.fail("axes");
  const int rank = x.rank() + static_cast<int>(listed->size());
  std::vector<bool> inserted(rank, false);
  for (int64_t a : *listed) inserted[n.axis(a, rank)] = true;
  std::vector<IntOrVid> shape;
  Dims dims;
  for (int d = 0, src = 0; d < rank; ++d) {
    shape.push_back(inserted[d] ? literal(1) : n.g.dim(x, src));
    dims.push_back(inserted[d] ? 1 : x.dims[src]);
    if (!inserted[d]) ++src;
  }
  if (x.elements && rank <= 1) return n.set_output(0, known_vector(x.dtype, *x.elements));
  n.set_output(0, n.reshape(n.in_tensor(0), shape), x.dtype, dims);
}

void transpose(NodeLowering& n) {
  const Value& x = n.in(0);
  std::vector<int> perm;
  for (int64_t p : n.attr_ints("perm")) perm.push_back(n.axis(p, x.rank()));
  if (!n.attr("perm"))
    for (int d = x.rank() - 1; d >= 0; --d) perm.push_back(d);
  if (static_cast<int>(perm.size()) != x.rank())
    n.fail("a perm of " + std::to_string(x.rank()) + " axes, found " + std::to_string(perm.size()));
  Dims dims;
  for (int p : perm) dims.push_back(x.dims[p]);
  n.set_output(0, n.transpose(n.in_tensor(0), perm), x.dtype, dims);
}

// ---- Concat, Split, Slice, Gather ----

void concat(NodeLowering& n) {
  const Value& first = n.in(0);
  const int axis = n.axis(n.attr_int("axis", 0), first.rank());
  // Concatenated shape vectors stay known element by element.
  std::vector<IntOrVid> elements;
  bool all_known = first.rank() == 1;
  for (size_t i = 0; i < n.num_inputs() && all_known; ++i) {
    const auto known = n.g.known_elements(n.in(i));
    if (!known)
      all_known = false;
    else
      elements.insert(elements.end(), known->begin(), known->end());
  }
  if (all_known) return n.set_output(0, known_vector(first.dtype, elements));
  std::vector<Tid> parts;
  Dims dims = first.dims;
  dims[axis] = 0;
  for (size_t i = 0; i < n.num_inputs(); ++i) {
    const Value& v = n.in(i);
    if (v.rank() != first.rank()) n.fail("inputs of equal rank");
    if (v.dtype != first.dtype) n.fail("inputs of one dtype");
    if (v.dims[axis] == 0 && v.rank() == 1 && n.num_inputs() > 1) continue;  // empty vectors
    parts.push_back(n.in_tensor(i));
    dims[axis] = (dims[axis] < 0 || v.dims[axis] < 0) ? kUnknownDim : dims[axis] + v.dims[axis];
    for (int d = 0; d < v.rank(); ++d)
      if (d != axis && dims[d] < 0) dims[d] = v.dims[d];
  }
  if (parts.empty()) parts.push_back(n.in_tensor(0));
  const Tid out = n.g.new_temp();
  n.g.emit(ConcatenateNode{.tensors = parts, .out = out, .axis = axis});
  n.set_output(0, out, first.dtype, dims);
}

void split(NodeLowering& n) {
  const Value& x = n.in(0);
  const int axis = n.axis(n.attr_int("axis", 0), x.rank());
  const size_t outputs = n.num_outputs();
  std::vector<IntOrVid> sizes;
  if (n.opset < 13 && n.attr("split")) {
    for (int64_t s : n.attr_ints("split")) sizes.push_back(literal(s));
  } else if (n.opset >= 13 && n.has_input(1)) {
    sizes = n.g.int_elements(n.in(1), n.where() + " input 1 (split)");
  } else {
    // Equal parts; from opset 18 the last one may be smaller.
    const IntOrVid dim = n.g.dim(x, axis);
    const IntOrVid count = literal(static_cast<int64_t>(outputs));
    const IntOrVid chunk = n.g.floor_div(n.g.add(dim, literal(static_cast<int64_t>(outputs) - 1)), count);
    for (size_t i = 0; i + 1 < outputs; ++i) sizes.push_back(chunk);
    sizes.push_back(n.g.sub(dim, n.g.mul(chunk, literal(static_cast<int64_t>(outputs) - 1))));
  }
  if (sizes.size() != outputs) n.fail(std::to_string(outputs) + " split sizes, found " + std::to_string(sizes.size()));
  const Tid t = n.in_tensor(0);
  IntOrVid start = literal(0);
  for (size_t i = 0; i < outputs; ++i) {
    const IntOrVid stop = n.g.add(start, sizes[i]);
    Dims dims = x.dims;
    dims[axis] = known_or_unknown(sizes[i]);
    if (n.wants_output(i)) n.set_output(i, slice_axis(n, t, axis, start, stop), x.dtype, dims);
    start = stop;
  }
}

// Static slicing of a known element vector (shape arithmetic).
std::vector<IntOrVid> slice_elements(const std::vector<IntOrVid>& v, int64_t start, int64_t stop, int64_t step) {
  const int64_t size = static_cast<int64_t>(v.size());
  auto clamp = [&](int64_t i, int64_t lo, int64_t hi) { return std::clamp(i < 0 ? i + size : i, lo, hi); };
  std::vector<IntOrVid> out;
  if (step > 0) {
    for (int64_t i = clamp(start, 0, size); i < clamp(stop, 0, size); i += step) out.push_back(v[i]);
  } else {
    for (int64_t i = clamp(start, -1, size - 1); i > clamp(stop, -1, size - 1); i += step) out.push_back(v[i]);
  }
  return out;
}

void slice(NodeLowering& n) {
  const Value& x = n.in(0);
  std::vector<IntOrVid> starts, ends;
  std::vector<int64_t> axes, steps;
  if (n.opset < 10) {
    for (int64_t s : n.attr_ints("starts")) starts.push_back(literal(s));
    for (int64_t e : n.attr_ints("ends")) ends.push_back(literal(e));
    axes = n.attr_ints("axes");
  } else {
    if (known_only_at_run_time(n, 3) || known_only_at_run_time(n, 4)) return keep_with_rank(n, x.dtype, x.rank());
    starts = n.g.int_elements(n.in(1), n.where() + " input 1 (starts)");
    ends = n.g.int_elements(n.in(2), n.where() + " input 2 (ends)");
    if (n.has_input(3)) axes = n.literal_ints_input(3, "axes");
    if (n.has_input(4)) steps = n.literal_ints_input(4, "steps");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    n.fail("starts, ends, axes and steps of equal length");
  auto literal_of = [](const IntOrVid& v) { return v.is_vid ? std::optional<int64_t>() : v.literal; };
  if (x.rank() == 1 && starts.size() == 1) {
    const auto known = n.g.known_elements(x);
    const auto s = literal_of(starts[0]), e = literal_of(ends[0]);
    if (known && s && e && steps[0] != 0) return n.set_output(0, known_vector(x.dtype, slice_elements(*known, *s, *e, steps[0])));
  }
  Tid t = n.in_tensor(0);
  Dims dims = x.dims;
  for (size_t i = 0; i < starts.size(); ++i) {
    const int axis = n.axis(axes[i], x.rank());
    if (steps[i] == 0) n.fail("nonzero steps");
    if (steps[i] > INT32_MAX || steps[i] < -INT32_MAX) n.unsupported("steps beyond int32");
    t = slice_axis(n, t, axis, starts[i], ends[i], static_cast<int32_t>(steps[i]));
    dims[axis] = kUnknownDim;
    const auto s = literal_of(starts[i]), e = literal_of(ends[i]);
    if (s && e && x.dims[axis] >= 0) {
      std::vector<IntOrVid> indices(static_cast<size_t>(x.dims[axis]), literal(0));
      dims[axis] = static_cast<int64_t>(slice_elements(indices, *s, *e, steps[i]).size());
    }
  }
  n.set_output(0, t, x.dtype, dims);
}

// Negative indices count from the end of `axis`: where(i < 0, i + dim, i).
Tid wrap_indices(NodeLowering& n, const Value& data, int axis, Tid indices, DType index_type) {
  const Tid zero = n.scalar(0, index_type);
  const Tid dim = scalar_of(n, n.g.dim(data, axis), index_type);
  return where_op(n, n.binary<LessNode>(indices, zero), n.binary<AddNode>(indices, dim), indices);
}

void gather(NodeLowering& n) {
  const Value& data = n.in(0);
  const Value& indices = n.in(1);
  const int axis = n.axis(n.attr_int("axis", 0), data.rank());
  // Picking elements of a known shape vector with known indices stays known.
  const auto known = n.g.known_elements(data);
  const auto picks = n.g.literal_ints(indices);
  if (known && picks && data.rank() == 1 && indices.rank() <= 1) {
    std::vector<IntOrVid> out;
    for (int64_t i : *picks) {
      const int64_t size = static_cast<int64_t>(known->size());
      if (i < -size || i >= size)
        n.fail("indices in [" + std::to_string(-size) + ", " + std::to_string(size) + "), found " + std::to_string(i));
      out.push_back((*known)[i < 0 ? i + size : i]);
    }
    return n.set_output(0, known_vector(data.dtype, out, indices.rank() == 0));
  }
  const Tid out = n.g.new_temp();
  n.g.emit(TakeNode{.x = n.in_tensor(0), .out = out, .index = {0, {}, n.in_tensor(1), IntOrVidOrTid::Tensor}, .axis = axis});
  Dims dims(data.dims.begin(), data.dims.begin() + axis);
  dims.insert(dims.end(), indices.dims.begin(), indices.dims.end());
  dims.insert(dims.end(), data.dims.begin() + axis + 1, data.dims.end());
  n.set_output(0, out, data.dtype, dims);
}

void gather_elements(NodeLowering& n) {
  const Value& data = n.in(0);
  const Value& indices = n.in(1);
  const int axis = n.axis(n.attr_int("axis", 0), data.rank());
  const Tid wrapped = wrap_indices(n, data, axis, n.in_tensor(1), indices.dtype);
  const Tid out = n.g.new_temp();
  n.g.emit(TakeAlongAxisNode{.x = n.in_tensor(0), .indices = wrapped, .out = out, .axis = axis});
  n.set_output(0, out, data.dtype, indices.dims);
}

// ---- Expand, Tile, Pad ----

void expand(NodeLowering& n) {
  const Value& x = n.in(0);
  const std::vector<IntOrVid> shape = n.g.int_elements(n.in(1), n.where() + " input 1 (shape)");
  const size_t rank = std::max<size_t>(shape.size(), x.dims.size());
  std::vector<IntOrVid> target(rank);
  Dims dims(rank, kUnknownDim);
  bool resolved = true;
  for (size_t i = 0; i < rank; ++i) {
    const size_t xi = i + x.dims.size(), si = i + shape.size();
    const bool has_x = xi >= rank, has_s = si >= rank;
    const IntOrVid xd = has_x ? n.g.dim(x, static_cast<int>(xi - rank)) : literal(1);
    const IntOrVid sd = has_s ? shape[si - rank] : literal(1);
    if (!sd.is_vid && sd.literal == 1)
      target[i] = xd;
    else if (!xd.is_vid && xd.literal == 1)
      target[i] = sd;
    else if (!xd.is_vid && !sd.is_vid && xd.literal == sd.literal)
      target[i] = xd;
    else if (xd.is_vid && sd.is_vid && xd.vid == sd.vid)
      target[i] = xd;
    else
      resolved = false;
    dims[i] = known_or_unknown(target[i]);
  }
  if (resolved) {
    const Tid out = n.g.new_temp();
    n.g.emit(BroadcastToNode{.x = n.in_tensor(0), .out = out, .shape = target});
    return n.set_output(0, out, x.dtype, dims);
  }
  // Which side wins is decided at run time: multiply by ones of the requested shape instead.
  const Tid ones = full(n, shape, 1, x.dtype);
  const Tid out =
      x.dtype == DType::Bool ? n.binary<LogicalAndNode>(n.in_tensor(0), ones) : n.binary<MultiplyNode>(n.in_tensor(0), ones);
  n.set_output(0, out, x.dtype, Dims(rank, kUnknownDim));
}

void tile(NodeLowering& n) {
  const Value& x = n.in(0);
  const std::vector<IntOrVid> reps = n.g.int_elements(n.in(1), n.where() + " input 1 (repeats)");
  if (static_cast<int>(reps.size()) != x.rank()) n.fail("one repeat per input dim");
  Dims dims;
  for (int d = 0; d < x.rank(); ++d)
    dims.push_back(x.dims[d] >= 0 && !reps[d].is_vid ? checked_mul(x.dims[d], reps[d].literal) : kUnknownDim);
  const Tid out = n.g.new_temp();
  n.g.emit(TileNode{.x = n.in_tensor(0), .out = out, .reps = reps});
  n.set_output(0, out, x.dtype, dims);
}

void pad(NodeLowering& n) {
  const Value& x = n.in(0);
  const std::string mode = n.attr_string("mode", "constant");
  if (mode != "constant" && mode != "edge") return keep(n, {x.dtype}, {Dims(x.rank(), kUnknownDim)});
  std::vector<IntOrVid> pads;
  double value = 0;
  std::vector<int64_t> axes;
  if (n.opset < 11) {
    for (int64_t p : n.attr_ints(n.opset < 2 ? "paddings" : "pads")) pads.push_back(literal(p));
    value = n.attr_float("value", 0);
  } else {
    pads = n.g.int_elements(n.in(1), n.where() + " input 1 (pads)");
    if (n.has_input(2)) {
      const Value& c = n.in(2);
      if (!c.constant) return keep(n, {x.dtype}, {Dims(x.rank(), kUnknownDim)});
      value = load_scalar(*c.constant);
    }
    if (n.has_input(3)) axes = n.literal_ints_input(3, "axes");
  }
  if (axes.empty())
    for (int d = 0; d < x.rank(); ++d) axes.push_back(d);
  if (pads.size() != 2 * axes.size()) n.fail(std::to_string(2 * axes.size()) + " pads, found " + std::to_string(pads.size()));
  // ONNX lists all begins, then all ends; the node takes (begin, end) per dim. Negative pads crop.
  std::vector<IntOrVid> widths(2 * x.rank(), literal(0));
  Tid t = n.in_tensor(0);
  Dims dims = x.dims;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int axis = n.axis(axes[i], x.rank());
    IntOrVid before = pads[i], after = pads[i + axes.size()];
    if (!before.is_vid && before.literal < 0) {
      t = slice_axis(n, t, axis, literal(-before.literal), literal(INT32_MAX));
      before = literal(0);
    }
    if (!after.is_vid && after.literal < 0) {
      t = slice_axis(n, t, axis, literal(0), literal(after.literal));
      after = literal(0);
    }
    widths[2 * axis] = before;
    widths[2 * axis + 1] = after;
    const IntOrVid b = pads[i], a = pads[i + axes.size()];
    dims[axis] = (x.dims[axis] >= 0 && !b.is_vid && !a.is_vid) ? checked_add(checked_add(x.dims[axis], b.literal), a.literal)
                                                               : kUnknownDim;
  }
  const Tid out = n.g.new_temp();
  n.g.emit(PadNode{.x = t, .out = out, .pad_width = widths, .mode = mode, .constant_value = static_cast<float>(value)});
  n.set_output(0, out, x.dtype, dims);
}

// ---- DepthToSpace, SpaceToDepth, Trilu, EyeLike, OneHot ----

void depth_to_space(NodeLowering& n) {
  const Value& x = n.in(0);
  if (x.rank() != 4) n.fail("a rank-4 input");
  const int64_t b = n.attr_int("blocksize", 0);
  if (b <= 0) n.fail("a positive blocksize");
  const bool crd = n.attr_string("mode", "DCR") == "CRD";
  const auto s = n.g.shape_of(x);
  const IntOrVid c = n.g.floor_div(s[1], literal(checked_mul(b, b)));
  const std::vector<IntOrVid> split = crd ? std::vector<IntOrVid>{s[0], c, literal(b), literal(b), s[2], s[3]}
                                          : std::vector<IntOrVid>{s[0], literal(b), literal(b), c, s[2], s[3]};
  const std::vector<int> perm = crd ? std::vector<int>{0, 1, 4, 2, 5, 3} : std::vector<int>{0, 3, 4, 1, 5, 2};
  const Tid t = n.transpose(n.reshape(n.in_tensor(0), split), perm);
  const std::vector<IntOrVid> out_shape{s[0], c, n.g.mul(s[2], literal(b)), n.g.mul(s[3], literal(b))};
  n.set_output(0, n.reshape(t, out_shape), x.dtype, dims_of(out_shape));
}

void space_to_depth(NodeLowering& n) {
  const Value& x = n.in(0);
  if (x.rank() != 4) n.fail("a rank-4 input");
  const int64_t b = n.attr_int("blocksize", 0);
  if (b <= 0) n.fail("a positive blocksize");
  const auto s = n.g.shape_of(x);
  const IntOrVid h = n.g.floor_div(s[2], literal(b)), w = n.g.floor_div(s[3], literal(b));
  const bool crd = n.attr_string("mode", "DCR") == "CRD";
  const std::vector<int> perm = crd ? std::vector<int>{0, 1, 3, 5, 2, 4} : std::vector<int>{0, 3, 5, 1, 2, 4};
  const Tid t = n.transpose(n.reshape(n.in_tensor(0), {s[0], s[1], h, literal(b), w, literal(b)}), perm);
  const std::vector<IntOrVid> out_shape{s[0], n.g.mul(s[1], literal(checked_mul(b, b))), h, w};
  n.set_output(0, n.reshape(t, out_shape), x.dtype, dims_of(out_shape));
}

// Rows x cols index grids for the last two axes of x: col - row, as int64.
Tid diagonal_offsets(NodeLowering& n, const Value& x) {
  const int rank = x.rank();
  const auto st = *scalar_type(DType::Int64);
  const Tid rows = n.g.new_temp(), cols = n.g.new_temp();
  n.g.emit(ARangeNode{.out = rows, .start = literal(0), .stop = n.g.dim(x, rank - 2), .step = literal(1), .scalar_type = st});
  n.g.emit(ARangeNode{.out = cols, .start = literal(0), .stop = n.g.dim(x, rank - 1), .step = literal(1), .scalar_type = st});
  return n.binary<SubtractNode>(expand_dims(n, cols, 0), expand_dims(n, rows, 1));
}

void trilu(NodeLowering& n) {
  const Value& x = n.in(0);
  if (x.rank() < 2) n.fail("an input of rank >= 2");
  const bool upper = n.attr_int("upper", 1) != 0;
  const Tid out = n.g.new_temp();
  if (n.has_input(1) && !n.g.literal_ints(n.in(1))) {
    // k known only at run time: keep where col - row >= k (upper) or <= k (lower).
    const Tid offsets = diagonal_offsets(n, x);
    const Tid k = n.cast(n.in_tensor(1), n.in(1).dtype, DType::Int64);
    const Tid keep = upper ? n.binary<GreaterEqualNode>(offsets, k) : n.binary<LessEqualNode>(offsets, k);
    return n.set_output(0, where_op(n, keep, n.in_tensor(0), n.scalar(0, x.dtype)), x.dtype, x.dims);
  }
  int64_t k = n.has_input(1) ? n.literal_ints_input(1, "k")[0] : 0;
  k = std::clamp<int64_t>(k, INT32_MIN, INT32_MAX);
  if (upper)
    n.g.emit(TriuNode{.x = n.in_tensor(0), .out = out, .k = static_cast<int32_t>(k)});
  else
    n.g.emit(TrilNode{.x = n.in_tensor(0), .out = out, .k = static_cast<int32_t>(k)});
  n.set_output(0, out, x.dtype, x.dims);
}

void eye_like(NodeLowering& n) {
  const Value& x = n.in(0);
  if (x.rank() != 2 || !x.dims_known() || !folded_size_ok(x.dims))
    n.unsupported("EyeLike of an input whose shape is known only at run time or is huge");
  const pb::AttributeProto* dt = n.attr("dtype");
  const auto dtype = dt ? ir::dtype_from_onnx(static_cast<int32_t>(dt->i())) : std::optional<DType>(x.dtype);
  if (!dtype) n.unsupported("dtype " + onnx_type_name(static_cast<int32_t>(dt->i())));
  const int64_t k = n.attr_int("k", 0);
  Tensor t(*dtype, x.dims);
  for (int64_t i = 0; i < x.dims[0]; ++i)
    if (i + k >= 0 && i + k < x.dims[1]) store_int64(*dtype, t.mutable_data(), i * x.dims[1] + i + k, 1);
  n.set_output(0, n.g.constant_value(t));
}

// OneHot: values[1] where (index wrapped by depth) equals the position along `axis`, else values[0].
void one_hot(NodeLowering& n) {
  const Value& indices = n.in(0);
  const Value& values = n.in(2);
  const int rank = indices.rank() + 1;
  const int axis = n.axis(n.attr_int("axis", -1), rank);
  const Tid depth = n.reshape(n.cast(n.in_tensor(1), n.in(1).dtype, DType::Int64), {});
  const IntOrVid depth_value = n.g.int_elements(Lowering::runtime(depth, DType::Int64, {}), n.where() + " input 1 (depth)")[0];
  Tid idx = n.cast(n.in_tensor(0), indices.dtype, DType::Int64);
  idx = where_op(n, n.binary<LessNode>(idx, n.scalar(0, DType::Int64)), n.binary<AddNode>(idx, depth), idx);
  idx = expand_dims(n, idx, axis);
  const Tid positions = n.g.new_temp();
  n.g.emit(ARangeNode{
      .out = positions, .start = literal(0), .stop = depth_value, .step = literal(1), .scalar_type = *scalar_type(DType::Int64)});
  std::vector<IntOrVid> position_shape(rank, literal(1));
  position_shape[axis] = literal(-1);
  const Tid hit = n.binary<EqualNode>(idx, n.reshape(positions, position_shape));
  const Tid vals = n.in_tensor(2);
  const Tid off = n.reshape(slice_axis(n, vals, 0, literal(0), literal(1)), {});
  const Tid on = n.reshape(slice_axis(n, vals, 0, literal(1), literal(2)), {});
  Dims dims = indices.dims;
  dims.insert(dims.begin() + axis, depth_value.is_vid ? kUnknownDim : depth_value.literal);
  n.set_output(0, where_op(n, hit, on, off), values.dtype, dims);
}

}  // namespace

void add_shape_rules(std::vector<OpRule>& r) {
  auto add = [&](const char* op, LowerFn f, int since = 1) { r.push_back({"", op, since, f}); };
  add("Constant", constant);
  add("Shape", shape);
  add("Size", size);
  add("ConstantOfShape", constant_of_shape, 9);
  add("Range", range, 11);
  add("Reshape", reshape);
  add("Flatten", flatten);
  add("Squeeze", squeeze);
  add("Unsqueeze", unsqueeze);
  add("Transpose", transpose);
  add("Concat", concat, 4);
  add("Split", split, 2);
  add("Slice", slice);
  add("Gather", gather);
  add("GatherElements", gather_elements, 11);
  add("Expand", expand, 8);
  add("Tile", tile, 6);
  add("Pad", pad, 2);
  add("DepthToSpace", depth_to_space);
  add("SpaceToDepth", space_to_depth);
  add("Trilu", trilu, 14);
  add("EyeLike", eye_like, 9);
  add("OneHot", one_hot, 9);
}

}  // namespace wgml::frontend::onnx
