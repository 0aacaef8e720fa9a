// Neural-network ONNX ops: MatMul and Gemm (Addmm), convolutions (channels-last mlx Conv nodes
// between transposes, weights re-laid out at load time), pooling (a strided window view reduced),
// and the normalizations.
#include <cmath>
#include <limits>

#include "core/elements.h"
#include "frontend/onnx/lowering.h"
#include "frontend/onnx/rule_helpers.h"

namespace wgml::frontend::onnx {
namespace {

using namespace ir;

// numpy matmul: 1-D operands gain a dim for the product and lose it after.
void mat_mul(NodeLowering& n) {
  const Value& a = n.in(0);
  const Value& b = n.in(1);
  if (a.rank() < 1 || b.rank() < 1) n.fail("operands of rank >= 1");
  Tid ta = n.in_tensor(0), tb = n.in_tensor(1);
  if (a.rank() == 1) ta = expand_dims(n, ta, 0);
  if (b.rank() == 1) tb = expand_dims(n, tb, 1);
  Tid out = matmul_op(n, ta, tb);
  const Dims a_batch(a.dims.begin(), a.dims.end() - std::min(a.rank(), 2));
  const Dims b_batch(b.dims.begin(), b.dims.end() - std::min(b.rank(), 2));
  Dims dims = broadcast_dims(a_batch, b_batch);
  if (a.rank() == 1 && b.rank() == 1) {
    out = squeeze_axes(n, out, {-2, -1});
  } else if (a.rank() == 1) {
    out = squeeze_axes(n, out, {-2});
    dims.push_back(b.dims.back());
  } else if (b.rank() == 1) {
    out = squeeze_axes(n, out, {-1});
    dims.push_back(a.dims[a.rank() - 2]);
  } else {
    dims.push_back(a.dims[a.rank() - 2]);
    dims.push_back(b.dims.back());
  }
  n.set_output(0, out, a.dtype, dims);
}

void gemm(NodeLowering& n) {
  const Value& a = n.in(0);
  const Value& b = n.in(1);
  if (a.rank() != 2 || b.rank() != 2) n.fail("2-D A and B");
  const bool trans_a = n.attr_int("transA", 0) != 0, trans_b = n.attr_int("transB", 0) != 0;
  const Tid ta = trans_a ? n.transpose(n.in_tensor(0), {1, 0}) : n.in_tensor(0);
  const Tid tb = trans_b ? n.transpose(n.in_tensor(1), {1, 0}) : n.in_tensor(1);
  const Tid out = n.g.new_temp();
  std::optional<Tid> bias;
  if (n.has_input(2)) bias = n.in_tensor(2);
  n.g.emit(AddmmNode{.mat1 = ta,
                     .mat2 = tb,
                     .out = out,
                     .bias = bias,
                     .alpha = n.attr_float("alpha", 1.0f),
                     .beta = n.attr_float("beta", 1.0f)});
  n.set_output(0, out, a.dtype, {a.dims[trans_a ? 1 : 0], b.dims[trans_b ? 0 : 1]});
}

// ---- convolution ----

std::vector<int> to_channels_last(int rank) {
  std::vector<int> perm{0};
  for (int d = 2; d < rank; ++d) perm.push_back(d);
  perm.push_back(1);
  return perm;
}

std::vector<int> to_channels_first(int rank) {
  std::vector<int> perm{0, rank - 1};
  for (int d = 1; d < rank - 1; ++d) perm.push_back(d);
  return perm;
}

struct Window {
  int spatial = 0;
  std::vector<int64_t> kernel, strides, dilations, begin, end;
};

std::vector<int64_t> attr_or(const NodeLowering& n, const char* name, size_t count, int64_t fallback) {
  std::vector<int64_t> v = n.attr_ints(name);
  if (v.empty()) v.assign(count, fallback);
  if (v.size() != count) n.fail(std::to_string(count) + " values in '" + name + "', found " + std::to_string(v.size()));
  return v;
}

// Kernel sizes, strides and dilations are positive and pads not negative; all fit in int32, so
// the window arithmetic cannot overflow.
void check_window(const NodeLowering& n, const Window& w) {
  auto in_range = [&](const std::vector<int64_t>& v, int64_t lo, const char* what) {
    for (int64_t e : v)
      if (e < lo || e > INT32_MAX)
        n.fail(std::string(what) + " in [" + std::to_string(lo) + ", 2^31), found " + std::to_string(e));
  };
  in_range(w.kernel, 1, "kernel sizes");
  in_range(w.strides, 1, "strides");
  in_range(w.dilations, 1, "dilations");
  in_range(w.begin, 0, "pads");
  in_range(w.end, 0, "pads");
}

// Kernel, strides, dilations and explicit begin/end pads, auto_pad resolved (SAME needs the input
// size unless the stride is 1).
Window window(NodeLowering& n, const Value& x, std::vector<int64_t> kernel) {
  Window w;
  w.spatial = static_cast<int>(kernel.size());
  w.kernel = std::move(kernel);
  w.strides = attr_or(n, "strides", w.spatial, 1);
  w.dilations = attr_or(n, "dilations", w.spatial, 1);
  const std::vector<int64_t> pads = attr_or(n, "pads", 2 * w.spatial, 0);
  w.begin.assign(pads.begin(), pads.begin() + w.spatial);
  w.end.assign(pads.begin() + w.spatial, pads.end());
  // Checked before SAME padding is derived from them, and again after.
  check_window(n, w);
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "VALID") {
    w.begin.assign(w.spatial, 0);
    w.end.assign(w.spatial, 0);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (int i = 0; i < w.spatial; ++i) {
      const int64_t in = x.dims[2 + i], extent = (w.kernel[i] - 1) * w.dilations[i] + 1;
      int64_t total = extent - 1;
      if (w.strides[i] != 1) {
        if (in < 0) n.unsupported("SAME padding with stride > 1 on a size known only at run time");
        const int64_t out = (in + w.strides[i] - 1) / w.strides[i];
        total = std::max<int64_t>(0, (out - 1) * w.strides[i] + extent - in);
      }
      const int64_t smaller = total / 2;
      w.begin[i] = auto_pad == "SAME_UPPER" ? smaller : total - smaller;
      w.end[i] = total - w.begin[i];
    }
  } else if (auto_pad != "NOTSET") {
    n.fail("auto_pad NOTSET, SAME_UPPER, SAME_LOWER or VALID, found " + auto_pad);
  }
  check_window(n, w);
  return w;
}

bool symmetric(const Window& w) { return w.begin == w.end; }

// Pads channels-last spatial dims by (begin, end) per axis with `value`.
Tid pad_spatial_channels_last(NodeLowering& n, Tid x, int rank, const std::vector<IntOrVid>& begin,
                              const std::vector<IntOrVid>& end, double value, int first_spatial) {
  std::vector<IntOrVid> widths(2 * rank, literal(0));
  for (size_t i = 0; i < begin.size(); ++i) {
    widths[2 * (first_spatial + i)] = begin[i];
    widths[2 * (first_spatial + i) + 1] = end[i];
  }
  const Tid out = n.g.new_temp();
  n.g.emit(PadNode{.x = x, .out = out, .pad_width = widths, .mode = "constant", .constant_value = static_cast<float>(value)});
  return out;
}

Dims dims_of_shape(const std::vector<IntOrVid>& shape) {
  Dims dims;
  for (const IntOrVid& d : shape) dims.push_back(d.is_vid ? kUnknownDim : d.literal);
  return dims;
}

std::vector<IntOrVid> literals(const std::vector<int64_t>& v) {
  std::vector<IntOrVid> out;
  for (int64_t e : v) out.push_back(literal(e));
  return out;
}

int32_t i32(const NodeLowering& n, int64_t v, const char* what) {
  if (v < INT32_MIN || v > INT32_MAX) n.unsupported(std::string(what) + " beyond int32");
  return static_cast<int32_t>(v);
}

Tid conv_node(NodeLowering& n, Tid x, Tid w, const Window& win, const std::vector<int64_t>& pad, int64_t groups);

// A grouped 3-D convolution (MLX's Conv3D takes one group): one convolution per group, on its
// slice of the input channels and of the filters (w is [M, k..., C/g]), concatenated.
Tid grouped_conv3d(NodeLowering& n, Tid x, Tid w, const Window& win, const std::vector<int64_t>& pad, int64_t groups,
                   int64_t in_channels, int64_t filters) {
  if (in_channels < 0 || in_channels % groups != 0 || filters % groups != 0)
    n.fail("input channels (known at load time) and filters divisible by group " + std::to_string(groups));
  std::vector<Tid> parts;
  for (int64_t g = 0; g < groups; ++g) {
    const Tid x_part = slice_axis(n, x, 4, literal(g * in_channels / groups), literal((g + 1) * in_channels / groups));
    const Tid w_part = slice_axis(n, w, 0, literal(g * filters / groups), literal((g + 1) * filters / groups));
    parts.push_back(conv_node(n, x_part, w_part, win, pad, 1));
  }
  return concat_op(n, parts, 4);
}

// Conv{1,2,3}D on a channels-last input with symmetric padding `pad`.
Tid conv_node(NodeLowering& n, Tid x, Tid w, const Window& win, const std::vector<int64_t>& pad, int64_t groups) {
  const Tid out = n.g.new_temp();
  const int32_t g = i32(n, groups, "group");
  auto s = [&](int i) { return i32(n, win.strides[i], "strides"); };
  auto p = [&](int i) { return i32(n, pad[i], "pads"); };
  auto d = [&](int i) { return i32(n, win.dilations[i], "dilations"); };
  switch (win.spatial) {
    case 1:
      n.g.emit(Conv1DNode{.x = x, .w = w, .out = out, .stride = s(0), .padding = p(0), .dilation = d(0), .groups = g});
      break;
    case 2:
      n.g.emit(Conv2DNode{.x = x,
                          .w = w,
                          .out = out,
                          .stride_h = s(0),
                          .stride_w = s(1),
                          .padding_h = p(0),
                          .padding_w = p(1),
                          .dilation_h = d(0),
                          .dilation_w = d(1),
                          .groups = g});
      break;
    case 3:
      n.g.emit(Conv3DNode{.x = x,
                          .w = w,
                          .out = out,
                          .stride_d = s(0),
                          .stride_h = s(1),
                          .stride_w = s(2),
                          .padding_d = p(0),
                          .padding_h = p(1),
                          .padding_w = p(2),
                          .dilation_d = d(0),
                          .dilation_h = d(1),
                          .dilation_w = d(2),
                          .groups = g});
      break;
    default:
      n.unsupported(std::to_string(win.spatial) + "-D convolution");
  }
  return out;
}

Tid conv_transpose_node(NodeLowering& n, Tid x, Tid w, const Window& win, const std::vector<int64_t>& pad,
                        const std::vector<int64_t>& output_padding, int64_t groups) {
  const Tid out = n.g.new_temp();
  const int32_t g = i32(n, groups, "group");
  auto s = [&](int i) { return i32(n, win.strides[i], "strides"); };
  auto p = [&](int i) { return i32(n, pad[i], "pads"); };
  auto d = [&](int i) { return i32(n, win.dilations[i], "dilations"); };
  auto o = [&](int i) { return i32(n, output_padding[i], "output_padding"); };
  switch (win.spatial) {
    case 1:
      n.g.emit(ConvTranspose1DNode{
          .x = x, .w = w, .out = out, .stride = s(0), .padding = p(0), .dilation = d(0), .output_padding = o(0), .groups = g});
      break;
    case 2:
      n.g.emit(ConvTranspose2DNode{.x = x,
                                   .w = w,
                                   .out = out,
                                   .stride_h = s(0),
                                   .stride_w = s(1),
                                   .padding_h = p(0),
                                   .padding_w = p(1),
                                   .dilation_h = d(0),
                                   .dilation_w = d(1),
                                   .output_padding_h = o(0),
                                   .output_padding_w = o(1),
                                   .groups = g});
      break;
    case 3:
      n.g.emit(ConvTranspose3DNode{.x = x,
                                   .w = w,
                                   .out = out,
                                   .stride_d = s(0),
                                   .stride_h = s(1),
                                   .stride_w = s(2),
                                   .padding_d = p(0),
                                   .padding_h = p(1),
                                   .padding_w = p(2),
                                   .dilation_d = d(0),
                                   .dilation_h = d(1),
                                   .dilation_w = d(2),
                                   .output_padding_d = o(0),
                                   .output_padding_h = o(1),
                                   .output_padding_w = o(2),
                                   .groups = g});
      break;
    default:
      n.unsupported(std::to_string(win.spatial) + "-D transposed convolution");
  }
  return out;
}

// The weight as the mlx node wants it: folded at load time for constants.
Tid laid_out_weight(NodeLowering& n, const Value& w, const std::vector<int64_t>& grouped_shape, const std::vector<int>& perm,
                    const std::vector<int64_t>& final_shape) {
  if (w.constant) {
    const Tensor grouped = w.constant->reshaped(Shape(grouped_shape.begin(), grouped_shape.end()));
    const Tensor laid = permute_constant(grouped, perm).reshaped(Shape(final_shape.begin(), final_shape.end()));
    return n.g.add_constant(laid, "weight:mlx_layout");
  }
  const Tid grouped = n.reshape(n.g.tensor(w), literals(grouped_shape));
  return n.reshape(n.transpose(grouped, perm), literals(final_shape));
}

std::vector<int64_t> weight_kernel(NodeLowering& n, const Value& w) {
  if (w.rank() < 3 || !w.dims_known()) n.unsupported("a weight whose shape is known only at run time");
  return {w.dims.begin() + 2, w.dims.end()};
}

int64_t conv_out_dim(int64_t in, const Window& w, int i) {
  if (in < 0) return kUnknownDim;
  return (in + w.begin[i] + w.end[i] - (w.kernel[i] - 1) * w.dilations[i] - 1) / w.strides[i] + 1;
}

}  // namespace

Value convolution(NodeLowering& n, const Value& x, const Value& wv, std::optional<Tid> bias) {
  const Window win = window(n, x, weight_kernel(n, wv));
  const int rank = x.rank();
  if (rank != win.spatial + 2) n.fail("an input of rank " + std::to_string(win.spatial + 2));
  const int64_t groups = n.attr_int("group", 1);
  if (groups < 1 || groups > INT32_MAX) n.fail("a group count in [1, 2^31), found " + std::to_string(groups));
  // ONNX [M, C/g, k...] -> mlx [M, k..., C/g].
  std::vector<int64_t> final_shape{wv.dims[0]};
  final_shape.insert(final_shape.end(), win.kernel.begin(), win.kernel.end());
  final_shape.push_back(wv.dims[1]);
  const Tid w = laid_out_weight(n, wv, wv.dims, to_channels_last(rank), final_shape);
  Tid t = n.transpose(n.g.tensor(x), to_channels_last(rank));
  std::vector<int64_t> pad = win.begin;
  if (!symmetric(win)) {
    t = pad_spatial_channels_last(n, t, rank, literals(win.begin), literals(win.end), 0, 1);
    pad.assign(win.spatial, 0);
  }
  t = win.spatial == 3 && groups > 1 ? grouped_conv3d(n, t, w, win, pad, groups, x.dims[1], wv.dims[0])
                                     : conv_node(n, t, w, win, pad, groups);
  if (bias) t = n.binary<AddNode>(t, *bias);  // [C_out] broadcasts over the channels-last result
  Dims dims{x.dims[0], wv.dims[0]};
  for (int i = 0; i < win.spatial; ++i) dims.push_back(conv_out_dim(x.dims[2 + i], win, i));
  return Lowering::runtime(n.transpose(t, to_channels_first(rank)), x.dtype, dims);
}

namespace {

void conv(NodeLowering& n) {
  std::optional<Tid> bias;
  if (n.has_input(2)) bias = n.in_tensor(2);
  n.set_output(0, convolution(n, n.in(0), n.in(1), bias));
}

void conv_transpose(NodeLowering& n) {
  const Value& x = n.in(0);
  const Value& wv = n.in(1);
  const int rank = x.rank();
  const std::vector<int64_t> kernel = weight_kernel(n, wv);
  const int spatial = static_cast<int>(kernel.size());
  if (rank != spatial + 2) n.fail("an input of rank " + std::to_string(spatial + 2));
  const int64_t groups = n.attr_int("group", 1);
  if (groups < 1 || groups > INT32_MAX) n.fail("a group count in [1, 2^31), found " + std::to_string(groups));
  Window win;
  win.spatial = spatial;
  win.kernel = kernel;
  win.strides = attr_or(n, "strides", spatial, 1);
  win.dilations = attr_or(n, "dilations", spatial, 1);
  std::vector<int64_t> output_padding = attr_or(n, "output_padding", spatial, 0);
  const std::vector<int64_t> pads = attr_or(n, "pads", 2 * spatial, 0);
  win.begin.assign(pads.begin(), pads.begin() + spatial);
  win.end.assign(pads.begin() + spatial, pads.end());
  check_window(n, win);
  for (int64_t p : output_padding)
    if (p < 0 || p > INT32_MAX) n.fail("output_padding in [0, 2^31)");
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  const std::vector<int64_t> output_shape = n.attr_ints("output_shape");
  // With output_shape or SAME padding, the total padding follows from the output size.
  if (!output_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (int i = 0; i < spatial; ++i) {
      const int64_t in = x.dims[2 + i];
      if (in < 0) n.unsupported("output_shape or SAME padding on a size known only at run time");
      const int64_t target = output_shape.empty() ? in * win.strides[i] : output_shape[output_shape.size() - spatial + i];
      const int64_t full = win.strides[i] * (in - 1) + output_padding[i] + (kernel[i] - 1) * win.dilations[i] + 1;
      const int64_t total = full - target;
      if (total < 0) {
        output_padding[i] -= total;  // the requested size is larger: extend at the end
        win.begin[i] = win.end[i] = 0;
        continue;
      }
      const bool upper = auto_pad != "SAME_LOWER";
      win.begin[i] = upper ? total / 2 : total - total / 2;
      win.end[i] = total - win.begin[i];
    }
  } else if (auto_pad == "VALID") {
    win.begin.assign(spatial, 0);
    win.end.assign(spatial, 0);
  }
  // ONNX [C, M/g, k...] -> mlx [M, k..., C/g], through [g, C/g, M/g, k...].
  const int64_t c = wv.dims[0], m_per_group = wv.dims[1];
  std::vector<int64_t> grouped{groups, c / groups, m_per_group};
  grouped.insert(grouped.end(), kernel.begin(), kernel.end());
  std::vector<int> perm{0, 2};
  for (int i = 0; i < spatial; ++i) perm.push_back(3 + i);
  perm.push_back(1);
  std::vector<int64_t> final_shape{groups * m_per_group};
  final_shape.insert(final_shape.end(), kernel.begin(), kernel.end());
  final_shape.push_back(c / groups);
  const Tid w = laid_out_weight(n, wv, grouped, perm, final_shape);
  Tid t = n.transpose(n.in_tensor(0), to_channels_last(rank));
  // Symmetric padding goes to the node; asymmetric padding crops the unpadded result.
  std::vector<int64_t> pad = win.begin;
  if (!symmetric(win)) pad.assign(spatial, 0);
  t = conv_transpose_node(n, t, w, win, pad, output_padding, groups);
  Dims dims{x.dims[0], groups * m_per_group};
  for (int i = 0; i < spatial; ++i) {
    const int64_t in = x.dims[2 + i];
    const int64_t full =
        in < 0 ? kUnknownDim : win.strides[i] * (in - 1) + output_padding[i] + (kernel[i] - 1) * win.dilations[i] + 1;
    if (!symmetric(win))
      t = slice_axis(n, t, 1 + i, literal(win.begin[i]), full < 0 ? literal(-win.end[i]) : literal(full - win.end[i]));
    dims.push_back(full < 0 ? kUnknownDim : full - win.begin[i] - win.end[i]);
  }
  if (n.has_input(2)) t = n.binary<AddNode>(t, n.in_tensor(2));
  n.set_output(0, n.transpose(t, to_channels_first(rank)), x.dtype, dims);
}

// ---- pooling: a strided view of windows, reduced ----

struct PoolPlan {
  std::vector<IntOrVid> out;        // windows per spatial axis
  std::vector<IntOrVid> extra_end;  // padding beyond the explicit pads that ceil_mode needs
};

PoolPlan pool_plan(NodeLowering& n, const Value& x, const Window& w, bool ceil_mode) {
  PoolPlan plan;
  for (int i = 0; i < w.spatial; ++i) {
    const IntOrVid in = n.g.dim(x, 2 + i);
    const int64_t extent = (w.kernel[i] - 1) * w.dilations[i] + 1;
    const IntOrVid padded = n.g.add(in, literal(w.begin[i] + w.end[i]));
    if (!ceil_mode) {
      plan.out.push_back(n.g.add(n.g.floor_div(n.g.sub(padded, literal(extent)), literal(w.strides[i])), literal(1)));
      plan.extra_end.push_back(literal(0));
      continue;
    }
    if (in.is_vid) n.unsupported("ceil_mode on a size known only at run time");
    const int64_t p = padded.literal;
    int64_t out = (p - extent + w.strides[i] - 1) / w.strides[i] + 1;
    if ((out - 1) * w.strides[i] >= in.literal + w.begin[i]) --out;  // no window may start in the end pad
    plan.out.push_back(literal(out));
    plan.extra_end.push_back(literal(std::max<int64_t>(0, (out - 1) * w.strides[i] + extent - p)));
  }
  return plan;
}

// Pads x (NC...), then views it as [N, C, out..., kernel...] windows.
Tid windows(NodeLowering& n, Tid x, const Value& xv, const Window& w, const PoolPlan& plan, double pad_value) {
  const int rank = xv.rank();
  std::vector<IntOrVid> begin, end;
  for (int i = 0; i < w.spatial; ++i) {
    begin.push_back(literal(w.begin[i]));
    end.push_back(n.g.add(literal(w.end[i]), plan.extra_end[i]));
  }
  std::vector<IntOrVid> widths(2 * rank, literal(0));
  bool padded = false;
  for (int i = 0; i < w.spatial; ++i) {
    widths[2 * (2 + i)] = begin[i];
    widths[2 * (2 + i) + 1] = end[i];
    padded = padded || begin[i].is_vid || begin[i].literal != 0 || end[i].is_vid || end[i].literal != 0;
  }
  Tid t = x;
  if (padded) {
    t = n.g.new_temp();
    n.g.emit(PadNode{.x = x, .out = t, .pad_width = widths, .mode = "constant", .constant_value = static_cast<float>(pad_value)});
  }
  // Row-major strides of the padded tensor, in elements.
  std::vector<IntOrVid> dims = n.g.shape_of(xv);
  for (int i = 0; i < w.spatial; ++i) dims[2 + i] = n.g.add(n.g.add(dims[2 + i], begin[i]), end[i]);
  std::vector<IntOrVid> strides(rank);
  IntOrVid acc = literal(1);
  for (int d = rank - 1; d >= 0; --d) {
    strides[d] = acc;
    acc = n.g.mul(acc, dims[d]);
  }
  std::vector<IntOrVid> view_shape{dims[0], dims[1]}, view_strides{strides[0], strides[1]};
  for (int i = 0; i < w.spatial; ++i) {
    view_shape.push_back(plan.out[i]);
    view_strides.push_back(n.g.mul(strides[2 + i], literal(w.strides[i])));
  }
  for (int i = 0; i < w.spatial; ++i) {
    view_shape.push_back(literal(w.kernel[i]));
    view_strides.push_back(n.g.mul(strides[2 + i], literal(w.dilations[i])));
  }
  const Tid out = n.g.new_temp();
  n.g.emit(AsStridedNode{.x = t, .out = out, .shape = view_shape, .strides = view_strides, .offset = 0});
  return out;
}

std::vector<int32_t> window_axes(const Window& w) {
  std::vector<int32_t> axes;
  for (int i = 0; i < w.spatial; ++i) axes.push_back(2 + w.spatial + i);
  return axes;
}

Dims pooled_dims(const Value& x, const PoolPlan& plan) {
  Dims dims{x.dims[0], x.dims[1]};
  for (const IntOrVid& o : plan.out) dims.push_back(o.is_vid ? kUnknownDim : o.literal);
  return dims;
}

Window pool_window(NodeLowering& n, const Value& x) {
  const std::vector<int64_t> kernel = n.attr_ints("kernel_shape");
  if (kernel.empty()) n.fail("attribute 'kernel_shape'");
  if (x.rank() != static_cast<int>(kernel.size()) + 2) n.fail("an input of rank " + std::to_string(kernel.size() + 2));
  return window(n, x, kernel);
}

double lowest(DType t) {
  if (is_floating(t)) return -std::numeric_limits<double>::infinity();
  switch (t) {
    case DType::Int8:
      return INT8_MIN;
    case DType::Int16:
      return INT16_MIN;
    case DType::Int32:
      return INT32_MIN;
    case DType::Int64:
      return static_cast<double>(INT64_MIN);
    default:
      return 0;
  }
}

void max_pool(NodeLowering& n) {
  const Value& x = n.in(0);
  if (n.wants_output(1)) return keep(n, {x.dtype, DType::Int64}, {Dims(x.rank(), kUnknownDim), Dims(x.rank(), kUnknownDim)});
  const Window w = pool_window(n, x);
  const PoolPlan plan = pool_plan(n, x, w, n.attr_int("ceil_mode", 0) != 0);
  const Tid view = windows(n, n.in_tensor(0), x, w, plan, lowest(x.dtype));
  const Tid out = n.g.new_temp();
  n.g.emit(MaxNode{.x = view, .out = out, .axes = window_axes(w), .keepdims = false});
  n.set_output(0, out, x.dtype, pooled_dims(x, plan));
}

bool has_padding(const Window& w, const PoolPlan& plan) {
  for (int i = 0; i < w.spatial; ++i)
    if (w.begin[i] != 0 || w.end[i] != 0 || plan.extra_end[i].is_vid || plan.extra_end[i].literal != 0) return true;
  return false;
}

// The mean of each window; with padding, its sum over how many of its elements count (pads count
// with count_include_pad, the overhang ceil_mode adds never does).
void average_pool(NodeLowering& n) {
  const Value& x = n.in(0);
  const Window w = pool_window(n, x);
  const bool include_pad = n.attr_int("count_include_pad", 0) != 0;
  const PoolPlan plan = pool_plan(n, x, w, n.attr_int("ceil_mode", 0) != 0);
  const Tid view = windows(n, n.in_tensor(0), x, w, plan, 0);
  const std::vector<int32_t> axes = window_axes(w);
  const Tid out = n.g.new_temp();
  if (!has_padding(w, plan)) {
    n.g.emit(MeanNode{.x = view, .out = out, .axes = axes, .keepdims = false});
    return n.set_output(0, out, x.dtype, pooled_dims(x, plan));
  }
  n.g.emit(SumNode{.x = view, .out = out, .axes = axes, .keepdims = false});
  // The mask of counted elements: ones over the input (or input and pads), zero beyond.
  std::vector<IntOrVid> mask_shape{literal(1), literal(1)};
  Window mask_window = w;
  for (int i = 0; i < w.spatial; ++i) {
    IntOrVid d = n.g.dim(x, 2 + i);
    if (include_pad) {
      d = n.g.add(d, literal(w.begin[i] + w.end[i]));
      mask_window.begin[i] = mask_window.end[i] = 0;
    }
    mask_shape.push_back(d);
  }
  const Tid ones = full(n, mask_shape, 1, x.dtype);
  const Value ones_value = Lowering::runtime(ones, x.dtype, dims_of_shape(mask_shape));
  const Tid counted = windows(n, ones, ones_value, mask_window, plan, 0);
  const Tid count = n.g.new_temp();
  n.g.emit(SumNode{.x = counted, .out = count, .axes = axes, .keepdims = false});
  n.set_output(0, n.binary<DivideNode>(out, count), x.dtype, pooled_dims(x, plan));
}

void lp_pool(NodeLowering& n) {
  const Value& x = n.in(0);
  const Window w = pool_window(n, x);
  const PoolPlan plan = pool_plan(n, x, w, n.attr_int("ceil_mode", 0) != 0);
  const double p = static_cast<double>(n.attr_int("p", 2));
  const Tid view = windows(n, n.in_tensor(0), x, w, plan, 0);
  const Tid powered = n.binary<PowerNode>(n.unary<AbsNode>(view), n.scalar(p, x.dtype));
  const Tid sum = n.g.new_temp();
  n.g.emit(SumNode{.x = powered, .out = sum, .axes = window_axes(w), .keepdims = false});
  n.set_output(0, n.binary<PowerNode>(sum, n.scalar(1.0 / p, x.dtype)), x.dtype, pooled_dims(x, plan));
}

std::vector<int32_t> spatial_axes(const Value& x) {
  std::vector<int32_t> axes;
  for (int d = 2; d < x.rank(); ++d) axes.push_back(d);
  return axes;
}

Dims global_dims(const Value& x) {
  Dims dims{x.dims[0], x.dims[1]};
  dims.resize(x.rank(), 1);
  return dims;
}

template <class N>
void global_pool(NodeLowering& n) {
  const Value& x = n.in(0);
  const Tid out = n.g.new_temp();
  n.g.emit(N{.x = n.in_tensor(0), .out = out, .axes = spatial_axes(x), .keepdims = true});
  n.set_output(0, out, x.dtype, global_dims(x));
}

void global_lp_pool(NodeLowering& n) {
  const Value& x = n.in(0);
  const double p = static_cast<double>(n.attr_int("p", 2));
  const Tid powered = n.binary<PowerNode>(n.unary<AbsNode>(n.in_tensor(0)), n.scalar(p, x.dtype));
  const Tid sum = n.g.new_temp();
  n.g.emit(SumNode{.x = powered, .out = sum, .axes = spatial_axes(x), .keepdims = true});
  n.set_output(0, n.binary<PowerNode>(sum, n.scalar(1.0 / p, x.dtype)), x.dtype, global_dims(x));
}

// ---- normalization ----

// A per-channel vector [C] shaped to broadcast over [N, C, spatial...].
Tid per_channel(NodeLowering& n, Tid v, int rank) {
  std::vector<IntOrVid> shape{literal(-1)};
  shape.resize(rank - 1, literal(1));
  return n.reshape(v, shape);
}

// (x - mean) / sqrt(var + eps) * scale + bias, all but x per channel.
Tid normalize(NodeLowering& n, Tid x, Tid mean, Tid var, Tid scale, Tid bias, DType t, double eps) {
  const Tid inv = n.unary<RsqrtNode>(n.binary<AddNode>(var, n.scalar(eps, t)));
  const Tid centered = n.binary<SubtractNode>(x, mean);
  return n.binary<AddNode>(n.binary<MultiplyNode>(n.binary<MultiplyNode>(centered, inv), scale), bias);
}

void batch_normalization(NodeLowering& n) {
  const Value& x = n.in(0);
  const int rank = x.rank();
  const double eps = n.attr_float("epsilon", 1e-5f);
  const Tid scale = per_channel(n, n.in_tensor(1), rank), bias = per_channel(n, n.in_tensor(2), rank);
  const bool training = n.opset >= 14 && n.attr_int("training_mode", 0) != 0;
  if (!training) {
    const Tid mean = per_channel(n, n.in_tensor(3), rank), var = per_channel(n, n.in_tensor(4), rank);
    return n.set_output(0, normalize(n, n.in_tensor(0), mean, var, scale, bias, x.dtype, eps), x.dtype, x.dims);
  }
  // Training mode: batch statistics normalize; running statistics move by momentum.
  std::vector<int32_t> axes{0};
  for (int d = 2; d < rank; ++d) axes.push_back(d);
  const Tid xt = n.in_tensor(0);
  const Tid mean = n.g.new_temp(), var = n.g.new_temp();
  n.g.emit(MeanNode{.x = xt, .out = mean, .axes = axes, .keepdims = true});
  n.g.emit(VarNode{.x = xt, .out = var, .axes = axes, .keepdims = true, .ddof = 0});
  n.set_output(0, normalize(n, xt, mean, var, scale, bias, x.dtype, eps), x.dtype, x.dims);
  const double momentum = n.attr_float("momentum", 0.9f);
  auto running = [&](size_t input, Tid batch) {
    const Tid flat = squeeze_axes(n, batch, {axes.begin(), axes.end()});
    const Tid old_part = n.binary<MultiplyNode>(n.in_tensor(input), n.scalar(momentum, x.dtype));
    return n.binary<AddNode>(old_part, n.binary<MultiplyNode>(flat, n.scalar(1 - momentum, x.dtype)));
  };
  if (n.wants_output(1)) n.set_output(1, running(3, mean), x.dtype, {x.dims[1]});
  if (n.wants_output(2)) n.set_output(2, running(4, var), x.dtype, {x.dims[1]});
}

// Before opset 7: `spatial` (statistics per channel when 1) and `is_test` (inference when 1);
// inference with per-channel statistics is the opset 7 op.
void legacy_batch_normalization(NodeLowering& n) {
  if (n.attr_int("spatial", 1) != 1) n.unsupported("spatial = 0 (statistics per element)");
  if (n.attr_int("is_test", 0) == 0) n.unsupported("is_test = 0 (batch statistics)");
  for (size_t i = 1; i < n.num_outputs(); ++i)
    if (n.wants_output(i)) n.unsupported("the training statistics outputs");
  batch_normalization(n);
}

void instance_normalization(NodeLowering& n) {
  const Value& x = n.in(0);
  const Tid xt = n.in_tensor(0);
  const std::vector<int32_t> axes = spatial_axes(x);
  const Tid mean = n.g.new_temp(), var = n.g.new_temp();
  n.g.emit(MeanNode{.x = xt, .out = mean, .axes = axes, .keepdims = true});
  n.g.emit(VarNode{.x = xt, .out = var, .axes = axes, .keepdims = true, .ddof = 0});
  const Tid scale = per_channel(n, n.in_tensor(1), x.rank()), bias = per_channel(n, n.in_tensor(2), x.rank());
  n.set_output(0, normalize(n, xt, mean, var, scale, bias, x.dtype, n.attr_float("epsilon", 1e-5f)), x.dtype, x.dims);
}

// LayerNormalization and RMSNormalization normalize over axes [axis, rank): the mlx nodes work on
// the last axis, so those axes are flattened into one and restored after.
template <bool Rms>
void last_axes_normalization(NodeLowering& n) {
  const Value& x = n.in(0);
  const int rank = x.rank();
  const int axis = n.axis(n.attr_int("axis", -1), rank);
  const double eps = n.attr_float("epsilon", 1e-5f);
  const std::vector<IntOrVid> shape = n.g.shape_of(x);
  std::vector<IntOrVid> flat(shape.begin(), shape.begin() + axis);
  flat.push_back(n.g.product({shape.begin() + axis, shape.end()}));
  const Tid xt = axis == rank - 1 ? n.in_tensor(0) : n.reshape(n.in_tensor(0), flat);
  const Tid normalized = n.g.new_temp();
  if (Rms)
    n.g.emit(RMSNormNode{.x = xt, .out = normalized, .eps = static_cast<float>(eps)});
  else
    n.g.emit(LayerNormNode{.x = xt, .out = normalized, .eps = static_cast<float>(eps)});
  Tid y = axis == rank - 1 ? normalized : n.reshape(normalized, shape);
  y = n.binary<MultiplyNode>(y, n.in_tensor(1));
  if (!Rms && n.has_input(2)) y = n.binary<AddNode>(y, n.in_tensor(2));
  n.set_output(0, y, x.dtype, x.dims);
  if (Rms) return;
  // Optional Mean and InvStdDev outputs: statistics over the normalized axes, dims kept.
  std::vector<int32_t> axes;
  for (int d = axis; d < rank; ++d) axes.push_back(d);
  Dims stat_dims(x.dims.begin(), x.dims.begin() + axis);
  stat_dims.resize(rank, 1);
  const Tid x_in = n.in_tensor(0);
  if (n.wants_output(1)) {
    const Tid mean = n.g.new_temp();
    n.g.emit(MeanNode{.x = x_in, .out = mean, .axes = axes, .keepdims = true});
    n.set_output(1, mean, x.dtype, stat_dims);
  }
  if (n.wants_output(2)) {
    const Tid var = n.g.new_temp();
    n.g.emit(VarNode{.x = x_in, .out = var, .axes = axes, .keepdims = true, .ddof = 0});
    n.set_output(2, n.unary<RsqrtNode>(n.binary<AddNode>(var, n.scalar(eps, x.dtype))), x.dtype, stat_dims);
  }
}

// Channels in num_groups groups, each normalized over its channels and spatial positions.
void group_normalization(NodeLowering& n) {
  const Value& x = n.in(0);
  const int64_t groups = n.attr_int("num_groups", 0);
  if (groups <= 0) n.fail("a positive num_groups");
  const std::vector<IntOrVid> shape = n.g.shape_of(x);
  const Tid grouped = n.reshape(n.in_tensor(0), {shape[0], literal(groups), literal(-1)});
  const Tid normalized = n.g.new_temp();
  n.g.emit(LayerNormNode{.x = grouped, .out = normalized, .eps = n.attr_float("epsilon", 1e-5f)});
  Tid y;
  if (n.opset < 21) {  // per-group scale and bias
    const Tid scale = n.reshape(n.in_tensor(1), {literal(groups), literal(1)});
    const Tid bias = n.reshape(n.in_tensor(2), {literal(groups), literal(1)});
    y = n.reshape(n.binary<AddNode>(n.binary<MultiplyNode>(normalized, scale), bias), shape);
  } else {
    y = n.reshape(normalized, shape);
    const Tid scale = per_channel(n, n.in_tensor(1), x.rank()), bias = per_channel(n, n.in_tensor(2), x.rank());
    y = n.binary<AddNode>(n.binary<MultiplyNode>(y, scale), bias);
  }
  n.set_output(0, y, x.dtype, x.dims);
}

// x / (bias + alpha / size * sum of squares over a window of channels) ^ beta.
void lrn(NodeLowering& n) {
  const Value& x = n.in(0);
  const int64_t size = n.attr_int("size", 0);
  if (size <= 0) n.fail("a positive size");
  const double alpha = n.attr_float("alpha", 1e-4f), beta = n.attr_float("beta", 0.75f), bias = n.attr_float("bias", 1.0f);
  const Tid xt = n.in_tensor(0);
  const int rank = x.rank();
  std::vector<IntOrVid> widths(2 * rank, literal(0));
  widths[2] = literal((size - 1) / 2);
  widths[3] = literal(size - 1 - (size - 1) / 2);
  const Tid padded = n.g.new_temp();
  n.g.emit(PadNode{.x = n.unary<SquareNode>(xt), .out = padded, .pad_width = widths, .mode = "constant", .constant_value = 0});
  const IntOrVid channels = n.g.dim(x, 1);
  Tid sum;
  for (int64_t i = 0; i < size; ++i) {
    const Tid part = slice_axis(n, padded, 1, literal(i), n.g.add(channels, literal(i)));
    sum = i == 0 ? part : n.binary<AddNode>(sum, part);
  }
  const Tid scaled = n.binary<AddNode>(n.binary<MultiplyNode>(sum, n.scalar(alpha / static_cast<double>(size), x.dtype)),
                                       n.scalar(bias, x.dtype));
  n.set_output(0, n.binary<DivideNode>(xt, n.binary<PowerNode>(scaled, n.scalar(beta, x.dtype))), x.dtype, x.dims);
}

}  // namespace

void add_nn_rules(std::vector<OpRule>& r) {
  auto add = [&](const char* op, LowerFn f, int since = 1) { r.push_back({"", op, since, f}); };
  add("MatMul", mat_mul);
  // Gemm before 7 took C always and broadcast it only with broadcast=1: numpy broadcasting covers it.
  add("Gemm", gemm);
  add("Conv", conv);
  add("ConvTranspose", conv_transpose);
  // The pools of older opsets lack attributes whose defaults give their behaviour.
  add("MaxPool", max_pool);
  add("AveragePool", average_pool);
  add("LpPool", lp_pool, 11);
  add("GlobalAveragePool", global_pool<MeanNode>);
  add("GlobalMaxPool", global_pool<MaxNode>);
  add("GlobalLpPool", global_lp_pool, 2);
  add("BatchNormalization", legacy_batch_normalization);
  add("BatchNormalization", batch_normalization, 7);
  add("InstanceNormalization", instance_normalization, 6);
  // Before opset 17, ONNX Runtime's contrib op of the same definition (registered in the ai.onnx
  // domain from opset 1): what its transformer optimizer fuses into models of older opsets.
  add("LayerNormalization", last_axes_normalization<false>);
  add("LayerNormalization", last_axes_normalization<false>, 17);
  add("RMSNormalization", last_axes_normalization<true>, 23);
  // ONNX Runtime's contrib op of the same definition, which it registers in the ai.onnx domain.
  add("SimplifiedLayerNormalization", last_axes_normalization<true>);
  add("GroupNormalization", group_normalization, 18);
  add("LRN", lrn);
}

}  // namespace wgml::frontend::onnx
