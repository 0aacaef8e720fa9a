// DFT and STFT by the definition (O(n^2) per transform), as ONNX defines them: the last input dim
// holds 1 (real) or 2 (real, imaginary) values; outputs are complex pairs, except the real result of
// an inverse one-sided transform. MelWeightMatrix as ONNX's reference builds it.
#include <cmath>
#include <complex>

#include "backend/cpu/onnx/onnx_op.h"
#include "core/elements.h"
#include "core/layout.h"
#include "ir/onnx_dtypes.h"

namespace wgml::backend::cpu::onnx_ops {
namespace {

using runtime::fail;
using Complex = std::complex<double>;

// x_j for j < n (zero beyond the input), forward: X_k = sum_j x_j e^{-2 pi i jk/n}; inverse: the
// conjugate kernel divided by n.
std::vector<Complex> transform(const std::vector<Complex>& x, int64_t n, bool inverse) {
  std::vector<Complex> out(static_cast<size_t>(n));
  const double sign = inverse ? 1.0 : -1.0;
  for (int64_t k = 0; k < n; ++k) {
    Complex acc = 0;
    for (int64_t j = 0; j < n && j < static_cast<int64_t>(x.size()); ++j)
      acc += x[j] * std::polar(1.0, sign * 2.0 * M_PI * static_cast<double>((j * k) % n) / static_cast<double>(n));
    out[k] = inverse ? acc / static_cast<double>(n) : acc;
  }
  return out;
}

// The full spectrum of a real signal from its first n/2 + 1 bins (Hermitian symmetry); the
// imaginary parts of bin 0 and, for even n, bin n/2 do not count.
std::vector<Complex> hermitian(const std::vector<Complex>& half, int64_t n) {
  std::vector<Complex> full(static_cast<size_t>(n), 0.0);
  for (int64_t k = 0; k <= n / 2 && k < static_cast<int64_t>(half.size()); ++k) {
    full[k] = half[k];
    if (k > 0 && n - k != k) full[n - k] = std::conj(half[k]);
  }
  full[0] = full[0].real();
  if (n % 2 == 0 && n / 2 < static_cast<int64_t>(half.size())) full[n / 2] = half[n / 2].real();
  return full;
}

// Applies f to every line of x along `axis` (x's last dim holds the complex parts), writing lines of
// `out_length` values with `out_parts` parts each.
template <class F>
Tensor along_axis(const Tensor& x, int axis, int64_t out_length, int64_t out_parts, F f) {
  const int64_t parts = x.dim(x.rank() - 1);
  if (parts != 1 && parts != 2) fail("the last dim must hold 1 (real) or 2 (complex) values");
  Shape shape = x.shape();
  shape[axis] = out_length;
  shape.back() = out_parts;
  Tensor out(x.dtype(), shape);
  const auto in_strides = contiguous_strides(x.shape()), out_strides = contiguous_strides(shape);
  const int64_t len = x.dim(axis);
  std::vector<Complex> line(static_cast<size_t>(len));
  uint8_t* dst = out.mutable_data();
  for (int64_t base = 0; base < x.numel(); base += parts) {
    if ((base / in_strides[axis]) % len != 0) continue;  // each line once, from its start
    int64_t out_base = 0;
    for (int d = 0; d + 1 < x.rank(); ++d)
      if (d != axis) out_base += ((base / in_strides[d]) % x.dim(d)) * out_strides[d];
    for (int64_t j = 0; j < len; ++j) {
      const int64_t i = base + j * in_strides[axis];
      line[j] = {load_as_double(x.dtype(), x.data(), i), parts == 2 ? load_as_double(x.dtype(), x.data(), i + 1) : 0.0};
    }
    const std::vector<Complex> result = f(line);
    for (int64_t k = 0; k < out_length; ++k) {
      const int64_t o = out_base + k * out_strides[axis];
      store_double(out.dtype(), dst, o, result[k].real());
      if (out_parts == 2) store_double(out.dtype(), dst, o + 1, result[k].imag());
    }
  }
  return out;
}

void dft(OpView& v) {
  const Tensor& x = v.required(0);
  int64_t axis_value = v.opset() < 20 ? v.attr_int("axis", 1) : -2;
  if (v.opset() >= 20 && v.input(2)) axis_value = ints_of(*v.input(2)).at(0);
  const int axis = normalize_axis(static_cast<int>(axis_value), x.rank());
  if (axis == x.rank() - 1) fail("DFT: the axis may not be the last (complex parts) dim");
  const bool inverse = v.attr_int("inverse", 0) != 0, onesided = v.attr_int("onesided", 0) != 0;
  const int64_t len = x.dim(axis);
  int64_t n = inverse && onesided ? 2 * (len - 1) : len;
  if (const Tensor* length = v.input(1)) n = ints_of(*length).at(0);
  if (n < 1) fail("DFT: dft_length must be positive");
  if (inverse && onesided)
    return v.output(
        0, along_axis(x, axis, n, 1, [&](const std::vector<Complex>& line) { return transform(hermitian(line, n), n, true); }));
  const int64_t bins = !inverse && onesided ? n / 2 + 1 : n;
  v.output(0, along_axis(x, axis, bins, 2, [&](const std::vector<Complex>& line) { return transform(line, n, inverse); }));
}

// Frames of frame_length samples every frame_step, weighted by the window, each transformed.
void stft(OpView& v) {
  const Tensor& x = v.required(0);
  if (x.rank() != 3) fail("STFT: expected a signal [batch, length, 1 or 2]");
  const int64_t step = ints_of(v.required(1)).at(0);
  const Tensor* window = v.input(2);
  int64_t frame = x.dim(1);
  if (window) frame = window->numel();
  if (const Tensor* length = v.input(3)) frame = ints_of(*length).at(0);
  if (step < 1 || frame < 1 || frame > x.dim(1)) fail("STFT: frame_step and frame_length must fit the signal");
  const std::vector<double> weights = window ? doubles_of(*window) : std::vector<double>(static_cast<size_t>(frame), 1.0);
  const bool onesided = v.attr_int("onesided", 1) != 0;
  const int64_t frames = 1 + (x.dim(1) - frame) / step, bins = onesided ? frame / 2 + 1 : frame, parts = x.dim(2);
  Tensor out(x.dtype(), {x.dim(0), frames, bins, 2});
  uint8_t* dst = out.mutable_data();
  std::vector<Complex> segment(static_cast<size_t>(frame));
  for (int64_t b = 0; b < x.dim(0); ++b)
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t j = 0; j < frame; ++j) {
        const int64_t i = (b * x.dim(1) + f * step + j) * parts;
        const double w = j < static_cast<int64_t>(weights.size()) ? weights[j] : 0.0;
        segment[j] =
            Complex(load_as_double(x.dtype(), x.data(), i), parts == 2 ? load_as_double(x.dtype(), x.data(), i + 1) : 0.0) * w;
      }
      const std::vector<Complex> spectrum = transform(segment, frame, false);
      for (int64_t k = 0; k < bins; ++k) {
        const int64_t o = ((b * frames + f) * bins + k) * 2;
        store_double(out.dtype(), dst, o, spectrum[k].real());
        store_double(out.dtype(), dst, o + 1, spectrum[k].imag());
      }
    }
  v.output(0, std::move(out));
}

// The mel scale's edges, num_mel_bins + 2 points evenly spaced in mel (the step divides by the
// point count, as ONNX's reference does), as spectrogram bin numbers.
std::vector<int64_t> mel_edges(int64_t mel_bins, int64_t dft_length, int64_t sample_rate, double low_hz, double high_hz) {
  const double low_mel = 2595 * std::log1p(low_hz / 700) / std::log(10.0);
  const double high_mel = 2595 * std::log1p(high_hz / 700) / std::log(10.0);
  const double step = (high_mel - low_mel) / static_cast<double>(mel_bins + 2);
  std::vector<int64_t> edges;
  for (int64_t i = 0; i < mel_bins + 2; ++i) {
    const double hz = 700 * std::expm1((static_cast<double>(i) * step + low_mel) / 2595 * std::log(10.0));
    const double bin = std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate));
    if (!(bin >= 0 && bin <= static_cast<double>(dft_length / 2)))
      fail("MelWeightMatrix: the edge frequencies fall outside the spectrogram's bins");
    edges.push_back(static_cast<int64_t>(bin));
  }
  return edges;
}

// Triangular filters [dft_length / 2 + 1, num_mel_bins]: rising from each mel bin's left edge to
// its center, falling to its right edge.
void mel_weight_matrix(OpView& v) {
  const int64_t mel_bins = ints_of(v.required(0)).at(0), dft_length = ints_of(v.required(1)).at(0);
  const int64_t sample_rate = ints_of(v.required(2)).at(0);
  if (mel_bins < 1 || dft_length < 1 || sample_rate < 1 || mel_bins > (int64_t{1} << 24) || dft_length > (int64_t{1} << 24))
    fail("MelWeightMatrix: num_mel_bins, dft_length and sample_rate must be positive (and below 2^24)");
  const std::vector<int64_t> edge =
      mel_edges(mel_bins, dft_length, sample_rate, doubles_of(v.required(3)).at(0), doubles_of(v.required(4)).at(0));
  const int64_t bins = dft_length / 2 + 1;
  WorkingDoubles working = working_doubles({bins, mel_bins});
  std::vector<double>& w = working.values;
  for (int64_t i = 0; i < mel_bins; ++i) {
    const int64_t left = edge[i], center = edge[i + 1], right = edge[i + 2];
    if (center == left) w[center * mel_bins + i] = 1;
    for (int64_t j = left; center > left && j <= center; ++j)
      w[j * mel_bins + i] = static_cast<double>(j - left) / static_cast<double>(center - left);
    for (int64_t j = center; j < right; ++j)
      w[j * mel_bins + i] = static_cast<double>(right - j) / static_cast<double>(right - center);
  }
  const auto dtype = ir::dtype_from_onnx(static_cast<int32_t>(v.attr_int("output_datatype", 1)));
  if (!dtype) fail("MelWeightMatrix: unsupported output_datatype");
  Tensor out(*dtype, {bins, mel_bins});
  for (size_t i = 0; i < w.size(); ++i) store_double(*dtype, out.mutable_data(), static_cast<int64_t>(i), w[i]);
  v.output(0, std::move(out));
}

}  // namespace

void register_spectral_ops(runtime::KernelTable& t) {
  t.add_onnx("ai.onnx", "DFT", kernel<dft>);
  t.add_onnx("ai.onnx", "STFT", kernel<stft>);
  t.add_onnx("ai.onnx", "MelWeightMatrix", kernel<mel_weight_matrix>);
}

}  // namespace wgml::backend::cpu::onnx_ops
