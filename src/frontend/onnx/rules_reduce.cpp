// Reductions, arg-reductions, softmax family, cumulative sums and normalizations over axes.
#include <limits>

#include "frontend/onnx/lowering.h"
#include "frontend/onnx/rule_helpers.h"

namespace wgml::frontend::onnx {
namespace {

using namespace ir;

struct Reduction {
  std::vector<int32_t> axes;  // empty: all
  bool keepdims = true;
  bool noop = false;  // empty axes with noop_with_empty_axes: the identity
  Dims dims;          // of the result
};

// Axes given as run-time data: the kept reduction kernel reads them.
bool kept_for_run_time_axes(NodeLowering& n, int axes_input_since) {
  if (n.opset < axes_input_since || !known_only_at_run_time(n, 1)) return false;
  const Value& x = n.in(0);
  const bool keepdims = n.attr_int("keepdims", 1) != 0;
  const int64_t axes = static_length(n, 1, "axes");
  if (axes == 0 && !keepdims) n.unsupported("an empty run-time axes list without keepdims");
  keep_with_rank(n, x.dtype, keepdims ? x.rank() : x.rank() - static_cast<int>(axes));
  return true;
}

Reduction reduction(NodeLowering& n, int axes_input_since) {
  const Value& x = n.in(0);
  Reduction r;
  r.keepdims = n.attr_int("keepdims", 1) != 0;
  const auto listed = axes_attr_or_input(n, axes_input_since, 1);
  std::vector<bool> reduced(x.rank(), !listed || listed->empty());
  if ((!listed || listed->empty()) && n.attr_int("noop_with_empty_axes", 0) != 0) {
    r.noop = true;
    r.dims = x.dims;
    return r;
  }
  if (listed)
    for (int64_t a : *listed) reduced[n.axis(a, x.rank())] = true;
  for (int d = 0; d < x.rank(); ++d) {
    if (reduced[d]) r.axes.push_back(d);
    if (!reduced[d])
      r.dims.push_back(x.dims[d]);
    else if (r.keepdims)
      r.dims.push_back(1);
  }
  return r;
}

template <class N>
Tid reduce_node(NodeLowering& n, Tid x, const Reduction& r) {
  const Tid out = n.g.new_temp();
  n.g.emit(N{.x = x, .out = out, .axes = r.axes, .keepdims = r.keepdims});
  return out;
}

// reduce(pre(x)) then post(); results keep the input's dtype as ONNX requires (MLX widens small
// integers when summing, and a float post-step such as sqrt needs floats).
template <class N>
void reduce_with(NodeLowering& n, int axes_input_since, Tid (*pre)(NodeLowering&, Tid, DType),
                 Tid (*post)(NodeLowering&, Tid, DType)) {
  if (kept_for_run_time_axes(n, axes_input_since)) return;
  const Value& x = n.in(0);
  const Reduction r = reduction(n, axes_input_since);
  Tid t = n.in_tensor(0);
  if (pre) t = pre(n, t, x.dtype);
  if (r.noop) return n.set_output(0, t, x.dtype, r.dims);
  const bool integral = !is_floating(x.dtype);
  if (post && integral) t = n.convert(t, DType::Float64);
  t = reduce_node<N>(n, t, r);
  if (post) t = post(n, t, x.dtype);
  if (integral) t = n.convert(t, x.dtype);
  n.set_output(0, t, x.dtype, r.dims);
}

Tid abs_of(NodeLowering& n, Tid x, DType) { return n.unary<AbsNode>(x); }
Tid square_of(NodeLowering& n, Tid x, DType) { return n.unary<SquareNode>(x); }
Tid sqrt_of(NodeLowering& n, Tid x, DType) { return n.unary<SqrtNode>(x); }
Tid log_of(NodeLowering& n, Tid x, DType) { return n.unary<LogNode>(x); }

template <class N, int AxesInputSince>
void reduce_plain(NodeLowering& n) {
  reduce_with<N>(n, AxesInputSince, nullptr, nullptr);
}
template <int AxesInputSince>
void reduce_l1(NodeLowering& n) {
  reduce_with<SumNode>(n, AxesInputSince, abs_of, nullptr);
}
template <int AxesInputSince>
void reduce_l2(NodeLowering& n) {
  reduce_with<SumNode>(n, AxesInputSince, square_of, sqrt_of);
}
template <int AxesInputSince>
void reduce_sum_square(NodeLowering& n) {
  reduce_with<SumNode>(n, AxesInputSince, square_of, nullptr);
}
template <int AxesInputSince>
void reduce_log_sum(NodeLowering& n) {
  reduce_with<SumNode>(n, AxesInputSince, nullptr, log_of);
}

void reduce_mean(NodeLowering& n) {
  if (kept_for_run_time_axes(n, 18)) return;
  const Value& x = n.in(0);
  const Reduction r = reduction(n, 18);
  if (r.noop) return n.set_output(0, n.in(0));
  Tid t = reduce_node<MeanNode>(n, n.in_tensor(0), r);
  // MLX averages integers in float; ONNX keeps the input's type.
  if (!is_floating(x.dtype)) t = n.convert(t, x.dtype);
  n.set_output(0, t, x.dtype, r.dims);
}

template <class N>
void arg_reduce(NodeLowering& n) {
  const Value& x = n.in(0);
  const int axis = n.axis(n.attr_int("axis", 0), x.rank());
  const bool keepdims = n.attr_int("keepdims", 1) != 0;
  Tid t = n.in_tensor(0);
  const bool last = n.attr_int("select_last_index", 0) != 0;
  // The last extreme index is the first one of the reversed axis, counted from the end.
  if (last) t = slice_axis(n, t, axis, literal(-1), literal(INT32_MIN), -1);
  const Tid out = n.g.new_temp();
  n.g.emit(N{.x = t, .out = out, .axis = axis, .keepdims = keepdims});
  Tid idx = n.cast(out, DType::UInt32, DType::Int64);
  if (last) {
    const Tid last_index = scalar_of(n, n.g.sub(n.g.dim(x, axis), literal(1)), DType::Int64);
    idx = n.binary<SubtractNode>(last_index, idx);
  }
  Dims dims = x.dims;
  if (keepdims)
    dims[axis] = 1;
  else
    dims.erase(dims.begin() + axis);
  n.set_output(0, idx, DType::Int64, dims);
}

// Before opset 13 the softmax family flattens the input to 2-D at `axis` and works on rows.
struct SoftmaxLayout {
  Tid x;
  int axis;
  bool flattened;
  std::vector<IntOrVid> original_shape;
};

SoftmaxLayout softmax_layout(NodeLowering& n) {
  const Value& v = n.in(0);
  if (n.opset >= 13) return {n.in_tensor(0), n.axis(n.attr_int("axis", -1), v.rank()), false, {}};
  const int axis = n.axis(n.attr_int("axis", 1), v.rank());
  const std::vector<IntOrVid> shape = n.g.shape_of(v);
  const IntOrVid outer = n.g.product({shape.begin(), shape.begin() + axis});
  const IntOrVid inner = n.g.product({shape.begin() + axis, shape.end()});
  return {n.reshape(n.in_tensor(0), {outer, inner}), 1, true, shape};
}

void finish_softmax(NodeLowering& n, const SoftmaxLayout& l, Tid result, DType dtype) {
  const Tid out = l.flattened ? n.reshape(result, l.original_shape) : result;
  n.set_output(0, out, dtype, n.in(0).dims);
}

void softmax(NodeLowering& n) {
  const SoftmaxLayout l = softmax_layout(n);
  const Tid out = n.g.new_temp();
  n.g.emit(SoftmaxNode{.x = l.x, .out = out, .axis = l.axis, .precise = true});
  finish_softmax(n, l, out, n.in(0).dtype);
}

void log_softmax(NodeLowering& n) {
  const SoftmaxLayout l = softmax_layout(n);
  const Tid lse = n.g.new_temp();
  n.g.emit(LogSumExpNode{.x = l.x, .out = lse, .axes = {l.axis}, .keepdims = true});
  finish_softmax(n, l, n.binary<SubtractNode>(l.x, lse), n.in(0).dtype);
}

// 1 at the first maximum along the axis, 0 elsewhere.
void hardmax(NodeLowering& n) {
  const SoftmaxLayout l = softmax_layout(n);
  const DType t = n.in(0).dtype;
  const Tid arg = n.g.new_temp();
  n.g.emit(ArgmaxNode{.x = l.x, .out = arg, .axis = l.axis, .keepdims = true});
  const Tid positions = n.g.new_temp();
  Value shaped = Lowering::runtime(l.x, t, Dims(l.flattened ? 2 : n.in(0).rank(), kUnknownDim));
  n.g.emit(ARangeNode{.out = positions,
                      .start = literal(0),
                      .stop = n.g.dim(shaped, l.axis),
                      .step = literal(1),
                      .scalar_type = *scalar_type(DType::UInt32)});
  std::vector<IntOrVid> position_shape(shaped.rank(), literal(1));
  position_shape[l.axis] = literal(-1);
  const Tid hit = n.binary<EqualNode>(n.reshape(positions, position_shape), arg);
  finish_softmax(n, l, n.cast(hit, DType::Bool, t), t);
}

void cumsum(NodeLowering& n) {
  const Value& x = n.in(0);
  if (known_only_at_run_time(n, 1)) return keep_with_rank(n, x.dtype, x.rank());
  const auto axis_value = n.literal_ints_input(1, "axis");
  if (axis_value.size() != 1) n.fail("a scalar axis");
  const int axis = n.axis(axis_value[0], x.rank());
  const Tid out = n.g.new_temp();
  n.g.emit(CumsumNode{.x = n.in_tensor(0),
                      .out = out,
                      .axis = axis,
                      .reverse = n.attr_int("reverse", 0) != 0,
                      .inclusive = n.attr_int("exclusive", 0) == 0});
  n.set_output(0, out, x.dtype, x.dims);
}

void lp_normalization(NodeLowering& n) {
  const Value& v = n.in(0);
  const int axis = n.axis(n.attr_int("axis", -1), v.rank());
  const int64_t p = n.attr_int("p", 2);
  if (p != 1 && p != 2) n.fail("p of 1 or 2, found " + std::to_string(p));
  const Tid x = n.in_tensor(0);
  const Reduction r{{axis}, true, false, {}};
  const Tid norm = p == 1 ? reduce_node<SumNode>(n, n.unary<AbsNode>(x), r)
                          : n.unary<SqrtNode>(reduce_node<SumNode>(n, n.unary<SquareNode>(x), r));
  const Tid zero = n.scalar(0, v.dtype);
  const Tid normalized = where_op(n, n.binary<EqualNode>(norm, zero), zero, n.binary<DivideNode>(x, norm));
  n.set_output(0, normalized, v.dtype, v.dims);
}

// (x - mean) / (sqrt(E[x^2] - mean^2) + 1e-9) over `axes`, ONNX's function body.
void mean_variance_normalization(NodeLowering& n) {
  const Value& v = n.in(0);
  std::vector<int32_t> axes;
  for (int64_t a : n.attr("axes") ? n.attr_ints("axes") : std::vector<int64_t>{0, 2, 3}) axes.push_back(n.axis(a, v.rank()));
  const Reduction r{axes, true, false, {}};
  const Tid x = n.in_tensor(0);
  const Tid mean = reduce_node<MeanNode>(n, x, r);
  const Tid mean_of_squares = reduce_node<MeanNode>(n, n.unary<SquareNode>(x), r);
  const Tid variance = n.binary<SubtractNode>(mean_of_squares, n.unary<SquareNode>(mean));
  const Tid std_dev = n.binary<AddNode>(n.unary<SqrtNode>(variance), n.scalar(1e-9, v.dtype));
  n.set_output(0, n.binary<DivideNode>(n.binary<SubtractNode>(x, mean), std_dev), v.dtype, v.dims);
}

}  // namespace

void add_reduce_rules(std::vector<OpRule>& r) {
  auto add = [&](const char* op, LowerFn f, int since = 1) { r.push_back({"", op, since, f}); };
  add("ReduceSum", reduce_plain<SumNode, 13>);
  add("ReduceMean", reduce_mean);
  add("ReduceMax", reduce_plain<MaxNode, 18>);
  add("ReduceMin", reduce_plain<MinNode, 18>);
  add("ReduceProd", reduce_plain<ProdNode, 18>);
  add("ReduceLogSumExp", reduce_plain<LogSumExpNode, 18>);
  add("ReduceL1", reduce_l1<18>);
  add("ReduceL2", reduce_l2<18>);
  add("ReduceSumSquare", reduce_sum_square<18>);
  add("ReduceLogSum", reduce_log_sum<18>);
  add("ArgMax", arg_reduce<ArgmaxNode>);
  add("ArgMin", arg_reduce<ArgminNode>);
  add("Softmax", softmax);
  add("LogSoftmax", log_softmax);
  add("Hardmax", hardmax);
  add("CumSum", cumsum, 11);
  add("LpNormalization", lp_normalization);
  add("MeanVarianceNormalization", mean_variance_normalization, 9);
}

}  // namespace wgml::frontend::onnx
