// Resize (opsets 10-19) and Upsample: separable interpolation, one axis at a time, as ONNX
// defines it: each output coordinate maps to a source coordinate (coordinate_transformation_mode),
// whose neighbours are weighted by the mode's kernel (nearest, linear, cubic; antialiased when
// downsampling if asked), indices clamped to the edge.
#include <algorithm>
#include <cmath>

#include "backend/cpu/onnx/onnx_op.h"
#include "core/elements.h"
#include "core/layout.h"

namespace wgml::backend::cpu::onnx_ops {
namespace {

using runtime::fail;

struct ResizeAttrs {
  std::string mode = "nearest";
  std::string coordinates = "half_pixel";
  std::string nearest = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
  double extrapolation = 0;
};

// An output size computed from scales in double: NaN, negative or past 2^40 (where the cast to
// int64 would be undefined) is the model's error.
int64_t output_dim(double size) {
  if (!(size >= 0 && size <= 0x1p40)) fail("Resize: output size " + std::to_string(size) + " is not a valid dimension");
  return static_cast<int64_t>(size);
}

struct Tap {
  int64_t index;
  double weight;
};

// Source coordinate of output index y along an axis; `outside` is set for tf_crop_and_resize
// positions outside the input.
double source_coordinate(const ResizeAttrs& a, double y, double scale, int64_t in, int64_t out, double roi_start, double roi_end,
                         bool& outside) {
  const double out_width = scale * static_cast<double>(in);
  outside = false;
  const std::string& m = a.coordinates;
  if (m == "align_corners") return out_width == 1 ? 0 : y * static_cast<double>(in - 1) / (out_width - 1);
  if (m == "asymmetric") return y / scale;
  if (m == "pytorch_half_pixel") return out_width == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
  if (m == "half_pixel") return (y + 0.5) / scale - 0.5;
  if (m == "half_pixel_symmetric") {
    const double adjustment = static_cast<double>(out) / out_width;
    const double center = static_cast<double>(in) / 2;
    return center * (1 - adjustment) + (y + 0.5) / scale - 0.5;
  }
  if (m == "tf_crop_and_resize") {
    double x = out_width == 1 ? (roi_end - roi_start) * static_cast<double>(in - 1) / 2
                              : y * (roi_end - roi_start) * static_cast<double>(in - 1) / (out_width - 1);
    x += roi_start * static_cast<double>(in - 1);
    outside = x < 0 || x > static_cast<double>(in - 1);
    return x;
  }
  fail("Resize: unknown coordinate_transformation_mode '" + m + "'");
}

int64_t nearest_index(double x, const std::string& mode) {
  const double f = std::floor(x);
  const double frac = x - f;
  if (mode == "floor") return static_cast<int64_t>(f);
  if (mode == "ceil") return static_cast<int64_t>(std::ceil(x));
  if (mode == "round_prefer_ceil") return static_cast<int64_t>(frac >= 0.5 ? f + 1 : f);
  if (mode == "round_prefer_floor") return static_cast<int64_t>(frac > 0.5 ? f + 1 : f);
  fail("Resize: unknown nearest_mode '" + mode + "'");
}

double cubic_kernel(double t, double a) {
  t = std::fabs(t);
  if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

// The taps of one output position: the n inputs nearest x (ties to the smaller index), weighted
// by the kernel at their distance (scaled when antialiasing, then normalized).
std::vector<Tap> interpolation_taps(const ResizeAttrs& a, double x, double scale, int64_t in) {
  const bool linear = a.mode == "linear" || a.mode == "bilinear";
  const double s = a.antialias ? std::min(scale, 1.0) : 1.0;
  const int64_t reach = linear ? 1 : 2;
  const int64_t n = a.antialias ? 2 - 2 * static_cast<int64_t>(std::floor(-static_cast<double>(reach) / s) + 1) : 2 * reach;
  const double f = std::floor(x);
  const int64_t start = static_cast<int64_t>(f) - n / 2 + (x == f ? 0 : 1);
  std::vector<Tap> taps;
  double total = 0;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t i = start + k;
    const double t = (static_cast<double>(i) - x) * s;
    double w = linear ? std::max(0.0, 1 - std::fabs(t)) : cubic_kernel(t, a.cubic_a);
    if (a.exclude_outside && (i < 0 || i >= in)) w = 0;
    taps.push_back({std::clamp<int64_t>(i, 0, in - 1), w});
    total += w;
  }
  if ((a.antialias || a.exclude_outside) && total != 0)
    for (Tap& tap : taps) tap.weight /= total;
  return taps;
}

// Resizes `x` (as doubles, row-major with `shape`) along one axis to `out` positions.
WorkingDoubles resize_axis(const std::vector<double>& x, Shape& shape, int axis, int64_t out, double scale, const ResizeAttrs& a,
                           double roi_start, double roi_end) {
  const int64_t in = shape[axis];
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  Shape resized = shape;
  resized[axis] = out;
  WorkingDoubles working = working_doubles(resized);
  std::vector<double>& result = working.values;
  // An empty tensor has no positions to compute, however long the axis (no loop over it).
  for (int64_t o = 0; o < out && !result.empty(); ++o) {
    bool outside = false;
    const double src = source_coordinate(a, static_cast<double>(o), scale, in, out, roi_start, roi_end, outside);
    std::vector<Tap> taps;
    if (!outside) {
      if (a.mode == "nearest")
        taps = {{std::clamp<int64_t>(nearest_index(src, a.nearest), 0, in - 1), 1.0}};
      else
        taps = interpolation_taps(a, src, scale, in);
    }
    for (int64_t b = 0; b < outer; ++b)
      for (int64_t j = 0; j < inner; ++j) {
        double acc = outside ? a.extrapolation : 0;
        for (const Tap& t : taps) acc += t.weight * x[(b * in + t.index) * inner + j];
        result[(b * out + o) * inner + j] = acc;
      }
  }
  shape = std::move(resized);
  return working;
}

Tensor resize(const Tensor& x, const std::vector<double>& scales, const std::vector<int64_t>& sizes,
              const std::vector<double>& roi, const ResizeAttrs& a) {
  WorkingDoubles data{{}, doubles_of(x)};
  Shape shape = x.shape();
  const int r = x.rank();
  for (int axis = 0; axis < r; ++axis) {
    const double roi_start = roi.size() == 2 * static_cast<size_t>(r) ? roi[axis] : 0.0;
    const double roi_end = roi.size() == 2 * static_cast<size_t>(r) ? roi[axis + r] : 1.0;
    if (sizes[axis] == x.dim(axis) && scales[axis] == 1.0 && roi_start == 0.0 && roi_end == 1.0) continue;
    data = resize_axis(data.values, shape, axis, sizes[axis], scales[axis], a, roi_start, roi_end);
  }
  Tensor out(x.dtype(), shape);
  uint8_t* dst = out.mutable_data();
  const bool integral = !is_floating(x.dtype());
  for (int64_t i = 0; i < out.numel(); ++i) {
    double v = data.values[i];
    if (integral) {  // saturate to the type's range, as ONNX's reference does
      v = std::nearbyint(v);
      if (x.dtype() == DType::UInt8) v = std::clamp(v, 0.0, 255.0);
      if (x.dtype() == DType::Int8) v = std::clamp(v, -128.0, 127.0);
    }
    store_double(x.dtype(), dst, i, v);
  }
  return out;
}

// Scales and sizes over all axes from the inputs, honouring `axes` and keep_aspect_ratio_policy.
void resize_op(OpView& v) {
  const Tensor& x = v.required(0);
  const int r = x.rank();
  ResizeAttrs a;
  a.mode = v.attr_string("mode", "nearest");
  std::vector<double> roi, scales;
  std::vector<int64_t> sizes;
  if (v.op().op_type == "Upsample" || v.opset() < 11) {
    a.coordinates = "asymmetric";
    a.nearest = "floor";
    scales = v.op().op_type == "Upsample" && v.opset() < 9 ? v.attr_floats("scales") : doubles_of(v.required(1));
  } else {
    a.coordinates = v.attr_string("coordinate_transformation_mode", "half_pixel");
    a.nearest = v.attr_string("nearest_mode", "round_prefer_floor");
    a.cubic_a = v.attr_float("cubic_coeff_a", -0.75);
    a.exclude_outside = v.attr_int("exclude_outside", 0) != 0;
    a.antialias = v.attr_int("antialias", 0) != 0;
    a.extrapolation = v.attr_float("extrapolation_value", 0);
    if (const Tensor* t = v.input(1)) roi = doubles_of(*t);
    if (const Tensor* t = v.input(2)) scales = doubles_of(*t);
    if (const Tensor* t = v.input(3)) sizes = ints_of(*t);
  }
  std::vector<int64_t> axes = v.attr_ints("axes");
  if (axes.empty())
    for (int d = 0; d < r; ++d) axes.push_back(d);
  for (int64_t& axis : axes) axis = normalize_axis(static_cast<int>(axis), r);
  std::vector<double> all_scales(r, 1.0);
  std::vector<int64_t> all_sizes(x.shape());
  std::vector<double> all_roi;
  if (!roi.empty()) {
    if (roi.size() != 2 * axes.size()) fail("Resize: roi must have two values per resized axis");
    all_roi.assign(r, 0.0);
    all_roi.resize(2 * r, 1.0);
    for (size_t i = 0; i < axes.size(); ++i) {
      all_roi[axes[i]] = roi[i];
      all_roi[axes[i] + r] = roi[i + axes.size()];
    }
  }
  if (!sizes.empty()) {
    if (sizes.size() != axes.size()) fail("Resize: sizes must have one value per resized axis");
    const std::string policy = v.attr_string("keep_aspect_ratio_policy", "stretch");
    std::vector<double> ratios;
    for (size_t i = 0; i < axes.size(); ++i)
      ratios.push_back(static_cast<double>(sizes[i]) / static_cast<double>(x.dim(static_cast<int>(axes[i]))));
    for (size_t i = 0; i < axes.size(); ++i) {
      double s = ratios[i];
      if (policy == "not_larger") s = *std::min_element(ratios.begin(), ratios.end());
      if (policy == "not_smaller") s = *std::max_element(ratios.begin(), ratios.end());
      all_scales[axes[i]] = s;
      all_sizes[axes[i]] =
          policy == "stretch" ? sizes[i] : output_dim(s * static_cast<double>(x.dim(static_cast<int>(axes[i]))) + 0.5);
    }
  } else {
    if (scales.size() != axes.size()) fail("Resize: expected scales or sizes with one value per resized axis");
    for (size_t i = 0; i < axes.size(); ++i) {
      if (scales[i] <= 0) fail("Resize: scales must be positive");
      all_scales[axes[i]] = scales[i];
      all_sizes[axes[i]] = output_dim(scales[i] * static_cast<double>(x.dim(static_cast<int>(axes[i]))));
    }
  }
  v.output(0, resize(x, all_scales, all_sizes, all_roi, a));
}

}  // namespace

void register_resize_ops(runtime::KernelTable& t) {
  t.add_onnx("ai.onnx", "Resize", kernel<resize_op>);
  t.add_onnx("ai.onnx", "Upsample", kernel<resize_op>);
}

}  // namespace wgml::backend::cpu::onnx_ops
