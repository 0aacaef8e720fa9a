// Kept ONNX ops whose axes, shape or bounds arrive as tensor data at run time (graph inputs
// rather than constants): the reductions, Reshape (0 copies a dim), Squeeze, Unsqueeze, Slice,
// CumSum and Range. With load-time constants the frontend lowers these to mlx nodes instead.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backend/cpu/onnx/onnx_op.h"
#include "backend/cpu/strided.h"
#include "core/elements.h"
#include "core/layout.h"

namespace wgml::backend::cpu::onnx_ops {
namespace {

using runtime::fail;

std::string shape_text(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

std::vector<bool> axis_flags(const std::vector<int64_t>& axes, int rank) {
  std::vector<bool> flags(rank, false);
  for (int64_t a : axes) flags[normalize_axis(static_cast<int>(a), rank)] = true;
  return flags;
}

struct ReduceKind {
  double init;
  double (*pre)(double);
  double (*combine)(double, double);
  double (*post)(double acc, int64_t count);
};

double identity(double v) { return v; }
double absolute(double v) { return std::fabs(v); }
double squared(double v) { return v * v; }
double exponential(double v) { return std::exp(v); }
double add(double a, double b) { return a + b; }
double multiply(double a, double b) { return a * b; }
double maximum(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
double minimum(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }
double done(double acc, int64_t) { return acc; }
double average(double acc, int64_t n) { return acc / static_cast<double>(n); }
double root(double acc, int64_t) { return std::sqrt(acc); }
double logarithm(double acc, int64_t) { return std::log(acc); }

double extreme(DType t, bool lowest) {
  switch (t) {
    case DType::Bool:
      return lowest ? 0 : 1;
    case DType::UInt8:
      return lowest ? 0 : 255;
    case DType::Int8:
      return lowest ? -128 : 127;
    case DType::Int16:
      return lowest ? -32768 : 32767;
    case DType::UInt32:
      return lowest ? 0 : 4294967295.0;
    case DType::Int32:
      return lowest ? -2147483648.0 : 2147483647.0;
    default:
      return lowest ? -9223372036854775808.0 : 9223372036854775807.0;
  }
}

ReduceKind reduce_kind(const std::string& op) {
  const double inf = std::numeric_limits<double>::infinity();
  if (op == "ReduceSum") return {0, identity, add, done};
  if (op == "ReduceMean") return {0, identity, add, average};
  if (op == "ReduceMax") return {-inf, identity, maximum, done};
  if (op == "ReduceMin") return {inf, identity, minimum, done};
  if (op == "ReduceProd") return {1, identity, multiply, done};
  if (op == "ReduceL1") return {0, absolute, add, done};
  if (op == "ReduceL2") return {0, squared, add, root};
  if (op == "ReduceSumSquare") return {0, squared, add, done};
  if (op == "ReduceLogSum") return {0, identity, add, logarithm};
  if (op == "ReduceLogSumExp") return {0, exponential, add, logarithm};
  fail("unknown reduction " + op);
}

// Reductions over axes given as data; an empty list reduces everything, or nothing with
// noop_with_empty_axes. Integer results round toward zero like ONNX's reference casts.
void reduce(OpView& v) {
  const Tensor& x = v.required(0);
  const std::vector<int64_t> axes = v.input(1) ? ints_of(*v.input(1)) : v.attr_ints("axes");
  const bool keepdims = v.attr_int("keepdims", 1) != 0;
  if (axes.empty() && v.attr_int("noop_with_empty_axes", 0) != 0) return v.output(0, x);
  const std::vector<bool> reduced = axes.empty() ? std::vector<bool>(x.rank(), true) : axis_flags(axes, x.rank());
  ReduceKind kind = reduce_kind(v.op().op_type);
  // Max and Min of nothing are the type's extremes; for integers and bools those are finite.
  if (!is_floating(x.dtype()) && std::isinf(kind.init)) kind.init = extreme(x.dtype(), kind.init < 0);
  Shape out_shape, keep_shape;
  int64_t count = 1;
  for (int d = 0; d < x.rank(); ++d) {
    keep_shape.push_back(reduced[d] ? 1 : x.dim(d));
    if (!reduced[d])
      out_shape.push_back(x.dim(d));
    else
      count *= x.dim(d);
  }
  std::vector<double> acc(static_cast<size_t>(shape_numel(keep_shape)), kind.init);
  const auto out_strides = contiguous_strides(keep_shape);
  std::vector<int64_t> index(x.rank(), 0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t o = 0;
    for (int d = 0; d < x.rank(); ++d) o += (reduced[d] ? 0 : index[d]) * out_strides[d];
    acc[o] = kind.combine(acc[o], kind.pre(load_as_double(x.dtype(), x.data(), i)));
    for (int d = x.rank() - 1; d >= 0 && ++index[d] == x.dim(d); --d) index[d] = 0;
  }
  Tensor out(x.dtype(), keepdims ? keep_shape : out_shape);
  uint8_t* dst = out.mutable_data();
  for (size_t o = 0; o < acc.size(); ++o) store_double(x.dtype(), dst, static_cast<int64_t>(o), kind.post(acc[o], count));
  v.output(0, std::move(out));
}

// Reshape with a shape read at run time: 0 copies the input's dim unless allowzero, -1 infers.
void reshape(OpView& v) {
  const Tensor& x = v.required(0);
  Shape shape = ints_of(v.required(1));
  const bool allowzero = v.attr_int("allowzero", 0) != 0;
  int infer = -1;
  int64_t known = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0 && !allowzero) {
      if (static_cast<int>(d) >= x.rank()) fail("Reshape: 0 at a position the input has no dim for");
      shape[d] = x.dim(static_cast<int>(d));
    }
    if (shape[d] == -1) {
      if (infer >= 0) fail("Reshape: more than one -1 in " + shape_text(shape));
      infer = static_cast<int>(d);
    } else if (shape[d] < 0) {
      fail("Reshape: negative dim in " + shape_text(shape));
    } else {
      known *= shape[d];
    }
  }
  if (infer >= 0) shape[infer] = known == 0 ? 0 : x.numel() / known;
  if (shape_numel(shape) != x.numel()) fail("Reshape: cannot reshape " + shape_text(x.shape()) + " to " + shape_text(shape));
  v.output(0, x.reshaped(shape));
}

void squeeze(OpView& v) {
  const Tensor& x = v.required(0);
  const Tensor* axes = v.input(1);
  std::vector<bool> drop(x.rank(), false);
  if (axes && axes->numel() > 0)
    drop = axis_flags(ints_of(*axes), x.rank());
  else
    for (int d = 0; d < x.rank(); ++d) drop[d] = x.dim(d) == 1;
  Shape shape;
  for (int d = 0; d < x.rank(); ++d) {
    if (drop[d] && x.dim(d) != 1) fail("Squeeze: dim " + std::to_string(d) + " of " + shape_text(x.shape()) + " is not 1");
    if (!drop[d]) shape.push_back(x.dim(d));
  }
  v.output(0, x.reshaped(shape));
}

void unsqueeze(OpView& v) {
  const Tensor& x = v.required(0);
  const std::vector<int64_t> axes = ints_of(v.required(1));
  const int rank = x.rank() + static_cast<int>(axes.size());
  const std::vector<bool> inserted = axis_flags(axes, rank);
  Shape shape;
  for (int d = 0, src = 0; d < rank; ++d) shape.push_back(inserted[d] ? 1 : x.dim(src++));
  v.output(0, x.reshaped(shape));
}

// Slice with starts/ends/axes/steps as data; ONNX clamps like Python slicing.
void slice(OpView& v) {
  Tensor x = v.required(0);
  const std::vector<int64_t> starts = ints_of(v.required(1)), ends = ints_of(v.required(2));
  std::vector<int64_t> axes = v.input(3) ? ints_of(*v.input(3)) : std::vector<int64_t>{};
  std::vector<int64_t> steps = v.input(4) ? ints_of(*v.input(4)) : std::vector<int64_t>{};
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    fail("Slice: starts, ends, axes and steps must have one length");
  for (size_t i = 0; i < starts.size(); ++i) {
    const int axis = normalize_axis(static_cast<int>(axes[i]), x.rank());
    const SliceRange r = normalize_slice(starts[i], ends[i], steps[i], x.dim(axis));
    auto strides = contiguous_strides(x.shape());
    Shape shape = x.shape();
    shape[axis] = r.count;
    const int64_t offset = r.count > 0 ? r.start * strides[axis] : 0;
    strides[axis] *= r.step;
    x = gather_strided(x, shape, strides, offset);
  }
  v.output(0, std::move(x));
}

void cum_sum(OpView& v) {
  const Tensor& x = v.required(0);
  const int axis = normalize_axis(static_cast<int>(ints_of(v.required(1)).at(0)), x.rank());
  const bool exclusive = v.attr_int("exclusive", 0) != 0, reverse = v.attr_int("reverse", 0) != 0;
  const auto strides = contiguous_strides(x.shape());
  const int64_t len = x.dim(axis), step = strides[axis];
  Tensor out(x.dtype(), x.shape());
  uint8_t* dst = out.mutable_data();
  const bool integral = !is_floating(x.dtype());
  for (int64_t base = 0; base < x.numel(); ++base) {
    if ((base / step) % len != 0) continue;  // each line once, from its first element
    double acc = 0;
    int64_t acc_int = 0;
    for (int64_t k = 0; k < len; ++k) {
      const int64_t i = base + (reverse ? len - 1 - k : k) * step;
      if (integral) {
        const int64_t value = load_as_int64(x.dtype(), x.data(), i);
        if (!exclusive) acc_int += value;
        store_int64(x.dtype(), dst, i, acc_int);
        if (exclusive) acc_int += value;
      } else {
        const double value = load_as_double(x.dtype(), x.data(), i);
        if (!exclusive) acc += value;
        store_double(x.dtype(), dst, i, acc);
        if (exclusive) acc += value;
      }
    }
  }
  v.output(0, std::move(out));
}

// start + i * delta for i < max(ceil((limit - start) / delta), 0), in the inputs' type.
void range(OpView& v) {
  const Tensor& start = v.required(0);
  const double s = doubles_of(start).at(0), limit = doubles_of(v.required(1)).at(0), delta = doubles_of(v.required(2)).at(0);
  if (delta == 0) fail("Range: delta must not be zero");
  const int64_t count = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((limit - s) / delta)));
  Tensor out(start.dtype(), {count});
  uint8_t* dst = out.mutable_data();
  for (int64_t i = 0; i < count; ++i) store_double(start.dtype(), dst, i, s + static_cast<double>(i) * delta);
  v.output(0, std::move(out));
}

}  // namespace

void register_dynamic_ops(runtime::KernelTable& t) {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                         "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"})
    t.add_onnx("ai.onnx", op, kernel<reduce>);
  t.add_onnx("ai.onnx", "Reshape", kernel<reshape>);
  t.add_onnx("ai.onnx", "Squeeze", kernel<squeeze>);
  t.add_onnx("ai.onnx", "Unsqueeze", kernel<unsqueeze>);
  t.add_onnx("ai.onnx", "Slice", kernel<slice>);
  t.add_onnx("ai.onnx", "CumSum", kernel<cum_sum>);
  t.add_onnx("ai.onnx", "Range", kernel<range>);
}

}  // namespace wgml::backend::cpu::onnx_ops
