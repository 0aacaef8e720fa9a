// Kept ONNX ops that gather with computed coordinates or contract by equation: GridSample
// (nearest/linear/cubic, zeros/border/reflection padding, any number of spatial dims), 2-D
// DeformConv, and Einsum.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "backend/cpu/onnx/onnx_op.h"
#include "core/elements.h"
#include "core/layout.h"

namespace wgml::backend::cpu::onnx_ops {
namespace {

using runtime::fail;

// Reflects x into [lo, hi] by its nearer border, as often as needed.
double reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    const double dx = lo - x;
    const int64_t n = static_cast<int64_t>(dx / range);
    const double r = dx - static_cast<double>(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const int64_t n = static_cast<int64_t>(dx / range);
    const double r = dx - static_cast<double>(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

double keys_cubic(double t) {
  const double a = -0.75;
  t = std::fabs(t);
  if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

struct GridSampler {
  const Tensor& x;
  std::string mode;     // nearest, linear, cubic
  std::string padding;  // zeros, border, reflection
  bool align_corners;
  int spatial;
  std::vector<int64_t> strides;

  double border_lo(int d) const { return align_corners ? 0.0 : -0.5; }
  double border_hi(int d) const {
    return align_corners ? static_cast<double>(x.dim(2 + d) - 1) : static_cast<double>(x.dim(2 + d)) - 0.5;
  }

  // The element at integer coordinates, with the padding mode for those outside.
  double pixel(int64_t base, const std::vector<int64_t>& index) const {
    int64_t offset = base;
    for (int d = 0; d < spatial; ++d) {
      const int64_t dim = x.dim(2 + d);
      int64_t i = index[d];
      if (i < 0 || i >= dim) {
        if (padding == "zeros") return 0;
        if (padding == "border")
          i = std::clamp<int64_t>(i, 0, dim - 1);
        else
          i = static_cast<int64_t>(reflect(static_cast<double>(i), border_lo(d), border_hi(d)));
        i = std::clamp<int64_t>(i, 0, dim - 1);
      }
      offset += i * strides[2 + d];
    }
    return load_as_double(x.dtype(), x.data(), offset);
  }

  // Interpolates at real coordinates: a separable sum over each axis's taps.
  double sample(int64_t base, std::vector<double> coordinate) const {
    std::vector<std::vector<std::pair<int64_t, double>>> taps(spatial);
    for (int d = 0; d < spatial; ++d) {
      double c = coordinate[d];
      if (mode == "nearest") c = std::nearbyint(c);
      if (c < border_lo(d) || c > border_hi(d)) {
        if (padding == "border")
          c = std::clamp(c, 0.0, static_cast<double>(x.dim(2 + d) - 1));
        else if (padding == "reflection")
          c = reflect(c, border_lo(d), border_hi(d));
      }
      const double f = std::floor(c);
      const int64_t i = static_cast<int64_t>(f);
      if (mode == "nearest")
        taps[d] = {{static_cast<int64_t>(c), 1.0}};
      else if (mode == "linear")
        taps[d] = {{i, 1 - (c - f)}, {i + 1, c - f}};
      else
        for (int k = -1; k <= 2; ++k) taps[d].push_back({i + k, keys_cubic(c - f - k)});
    }
    double acc = 0;
    std::vector<size_t> which(spatial, 0);
    std::vector<int64_t> index(spatial);
    while (true) {
      double w = 1;
      for (int d = 0; d < spatial; ++d) {
        index[d] = taps[d][which[d]].first;
        w *= taps[d][which[d]].second;
      }
      if (w != 0) acc += w * pixel(base, index);
      int d = spatial - 1;
      while (d >= 0 && ++which[d] == taps[d].size()) which[d--] = 0;
      if (d < 0) break;
    }
    return acc;
  }
};

void grid_sample(OpView& v) {
  const Tensor& x = v.required(0);
  const Tensor& grid = v.required(1);
  const int spatial = x.rank() - 2;
  if (spatial < 1 || grid.rank() != x.rank() || grid.dim(0) != x.dim(0) || grid.dim(grid.rank() - 1) != spatial)
    fail("GridSample: expected X [N, C, D1..Dn] and grid [N, O1..On, n]");
  std::string mode = v.attr_string("mode", v.opset() < 20 ? "bilinear" : "linear");
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  const GridSampler s{x,
                      mode,
                      v.attr_string("padding_mode", "zeros"),
                      v.attr_int("align_corners", 0) != 0,
                      spatial,
                      contiguous_strides(x.shape())};
  Shape shape{x.dim(0), x.dim(1)};
  shape.insert(shape.end(), grid.shape().begin() + 1, grid.shape().end() - 1);
  Tensor out(x.dtype(), shape);
  int64_t positions = 1;
  for (int d = 0; d < spatial; ++d) positions *= shape[2 + d];
  uint8_t* dst = out.mutable_data();
  std::vector<double> coordinate(spatial);
  for (int64_t n = 0; n < x.dim(0); ++n)
    for (int64_t p = 0; p < positions; ++p) {
      // The grid holds (x, y, z...): the last component indexes the first spatial dim.
      for (int d = 0; d < spatial; ++d) {
        const double g = load_as_double(grid.dtype(), grid.data(), (n * positions + p) * spatial + (spatial - 1 - d));
        const double length = static_cast<double>(x.dim(2 + d));
        coordinate[d] = s.align_corners ? (g + 1) / 2 * (length - 1) : ((g + 1) * length - 1) / 2;
      }
      for (int64_t c = 0; c < x.dim(1); ++c) {
        const int64_t base = (n * x.dim(1) + c) * (x.numel() / std::max<int64_t>(x.dim(0) * x.dim(1), 1));
        store_double(x.dtype(), dst, (n * x.dim(1) + c) * positions + p, s.sample(base, coordinate));
      }
    }
  v.output(0, std::move(out));
}

// RoiAlign: each region of interest (x1, y1, x2, y2, scaled by spatial_scale) is divided into
// output_height x output_width bins; each bin averages (or takes the max of) bilinear samples on a
// regular grid of sampling_ratio (or ceil(bin size)) points per side. Samples more than one pixel
// outside the image count as 0.
void roi_align(OpView& v) {
  const Tensor& x = v.required(0);
  const Tensor& rois = v.required(1);
  const std::vector<int64_t> batch = ints_of(v.required(2));
  if (x.rank() != 4 || rois.rank() != 2 || rois.dim(1) != 4 || rois.dim(0) != static_cast<int64_t>(batch.size()))
    fail("RoiAlign: expected X [N, C, H, W], rois [R, 4] and batch_indices [R]");
  const int64_t out_h = v.attr_int("output_height", 1), out_w = v.attr_int("output_width", 1);
  const int64_t ratio = v.attr_int("sampling_ratio", 0);
  const double scale = v.attr_float("spatial_scale", 1.0);
  const bool average = v.attr_string("mode", "avg") == "avg";
  const bool half_pixel =
      v.attr_string("coordinate_transformation_mode", v.opset() < 16 ? "output_half_pixel" : "half_pixel") == "half_pixel";
  const int64_t C = x.dim(1), H = x.dim(2), W = x.dim(3);
  const auto box = doubles_of(rois);
  Tensor out(x.dtype(), {rois.dim(0), C, out_h, out_w});
  uint8_t* dst = out.mutable_data();
  auto pixel = [&](int64_t n, int64_t c, int64_t y, int64_t xx) {
    return load_as_double(x.dtype(), x.data(), ((n * C + c) * H + y) * W + xx);
  };
  for (int64_t r = 0; r < rois.dim(0); ++r) {
    const int64_t n = normalize_index(batch[r], x.dim(0), "RoiAlign batch index");
    const double offset = half_pixel ? 0.5 : 0.0;
    const double x0 = box[r * 4] * scale - offset, y0 = box[r * 4 + 1] * scale - offset;
    double width = box[r * 4 + 2] * scale - offset - x0, height = box[r * 4 + 3] * scale - offset - y0;
    if (!half_pixel) {
      width = std::max(width, 1.0);
      height = std::max(height, 1.0);
    }
    const double bin_h = height / static_cast<double>(out_h), bin_w = width / static_cast<double>(out_w);
    const int64_t grid_h = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(height / static_cast<double>(out_h)));
    const int64_t grid_w = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(width / static_cast<double>(out_w)));
    const double count = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
    for (int64_t c = 0; c < C; ++c)
      for (int64_t ph = 0; ph < out_h; ++ph)
        for (int64_t pw = 0; pw < out_w; ++pw) {
          double acc = 0;
          bool first = true;
          for (int64_t iy = 0; iy < grid_h; ++iy)
            for (int64_t ix = 0; ix < grid_w; ++ix) {
              double y =
                  y0 + static_cast<double>(ph) * bin_h + (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h);
              double xx =
                  x0 + static_cast<double>(pw) * bin_w + (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w);
              double corners[4] = {0, 0, 0, 0};
              if (!(y < -1.0 || y > static_cast<double>(H) || xx < -1.0 || xx > static_cast<double>(W))) {
                y = std::max(y, 0.0);
                xx = std::max(xx, 0.0);
                int64_t y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(xx), y_high, x_high;
                if (y_low >= H - 1)
                  y_high = y_low = H - 1, y = static_cast<double>(y_low);
                else
                  y_high = y_low + 1;
                if (x_low >= W - 1)
                  x_high = x_low = W - 1, xx = static_cast<double>(x_low);
                else
                  x_high = x_low + 1;
                const double ly = y - static_cast<double>(y_low), lx = xx - static_cast<double>(x_low);
                corners[0] = (1 - ly) * (1 - lx) * pixel(n, c, y_low, x_low);
                corners[1] = (1 - ly) * lx * pixel(n, c, y_low, x_high);
                corners[2] = ly * (1 - lx) * pixel(n, c, y_high, x_low);
                corners[3] = ly * lx * pixel(n, c, y_high, x_high);
              }
              if (average) {
                acc += corners[0] + corners[1] + corners[2] + corners[3];
              } else {
                const double m = std::max(std::max(corners[0], corners[1]), std::max(corners[2], corners[3]));
                acc = first ? m : std::max(acc, m);
                first = false;
              }
            }
          store_double(x.dtype(), dst, ((r * C + c) * out_h + ph) * out_w + pw, average ? acc / count : acc);
        }
  }
  v.output(0, std::move(out));
}

// MaxPool with its Indices output: the maximum of each window (pads excluded) and its flat index
// in X, row-major, or with the spatial dims column-major when storage_order is 1.
void max_pool_with_indices(OpView& v) {
  const Tensor& x = v.required(0);
  const std::vector<int64_t> kernel = v.attr_ints("kernel_shape");
  const size_t spatial = kernel.size();
  if (x.rank() != static_cast<int>(spatial) + 2) fail("MaxPool: the input rank does not match kernel_shape");
  if (v.attr_string("auto_pad", "NOTSET") != "NOTSET") fail("MaxPool: auto_pad with an Indices output is not supported");
  std::vector<int64_t> strides = v.attr_ints("strides"), dilations = v.attr_ints("dilations"), pads = v.attr_ints("pads");
  strides.resize(spatial, 1);
  dilations.resize(spatial, 1);
  pads.resize(2 * spatial, 0);
  const bool ceil_mode = v.attr_int("ceil_mode", 0) != 0, column_major = v.attr_int("storage_order", 0) != 0;
  Shape out_shape{x.dim(0), x.dim(1)};
  for (size_t d = 0; d < spatial; ++d) {
    const int64_t in = x.dim(static_cast<int>(d) + 2), extent = (kernel[d] - 1) * dilations[d] + 1;
    const int64_t span = in + pads[d] + pads[spatial + d] - extent;
    int64_t out = (ceil_mode ? (span + strides[d] - 1) / strides[d] : span / strides[d]) + 1;
    if (ceil_mode && (out - 1) * strides[d] >= in + pads[d]) --out;
    out_shape.push_back(out);
  }
  Tensor values(x.dtype(), out_shape);
  std::vector<int64_t> indices(static_cast<size_t>(values.numel()));
  const int64_t planes = x.dim(0) * x.dim(1);
  int64_t plane_size = 1, windows = 1;
  for (size_t d = 0; d < spatial; ++d) {
    plane_size *= x.dim(static_cast<int>(d) + 2);
    windows *= out_shape[d + 2];
  }
  std::vector<int64_t> o(spatial), k(spatial), pos(spatial);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t w = 0; w < windows; ++w) {
      for (int64_t rest = w, d = static_cast<int64_t>(spatial) - 1; d >= 0; --d) {
        o[d] = rest % out_shape[d + 2];
        rest /= out_shape[d + 2];
      }
      double best = -std::numeric_limits<double>::infinity();
      int64_t best_index = -1;
      std::fill(k.begin(), k.end(), 0);
      while (true) {
        bool inside = true;
        int64_t row_major = 0, col_major = 0, col_stride = 1;
        for (size_t d = 0; d < spatial; ++d) {
          pos[d] = o[d] * strides[d] - pads[d] + k[d] * dilations[d];
          inside = inside && pos[d] >= 0 && pos[d] < x.dim(static_cast<int>(d) + 2);
          row_major = row_major * x.dim(static_cast<int>(d) + 2) + pos[d];
          col_major += pos[d] * col_stride;
          col_stride *= x.dim(static_cast<int>(d) + 2);
        }
        if (inside) {
          const double value = load_as_double(x.dtype(), x.data(), p * plane_size + row_major);
          if (best_index < 0 || value > best) {
            best = value;
            best_index = p * plane_size + (column_major ? col_major : row_major);
          }
        }
        int64_t d = static_cast<int64_t>(spatial) - 1;
        while (d >= 0 && ++k[d] == kernel[d]) k[d--] = 0;
        if (d < 0) break;
      }
      store_double(x.dtype(), values.mutable_data(), p * windows + w, best);
      indices[p * windows + w] = best_index;
    }
  v.output(0, std::move(values));
  v.output(1, Tensor::from_bytes(DType::Int64, out_shape, indices.data()));
}

// Einsum by brute force: every combination of label values, products summed into the output.
std::vector<std::string> split_terms(const std::string& s) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == ',')
      out.emplace_back();
    else if (c != ' ')
      out.back() += c;
  }
  return out;
}

// Replaces "..." with stand-in labels for `dims` broadcast dims ('A', 'B', ... are not ONNX labels
// in lower-case equations; upper-case labels are rejected to keep them free).
std::string expand_ellipsis(const std::string& term, int ellipsis_dims) {
  const auto at = term.find("...");
  if (at == std::string::npos) return term;
  std::string stand_ins;
  for (int i = 0; i < ellipsis_dims; ++i) stand_ins += static_cast<char>('Z' - (ellipsis_dims - 1 - i));
  return term.substr(0, at) + stand_ins + term.substr(at + 3);
}

void einsum(OpView& v) {
  std::string equation = v.attr_string("equation", "");
  for (char c : equation)
    if (std::isupper(static_cast<unsigned char>(c))) fail("Einsum: upper-case labels are not supported");
  const auto arrow = equation.find("->");
  std::vector<std::string> inputs = split_terms(equation.substr(0, arrow));
  if (inputs.size() != v.num_inputs()) fail("Einsum: the equation names " + std::to_string(inputs.size()) + " inputs");
  int ellipsis_dims = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = v.required(i);
    const int named = static_cast<int>(inputs[i].size()) - (inputs[i].find("...") != std::string::npos ? 3 : 0);
    if (inputs[i].find("...") != std::string::npos) ellipsis_dims = std::max(ellipsis_dims, t.rank() - named);
  }
  std::map<char, int64_t> sizes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = v.required(i);
    const int named = static_cast<int>(inputs[i].size()) - (inputs[i].find("...") != std::string::npos ? 3 : 0);
    inputs[i] = expand_ellipsis(inputs[i], t.rank() - named);
    // Broadcast ellipsis dims align to the right of the stand-ins.
    if (static_cast<int>(inputs[i].size()) != t.rank()) fail("Einsum: term '" + inputs[i] + "' does not match its input's rank");
    for (int d = 0; d < t.rank(); ++d) {
      auto [it, fresh] = sizes.emplace(inputs[i][d], t.dim(d));
      if (!fresh && it->second != t.dim(d)) {
        if (it->second == 1)
          it->second = t.dim(d);
        else if (t.dim(d) != 1)
          fail("Einsum: label '" + std::string(1, inputs[i][d]) + "' has two sizes");
      }
    }
  }
  std::string output;
  if (arrow != std::string::npos) {
    output = expand_ellipsis(equation.substr(arrow + 2), ellipsis_dims);
    output.erase(std::remove(output.begin(), output.end(), ' '), output.end());
  } else {
    std::map<char, int> count;
    for (const std::string& term : inputs)
      for (char c : term) ++count[c];
    for (int i = 0; i < ellipsis_dims; ++i) output += static_cast<char>('Z' - (ellipsis_dims - 1 - i));
    for (const auto& [c, n] : count)
      if (n == 1 && std::islower(static_cast<unsigned char>(c))) output += c;
  }
  std::string labels = output;
  for (const auto& [c, size] : sizes)
    if (labels.find(c) == std::string::npos) labels += c;
  Shape shape;
  for (char c : output) shape.push_back(sizes.at(c));
  Tensor out(v.required(0).dtype(), shape);
  std::vector<double> acc(static_cast<size_t>(out.numel()), 0.0);
  std::vector<int64_t> value(labels.size(), 0);
  std::vector<std::vector<int64_t>> strides;
  for (size_t i = 0; i < inputs.size(); ++i) strides.push_back(contiguous_strides(v.required(i).shape()));
  const auto out_strides = contiguous_strides(shape);
  const bool empty = std::any_of(sizes.begin(), sizes.end(), [](const auto& s) { return s.second == 0; });
  while (!empty) {
    double product = 1;
    for (size_t i = 0; i < inputs.size() && product != 0; ++i) {
      const Tensor& t = v.required(i);
      int64_t offset = 0;
      for (size_t d = 0; d < inputs[i].size(); ++d) {
        const int64_t index = t.dim(static_cast<int>(d)) == 1 ? 0 : value[labels.find(inputs[i][d])];
        offset += index * strides[i][d];
      }
      product *= load_as_double(t.dtype(), t.data(), offset);
    }
    int64_t o = 0;
    for (size_t d = 0; d < output.size(); ++d) o += value[d] * out_strides[d];
    if (out.numel() > 0) acc[o] += product;
    int d = static_cast<int>(labels.size()) - 1;
    while (d >= 0 && ++value[d] >= sizes.at(labels[d])) value[d--] = 0;
    if (d < 0) break;
  }
  uint8_t* dst = out.mutable_data();
  for (int64_t i = 0; i < out.numel(); ++i) store_double(out.dtype(), dst, i, acc[i]);
  v.output(0, std::move(out));
}

// DeformConv's sizes, read from its operands and attributes, all checked against each other.
struct DeformConvGeometry {
  int64_t batch, channels, height, width, out_channels, out_height, out_width, kh, kw;
  int64_t group, offset_group, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left;
};

std::vector<int64_t> attr_or(const OpView& v, const char* name, std::vector<int64_t> fallback) {
  std::vector<int64_t> values = v.attr_ints(name);
  return values.empty() ? fallback : values;
}

DeformConvGeometry deform_conv_geometry(const OpView& v, const Tensor& x, const Tensor& w, const Tensor& offset) {
  if (x.rank() != 4 || w.rank() != 4 || offset.rank() != 4) fail("DeformConv: only 2-D inputs [N, C, H, W] are supported");
  const std::vector<int64_t> strides = attr_or(v, "strides", {1, 1}), dilations = attr_or(v, "dilations", {1, 1});
  const std::vector<int64_t> pads = attr_or(v, "pads", {0, 0, 0, 0});
  if (strides.size() != 2 || dilations.size() != 2 || pads.size() != 4)
    fail("DeformConv: strides, dilations and pads of a 2-D conv");
  for (int64_t e : {strides[0], strides[1], dilations[0], dilations[1]})
    if (e < 1 || e > INT32_MAX) fail("DeformConv: strides and dilations must be in [1, 2^31)");
  for (int64_t p : pads)
    if (p < 0 || p > INT32_MAX) fail("DeformConv: pads must be in [0, 2^31)");
  const DeformConvGeometry g{x.dim(0),
                             x.dim(1),
                             x.dim(2),
                             x.dim(3),
                             w.dim(0),
                             offset.dim(2),
                             offset.dim(3),
                             w.dim(2),
                             w.dim(3),
                             v.attr_int("group", 1),
                             v.attr_int("offset_group", 1),
                             strides[0],
                             strides[1],
                             dilations[0],
                             dilations[1],
                             pads[0],
                             pads[1]};
  if (g.group < 1 || g.offset_group < 1 || g.channels != w.dim(1) * g.group || g.out_channels % g.group != 0 ||
      g.channels % g.offset_group != 0)
    fail("DeformConv: channels, weights, group and offset_group disagree");
  if (offset.dim(0) != g.batch || offset.dim(1) != g.offset_group * g.kh * g.kw * 2)
    fail("DeformConv: offset must be [N, offset_group * kH * kW * 2, oH, oW]");
  const int64_t rows = g.height + pads[0] + pads[2] - ((g.kh - 1) * g.dilation_h + 1);
  const int64_t cols = g.width + pads[1] + pads[3] - ((g.kw - 1) * g.dilation_w + 1);
  if (rows < 0 || cols < 0 || g.out_height != rows / g.stride_h + 1 || g.out_width != cols / g.stride_w + 1)
    fail("DeformConv: the offset's spatial dims do not match the padded, strided output");
  return g;
}

// Bilinear sample of one H x W plane at (y, x) in pixel units, zero outside the plane.
double sample_zero_padded(const double* plane, int64_t height, int64_t width, double y, double x) {
  const double y0 = std::floor(y), x0 = std::floor(x);
  double sum = 0;
  for (int dy = 0; dy < 2; ++dy)
    for (int dx = 0; dx < 2; ++dx) {
      const double yy = y0 + dy, xx = x0 + dx;
      if (yy < 0 || xx < 0 || yy >= static_cast<double>(height) || xx >= static_cast<double>(width)) continue;
      const double weight = (dy ? y - y0 : 1 - (y - y0)) * (dx ? x - x0 : 1 - (x - x0));
      sum += weight * plane[static_cast<int64_t>(yy) * width + static_cast<int64_t>(xx)];
    }
  return sum;
}

// One output element of DeformConv: each kernel tap reads the input at its place moved by the
// learned offset (bilinear), scaled by the mask, over the group's input channels.
double deform_conv_at(const DeformConvGeometry& g, const std::vector<double>& x, const std::vector<double>& w,
                      const std::vector<double>& offset, const std::vector<double>* mask, int64_t n, int64_t oc, int64_t i,
                      int64_t j) {
  const int64_t per_group = g.channels / g.group, per_offset_group = g.channels / g.offset_group;
  const int64_t first = oc / (g.out_channels / g.group) * per_group, taps = g.kh * g.kw;
  double acc = 0;
  for (int64_t c = first; c < first + per_group; ++c) {
    const int64_t og = c / per_offset_group;
    const double* plane = x.data() + (n * g.channels + c) * g.height * g.width;
    for (int64_t tap = 0; tap < taps; ++tap) {
      const int64_t channel = og * taps + tap, at = (n * g.offset_group * taps + channel) * 2;
      const double dy = offset[((at + 0) * g.out_height + i) * g.out_width + j];
      const double dx = offset[((at + 1) * g.out_height + i) * g.out_width + j];
      const double y = static_cast<double>(i * g.stride_h - g.pad_top + tap / g.kw * g.dilation_h) + dy;
      const double xx = static_cast<double>(j * g.stride_w - g.pad_left + tap % g.kw * g.dilation_w) + dx;
      const double m = mask ? (*mask)[((n * g.offset_group * taps + channel) * g.out_height + i) * g.out_width + j] : 1.0;
      acc += w[(oc * per_group + c - first) * taps + tap] * m * sample_zero_padded(plane, g.height, g.width, y, xx);
    }
  }
  return acc;
}

// DeformConv (2-D): X [N, C, H, W], W [M, C / group, kH, kW], offset [N, G * kH * kW * 2, oH, oW]
// (dy, dx per tap), optional B [M] and mask [N, G * kH * kW, oH, oW].
void deform_conv(OpView& v) {
  const Tensor& x = v.required(0);
  const Tensor& w = v.required(1);
  const Tensor& offset = v.required(2);
  const DeformConvGeometry g = deform_conv_geometry(v, x, w, offset);
  const Tensor* bias = v.input(3);
  const Tensor* mask_tensor = v.input(4);
  if (bias && bias->numel() != g.out_channels) fail("DeformConv: B must have one value per output channel");
  if (mask_tensor && mask_tensor->shape() != Shape{g.batch, g.offset_group * g.kh * g.kw, g.out_height, g.out_width})
    fail("DeformConv: mask must be [N, offset_group * kH * kW, oH, oW]");
  const std::vector<double> xs = doubles_of(x), ws = doubles_of(w), offsets = doubles_of(offset);
  const std::vector<double> biases = bias ? doubles_of(*bias) : std::vector<double>(static_cast<size_t>(g.out_channels), 0.0);
  const std::vector<double> mask = mask_tensor ? doubles_of(*mask_tensor) : std::vector<double>();
  Tensor out(x.dtype(), {g.batch, g.out_channels, g.out_height, g.out_width});
  int64_t k = 0;
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t oc = 0; oc < g.out_channels; ++oc)
      for (int64_t i = 0; i < g.out_height; ++i)
        for (int64_t j = 0; j < g.out_width; ++j, ++k)
          store_double(out.dtype(), out.mutable_data(), k,
                       biases[oc] + deform_conv_at(g, xs, ws, offsets, mask_tensor ? &mask : nullptr, n, oc, i, j));
  v.output(0, std::move(out));
}

}  // namespace

void register_sampling_ops(runtime::KernelTable& t) {
  t.add_onnx("ai.onnx", "GridSample", kernel<grid_sample>);
  t.add_onnx("ai.onnx", "Einsum", kernel<einsum>);
  t.add_onnx("ai.onnx", "DeformConv", kernel<deform_conv>);
  t.add_onnx("ai.onnx", "RoiAlign", kernel<roi_align>);
  t.add_onnx("ai.onnx", "MaxPool", kernel<max_pool_with_indices>);
}

}  // namespace wgml::backend::cpu::onnx_ops
