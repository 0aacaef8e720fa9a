// Kept ONNX ops of their own kind: LinearAttention (a per-token recurrence), BitCast, Det,
// MaxUnpool, AffineGrid, TfIdfVectorizer, Col2Im, and Dropout whose training mode or ratio arrive at run time.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "backend/cpu/onnx/onnx_op.h"
#include "core/elements.h"
#include "core/layout.h"
#include "ir/onnx_dtypes.h"

namespace wgml::backend::cpu::onnx_ops {
namespace {

using runtime::fail;

Tensor from_doubles(DType t, Shape shape, const std::vector<double>& v) {
  Tensor out(t, std::move(shape));
  uint8_t* dst = out.mutable_data();
  for (size_t i = 0; i < v.size(); ++i) store_double(t, dst, static_cast<int64_t>(i), v[i]);
  return out;
}

// Per batch and KV head a d_k x d_v state S; per token t (rules "linear", "gated", "delta",
// "gated_delta"): S = exp(g_t) S (gated), v_t = beta_t (v_t - S^T k_t) (delta), S += k_t v_t^T,
// and each query head of the group reads o_t = scale q_t^T S.
void linear_attention(OpView& v) {
  const Tensor& q = v.required(0);
  const Tensor& k = v.required(1);
  const Tensor& val = v.required(2);
  const std::string rule = v.attr_string("update_rule", "gated_delta");
  const bool gated = rule == "gated" || rule == "gated_delta", delta = rule == "delta" || rule == "gated_delta";
  if (!gated && !delta && rule != "linear") fail("LinearAttention: unknown update_rule '" + rule + "'");
  const Tensor* decay = v.input(4);
  const Tensor* beta = v.input(5);
  if (gated != (decay != nullptr) || delta != (beta != nullptr)) fail("LinearAttention: decay and beta must match update_rule");
  const int64_t hq = v.attr_int("q_num_heads", 0), hkv = v.attr_int("kv_num_heads", 0);
  const int64_t B = q.dim(0), T = q.dim(1), dk = q.dim(2) / hq, dv = val.dim(2) / hkv, group = hq / hkv;
  const double scale = v.attr_float("scale", 0) == 0 ? 1.0 / std::sqrt(static_cast<double>(dk)) : v.attr_float("scale", 0);
  const auto Q = doubles_of(q), K = doubles_of(k), V = doubles_of(val);
  const auto G = decay ? doubles_of(*decay) : std::vector<double>{};
  const auto Bt = beta ? doubles_of(*beta) : std::vector<double>{};
  const Tensor* past = v.input(3);
  std::vector<double> S = past ? doubles_of(*past) : std::vector<double>(static_cast<size_t>(B * hkv * dk * dv), 0.0);
  std::vector<double> out(static_cast<size_t>(B * T * hq * dv), 0.0);
  std::vector<double> vt(static_cast<size_t>(dv));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < hkv; ++h) {
        double* s = S.data() + (b * hkv + h) * dk * dv;
        const double* kt = K.data() + (b * T + t) * hkv * dk + h * dk;
        if (gated) {
          const int64_t width = decay->dim(2);  // one decay per head, or per head and key dim
          for (int64_t i = 0; i < dk; ++i) {
            const double g = width == hkv ? G[(b * T + t) * width + h] : G[(b * T + t) * width + h * dk + i];
            for (int64_t j = 0; j < dv; ++j) s[i * dv + j] *= std::exp(g);
          }
        }
        for (int64_t j = 0; j < dv; ++j) vt[j] = V[(b * T + t) * hkv * dv + h * dv + j];
        if (delta) {
          const double rate = Bt[(b * T + t) * beta->dim(2) + (beta->dim(2) == 1 ? 0 : h)];
          for (int64_t j = 0; j < dv; ++j) {
            double retrieved = 0;
            for (int64_t i = 0; i < dk; ++i) retrieved += s[i * dv + j] * kt[i];
            vt[j] = rate * (vt[j] - retrieved);
          }
        }
        for (int64_t i = 0; i < dk; ++i)
          for (int64_t j = 0; j < dv; ++j) s[i * dv + j] += kt[i] * vt[j];
        for (int64_t g = 0; g < group; ++g) {
          const int64_t qh = h * group + g;
          const double* qt = Q.data() + (b * T + t) * hq * dk + qh * dk;
          for (int64_t j = 0; j < dv; ++j) {
            double acc = 0;
            for (int64_t i = 0; i < dk; ++i) acc += qt[i] * s[i * dv + j];
            out[(b * T + t) * hq * dv + qh * dv + j] = scale * acc;
          }
        }
      }
  v.output(0, from_doubles(q.dtype(), {B, T, hq * dv}, out));
  v.output(1, from_doubles(past ? past->dtype() : q.dtype(), {B, hkv, dk, dv}, S));
}

void bit_cast(OpView& v) {
  const Tensor& x = v.required(0);
  const auto to = ir::dtype_from_onnx(static_cast<int32_t>(v.attr_int("to", 0)));
  if (!to || dtype_size(*to) != dtype_size(x.dtype())) fail("BitCast: the target type must have the input's width");
  v.output(0, Tensor::from_bytes(*to, x.shape(), x.data()));
}

// Determinants of the trailing square matrices, by Gaussian elimination with partial pivoting.
void det(OpView& v) {
  const Tensor& x = v.required(0);
  const int64_t n = x.dim(x.rank() - 1);
  if (x.dim(x.rank() - 2) != n) fail("Det: expected square matrices");
  const Shape batch(x.shape().begin(), x.shape().end() - 2);
  const auto values = doubles_of(x);
  std::vector<double> out;
  for (int64_t m = 0; m < shape_numel(batch); ++m) {
    std::vector<double> a(values.begin() + m * n * n, values.begin() + (m + 1) * n * n);
    double d = 1;
    for (int64_t c = 0; c < n && d != 0; ++c) {
      int64_t pivot = c;
      for (int64_t r = c + 1; r < n; ++r)
        if (std::fabs(a[r * n + c]) > std::fabs(a[pivot * n + c])) pivot = r;
      if (a[pivot * n + c] == 0) {
        d = 0;
        break;
      }
      if (pivot != c) {
        for (int64_t j = 0; j < n; ++j) std::swap(a[c * n + j], a[pivot * n + j]);
        d = -d;
      }
      d *= a[c * n + c];
      for (int64_t r = c + 1; r < n; ++r) {
        const double f = a[r * n + c] / a[c * n + c];
        for (int64_t j = c; j < n; ++j) a[r * n + j] -= f * a[c * n + j];
      }
    }
    out.push_back(d);
  }
  v.output(0, from_doubles(x.dtype(), batch, out));
}

// Scatters X to the flat positions its indices name in the pooled-from shape, which may then be
// placed at the start of a larger output_shape.
void max_unpool(OpView& v) {
  const Tensor& x = v.required(0);
  const std::vector<int64_t> indices = ints_of(v.required(1));
  const std::vector<int64_t> kernel = v.attr_ints("kernel_shape");
  std::vector<int64_t> strides = v.attr_ints("strides"), pads = v.attr_ints("pads");
  const size_t spatial = kernel.size();
  strides.resize(spatial, 1);
  pads.resize(2 * spatial, 0);
  Shape inferred{x.dim(0), x.dim(1)};
  for (size_t d = 0; d < spatial; ++d)
    inferred.push_back((x.dim(static_cast<int>(d) + 2) - 1) * strides[d] - (pads[d] + pads[spatial + d]) + kernel[d]);
  Tensor unpooled(x.dtype(), inferred);
  uint8_t* dst = unpooled.mutable_data();
  const size_t element = dtype_size(x.dtype());
  if (static_cast<int64_t>(indices.size()) != x.numel()) fail("MaxUnpool: one index per input element expected");
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t at = normalize_index(indices[i], unpooled.numel(), "MaxUnpool index");
    std::memcpy(dst + at * element, x.data() + i * element, element);
  }
  const Tensor* output_shape = v.input(2);
  if (!output_shape) return v.output(0, std::move(unpooled));
  const Shape shape = ints_of(*output_shape);
  if (shape.size() != inferred.size()) fail("MaxUnpool: output_shape has the wrong rank");
  Tensor out(x.dtype(), shape);
  const auto in_strides = contiguous_strides(inferred), out_strides = contiguous_strides(shape);
  for (int64_t i = 0; i < unpooled.numel(); ++i) {
    int64_t o = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      const int64_t coordinate = (i / in_strides[d]) % inferred[d];
      if (coordinate >= shape[d]) fail("MaxUnpool: output_shape is smaller than the unpooled size");
      o += coordinate * out_strides[d];
    }
    std::memcpy(out.mutable_data() + o * element, unpooled.data() + i * element, element);
  }
  v.output(0, std::move(out));
}

// Evenly spaced positions in [-1, 1]: the pixel corners (align_corners) or centers.
std::vector<double> base_coordinates(int64_t length, bool align_corners) {
  std::vector<double> out;
  for (int64_t i = 0; i < length; ++i)
    out.push_back(align_corners ? (length == 1 ? -1.0 : -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(length - 1))
                                : -1.0 + (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(length));
  return out;
}

// grid[n, ..., :] = theta[n] @ (x, y[, z], 1) for every output position.
void affine_grid(OpView& v) {
  const Tensor& theta = v.required(0);
  const std::vector<int64_t> size = ints_of(v.required(1));
  const int spatial = static_cast<int>(size.size()) - 2;
  const bool align = v.attr_int("align_corners", 0) != 0;
  if (theta.rank() != 3 || theta.dim(1) != spatial || theta.dim(2) != spatial + 1)
    fail("AffineGrid: theta must be [N, d, d + 1]");
  const auto th = doubles_of(theta);
  Shape shape{size[0]};
  for (int d = 0; d < spatial; ++d) shape.push_back(size[2 + d]);
  shape.push_back(spatial);
  std::vector<std::vector<double>> axes;  // outermost (z or y) first
  for (int d = 0; d < spatial; ++d) axes.push_back(base_coordinates(size[2 + d], align));
  int64_t positions = 1;
  for (int d = 0; d < spatial; ++d) positions *= size[2 + d];
  std::vector<double> out;
  std::vector<double> point(spatial + 1, 1.0);
  for (int64_t n = 0; n < size[0]; ++n)
    for (int64_t p = 0; p < positions; ++p) {
      int64_t rest = p;
      for (int d = spatial - 1; d >= 0; --d) {  // x first in the homogeneous point
        point[spatial - 1 - d] = axes[d][rest % size[2 + d]];
        rest /= size[2 + d];
      }
      for (int r = 0; r < spatial; ++r) {
        double acc = 0;
        for (int c = 0; c <= spatial; ++c) acc += th[(n * spatial + r) * (spatial + 1) + c] * point[c];
        out.push_back(acc);
      }
    }
  v.output(0, from_doubles(theta.dtype(), shape, out));
}

// Crops or zero-pads each listed axis to its target size around the center (an odd difference
// leaves the extra element at the end).
void center_crop_pad(OpView& v) {
  const Tensor& x = v.required(0);
  const std::vector<int64_t> target = ints_of(v.required(1));
  std::vector<int64_t> axes = v.attr_ints("axes");
  if (axes.empty())
    for (int d = 0; d < x.rank(); ++d) axes.push_back(d);
  if (axes.size() != target.size()) fail("CenterCropPad: one target size per axis expected");
  Shape shape = x.shape();
  std::vector<int64_t> shift(x.rank(), 0);  // output index = input index + shift
  for (size_t i = 0; i < axes.size(); ++i) {
    const int a = normalize_axis(static_cast<int>(axes[i]), x.rank());
    if (target[i] < 0) fail("CenterCropPad: negative target size");
    shift[a] = target[i] >= x.dim(a) ? (target[i] - x.dim(a)) / 2 : -((x.dim(a) - target[i]) / 2);
    shape[a] = target[i];
  }
  Tensor out(x.dtype(), shape);
  const auto in_strides = contiguous_strides(x.shape()), out_strides = contiguous_strides(shape);
  const size_t element = dtype_size(x.dtype());
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t o = 0;
    bool inside = true;
    for (int d = 0; d < x.rank() && inside; ++d) {
      const int64_t c = (i / in_strides[d]) % x.dim(d) + shift[d];
      inside = c >= 0 && c < shape[d];
      o += c * out_strides[d];
    }
    if (inside) std::memcpy(out.mutable_data() + o * element, x.data() + i * element, element);
  }
  v.output(0, std::move(out));
}

// TfIdfVectorizer's pool: each n-gram (pool_int64s cut by ngram_counts) mapped to its output column.
std::map<std::vector<int64_t>, int64_t> tfidf_columns(const OpView& v) {
  const std::vector<int64_t> pool = v.attr_ints("pool_int64s"), counts = v.attr_ints("ngram_counts");
  const std::vector<int64_t> indexes = v.attr_ints("ngram_indexes");
  const auto pool_size = static_cast<int64_t>(pool.size());
  std::map<std::vector<int64_t>, int64_t> column;
  size_t gram = 0;
  for (size_t n = 1; n <= counts.size(); ++n) {
    const int64_t begin = counts[n - 1], end = n < counts.size() ? counts[n] : pool_size;
    if (begin < 0 || end > pool_size || begin > end || (end - begin) % static_cast<int64_t>(n) != 0)
      fail("TfIdfVectorizer: ngram_counts do not partition pool_int64s");
    for (int64_t at = begin; at < end; at += static_cast<int64_t>(n), ++gram) {
      if (gram >= indexes.size()) fail("TfIdfVectorizer: fewer ngram_indexes than n-grams");
      if (indexes[gram] < 0) fail("TfIdfVectorizer: negative ngram_indexes");
      column[std::vector<int64_t>(pool.begin() + at, pool.begin() + at + static_cast<int64_t>(n))] = indexes[gram];
    }
  }
  return column;
}

// Counts, per row, every pool n-gram of length [min, max] whose elements are taken skip + 1 apart
// (skip up to max_skip_count; unigrams counted once).
WorkingDoubles tfidf_counts(const OpView& v, const std::vector<int64_t>& values, int64_t rows, int64_t len,
                            const std::map<std::vector<int64_t>, int64_t>& column, int64_t width) {
  // No pool n-gram is longer than ngram_counts has entries, nor can a skip reach past the row.
  const auto longest = static_cast<int64_t>(v.attr_ints("ngram_counts").size());
  const int64_t min_n = std::max<int64_t>(v.attr_int("min_gram_length", 1), 1);
  const int64_t max_n = std::min(v.attr_int("max_gram_length", 1), longest);
  const int64_t max_skip = std::min(v.attr_int("max_skip_count", 0), len);
  WorkingDoubles working = working_doubles({rows, width});
  std::vector<double>& out = working.values;
  std::vector<int64_t> key;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t n = min_n; n <= max_n; ++n)
      for (int64_t skip = 0; skip <= (n == 1 ? 0 : max_skip); ++skip)
        for (int64_t i = 0; i + (n - 1) * (skip + 1) < len; ++i) {
          key.clear();
          for (int64_t k = 0; k < n; ++k) key.push_back(values[r * len + i + k * (skip + 1)]);
          auto it = column.find(key);
          if (it != column.end()) out[r * width + it->second] += 1;
        }
  return working;
}

// TfIdfVectorizer on integer input [N] or [B, N]: TF counts of the pool's n-grams, IDF weights of
// the present ones, or their product, each at its ngram_indexes column.
void tfidf_vectorizer(OpView& v) {
  const Tensor& x = v.required(0);
  if (x.rank() != 1 && x.rank() != 2) fail("TfIdfVectorizer: expected input [N] or [B, N]");
  const auto column = tfidf_columns(v);
  int64_t width = 0;
  for (int64_t i : v.attr_ints("ngram_indexes")) {
    if (i < 0 || i >= (int64_t{1} << 40)) fail("TfIdfVectorizer: ngram_indexes must lie in [0, 2^40)");
    width = std::max(width, i + 1);
  }
  const std::vector<double> weights = v.attr_floats("weights");
  if (!weights.empty() && static_cast<int64_t>(weights.size()) < width)
    fail("TfIdfVectorizer: fewer weights than output columns");
  const std::string mode = v.attr_string("mode", "TF");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") fail("TfIdfVectorizer: unknown mode '" + mode + "'");
  const int64_t rows = x.rank() == 2 ? x.dim(0) : 1, len = x.dim(x.rank() - 1);
  WorkingDoubles counts = tfidf_counts(v, ints_of(x), rows, len, column, width);
  std::vector<double>& out = counts.values;
  for (size_t i = 0; i < out.size(); ++i) {
    const double w = weights.empty() ? 1.0 : weights[i % static_cast<size_t>(width)];
    if (mode == "IDF")
      out[i] = out[i] > 0 ? w : 0;
    else if (mode == "TFIDF")
      out[i] *= w;
  }
  v.output(0, from_doubles(DType::Float32, x.rank() == 2 ? Shape{rows, width} : Shape{width}, out));
}

// One spatial axis of Col2Im: image size, block size, dilation, stride, begin pad, and how many
// block positions fit along it.
struct Col2ImAxis {
  int64_t image, block, dilation, stride, pad, positions;
};

std::vector<Col2ImAxis> col2im_axes(const OpView& v, const std::vector<int64_t>& image, const std::vector<int64_t>& block) {
  const size_t s = image.size();
  const std::vector<int64_t> ones(s, 1), zeros(2 * s, 0);
  std::vector<int64_t> dilations = v.attr_ints("dilations"), strides = v.attr_ints("strides"), pads = v.attr_ints("pads");
  if (dilations.empty()) dilations = ones;
  if (strides.empty()) strides = ones;
  if (pads.empty()) pads = zeros;
  if (block.size() != s || dilations.size() != s || strides.size() != s || pads.size() != 2 * s)
    fail("Col2Im: image_shape, block_shape, dilations, strides and pads disagree in length");
  std::vector<Col2ImAxis> axes;
  for (size_t i = 0; i < s; ++i) {
    const Col2ImAxis a{image[i], block[i], dilations[i], strides[i], pads[i], 0};
    for (int64_t e : {a.image, a.block, a.dilation, a.stride})
      if (e < 1 || e > INT32_MAX) fail("Col2Im: sizes, dilations and strides must be in [1, 2^31)");
    if (pads[i] < 0 || pads[i + s] < 0 || pads[i] > INT32_MAX || pads[i + s] > INT32_MAX)
      fail("Col2Im: pads must be in [0, 2^31)");
    const int64_t span = a.image + pads[i] + pads[i + s] - ((a.block - 1) * a.dilation + 1);
    if (span < 0) fail("Col2Im: the block does not fit the padded image");
    axes.push_back(a);
    axes.back().positions = span / a.stride + 1;
  }
  return axes;
}

// Advances a multi-index over `limits` (last axis fastest); false after the last one.
bool next_index(std::vector<int64_t>& index, const std::vector<int64_t>& limits) {
  for (size_t d = index.size(); d-- > 0;) {
    if (++index[d] < limits[d]) return true;
    index[d] = 0;
  }
  return false;
}

// Col2Im: sums each column's block of values back into the image at its sliding-window place
// (the inverse of im2col), for input [N, C * prod(block), L].
void col2im(OpView& v) {
  const Tensor& x = v.required(0);
  const std::vector<int64_t> image = ints_of(v.required(1)), block = ints_of(v.required(2));
  if (x.rank() != 3 || image.empty()) fail("Col2Im: expected input [N, C * prod(block_shape), L] and a non-empty image_shape");
  const std::vector<Col2ImAxis> axes = col2im_axes(v, image, block);
  std::vector<int64_t> position_limits;
  for (const Col2ImAxis& a : axes) position_limits.push_back(a.positions);
  // shape_numel refuses products too large for a tensor.
  const int64_t block_size = shape_numel(block), positions = shape_numel(position_limits), image_size = shape_numel(image);
  if (x.dim(1) % block_size != 0 || x.dim(2) != positions) fail("Col2Im: the input's dims do not match the blocks and image");
  const int64_t channels = x.dim(1) / block_size;
  Shape shape{x.dim(0), channels};
  shape.insert(shape.end(), image.begin(), image.end());
  const std::vector<double> in = doubles_of(x);
  WorkingDoubles working = working_doubles(shape);
  std::vector<double>& out = working.values;
  for (int64_t nc = 0; nc < x.dim(0) * channels; ++nc) {
    std::vector<int64_t> b(axes.size(), 0);
    int64_t row = nc * block_size;
    do {
      std::vector<int64_t> p(axes.size(), 0);
      int64_t column = 0;
      do {
        int64_t at = 0;
        bool inside = true;
        for (size_t d = 0; d < axes.size() && inside; ++d) {
          const int64_t coord = p[d] * axes[d].stride - axes[d].pad + b[d] * axes[d].dilation;
          inside = coord >= 0 && coord < axes[d].image;
          at = at * axes[d].image + coord;
        }
        if (inside) out[nc * image_size + at] += in[row * positions + column];
        ++column;
      } while (next_index(p, position_limits));
      ++row;
    } while (next_index(b, block));
  }
  v.output(0, from_doubles(x.dtype(), shape, out));
}

// Inference is the identity; dropping at random in training mode has no reproducible result.
void dropout(OpView& v) {
  const Tensor& x = v.required(0);
  const Tensor* ratio = v.input(1);
  const Tensor* training = v.input(2);
  const bool trains = training && training->numel() > 0 && load_as_double(training->dtype(), training->data(), 0) != 0;
  const double rate = ratio && ratio->numel() > 0 ? load_as_double(ratio->dtype(), ratio->data(), 0) : 0.5;
  if (trains && rate != 0) fail("Dropout: training mode with a nonzero ratio drops at random");
  v.output(0, x);
  Tensor mask(DType::Bool, x.shape());
  std::memset(mask.mutable_data(), 1, mask.nbytes());
  v.output(1, std::move(mask));
}

// The frontend's stand-in for a branch its lowering proved cannot run (a Concat of ranks 2 and 3
// behind an If the inputs never take): reaching it is an error for those inputs, as in
// onnxruntime, which finds out at run time too.
void unreachable(OpView& v) {
  throw Error(ErrorCode::InvalidArgument,
              "the model cannot run on inputs of these shapes: " + v.attr_string("reason", "(no reason recorded)"));
}

}  // namespace

void register_misc_ops(runtime::KernelTable& t) {
  t.add_onnx("wgml", "Unreachable", kernel<unreachable>);
  t.add_onnx("ai.onnx", "LinearAttention", kernel<linear_attention>);
  t.add_onnx("ai.onnx", "BitCast", kernel<bit_cast>);
  t.add_onnx("ai.onnx", "Det", kernel<det>);
  t.add_onnx("ai.onnx", "MaxUnpool", kernel<max_unpool>);
  t.add_onnx("ai.onnx", "AffineGrid", kernel<affine_grid>);
  t.add_onnx("ai.onnx", "Dropout", kernel<dropout>);
  t.add_onnx("ai.onnx", "CenterCropPad", kernel<center_crop_pad>);
  t.add_onnx("ai.onnx", "TfIdfVectorizer", kernel<tfidf_vectorizer>);
  t.add_onnx("ai.onnx", "Col2Im", kernel<col2im>);
}

}  // namespace wgml::backend::cpu::onnx_ops
