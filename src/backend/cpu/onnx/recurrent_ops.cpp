// RNN, GRU and LSTM with ONNX's default activations (the frontend refuses others): one time step
// after another, each direction on its own, in double precision. Gate order as ONNX lays out W, R
// and B: RNN one gate; GRU z, r, h; LSTM i, o, f, c (peepholes P: i, o, f). ONNX Runtime's
// DynamicQuantizeLSTM is the LSTM with its products taken as ONNX Runtime's quantized GEMM takes
// them (QuantizedWeights below).
#include <algorithm>
#include <cmath>
#include <optional>
#include <span>

#include "backend/cpu/onnx/onnx_op.h"
#include "core/elements.h"

namespace wgml::backend::cpu::onnx_ops {
namespace {

using runtime::fail;

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

enum class Cell { Rnn, Gru, Lstm };

int gates_of(Cell c) { return c == Cell::Rnn ? 1 : c == Cell::Gru ? 3 : 4; }

// Reads a tensor as doubles; absent optional tensors read as zeros of `size`.
std::vector<double> values_or_zeros(const Tensor* t, size_t size) {
  if (!t) return std::vector<double>(size, 0.0);
  if (static_cast<size_t>(t->numel()) != size)
    fail("an optional input has " + std::to_string(t->numel()) + " elements, expected " + std::to_string(size));
  return doubles_of(*t);
}

struct Sizes {
  int64_t seq, batch, input, hidden, directions;
};

// One direction's W or R of a DynamicQuantizeLSTM, [K, gates * hidden] as it stores them: each
// weight less its zero point, and the scale of each column (one per tensor, or per column).
struct QuantizedWeights {
  std::vector<int32_t> centered;
  std::vector<float> scales;
  int64_t k = 0, n = 0;
};

// The activations of one product (all of X, or h at one step) quantized to uint8 as ONNX Runtime's
// quantized GEMM does: the range of the values and 0 in 255 steps, in float32, rounded half to
// even; each value less the zero point.
struct QuantizedActivations {
  std::vector<int32_t> centered;
  float scale = 1.0f;
};

// v saturated to [0, 255], NaN (from an infinite or NaN activation) to 0: no value outside int32
// is ever converted.
float saturated_byte(float v) { return v >= 0.0f ? std::min(v, 255.0f) : 0.0f; }

QuantizedActivations quantize_activations(std::span<const double> a) {
  float lo = 0.0f, hi = 0.0f;
  for (double v : a) {
    lo = std::min(lo, static_cast<float>(v));
    hi = std::max(hi, static_cast<float>(v));
  }
  QuantizedActivations q;
  q.scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  const float zero = std::nearbyint(saturated_byte(0.0f - lo / q.scale));
  q.centered.reserve(a.size());
  for (double v : a)
    q.centered.push_back(static_cast<int32_t>(saturated_byte(std::nearbyint(static_cast<float>(v) / q.scale) + zero) - zero));
  return q;
}

// Row `row` of the activations times column `col` of the weights: an integer sum, then times the
// activations' scale times the column's, in float32.
double quantized_product(const QuantizedActivations& a, int64_t row, const QuantizedWeights& w, int64_t col) {
  int64_t sum = 0;
  for (int64_t k = 0; k < w.k; ++k)
    sum += int64_t{a.centered[static_cast<size_t>(row * w.k + k)]} * w.centered[static_cast<size_t>(k * w.n + col)];
  return static_cast<float>(sum) * (a.scale * w.scales[static_cast<size_t>(col)]);
}

// Runs one direction over the sequence, writing Y[t][dir] and the final h (and c).
struct Direction {
  Cell cell;
  const Sizes& s;
  int dir;
  bool linear_before_reset;
  double clip;                   // 0: none
  const std::vector<double>& x;  // [seq, batch, input]
  const double* w;               // [gates*hidden, input]
  const double* r;               // [gates*hidden, hidden]
  const double* wb;              // [gates*hidden]
  const double* rb;              // [gates*hidden]
  const double* p;               // [3*hidden]
  // DynamicQuantizeLSTM: W and R of this direction (w and r are then unused), and the quantized
  // activations: the whole sequence's X at once, as ONNX Runtime quantizes it, and the current
  // step's h one batch row at a time. (ONNX Runtime quantizes h over the rows each of its threads
  // takes, so its results depend on its thread count when the batch has several rows; per row,
  // every sequence's result is its own, and a batch of one agrees with any thread count.)
  const QuantizedWeights* quantized_w = nullptr;
  const QuantizedWeights* quantized_r = nullptr;
  mutable std::optional<QuantizedActivations> quantized_x;
  mutable std::vector<QuantizedActivations> quantized_h;

  double clipped(double v) const { return clip > 0 ? std::clamp(v, -clip, clip) : v; }

  // x_t . W[row] + h . R[row] for one batch row.
  double input_part(int64_t t, int64_t b, int64_t row) const {
    if (quantized_w) return quantized_product(*quantized_x, t * s.batch + b, *quantized_w, row);
    double acc = 0;
    for (int64_t k = 0; k < s.input; ++k) acc += x[(t * s.batch + b) * s.input + k] * w[row * s.input + k];
    return acc;
  }
  // h . R[row]; a DynamicQuantizeLSTM reads the step's quantized h (h is the step's state).
  double hidden_part(const std::vector<double>& h, int64_t b, int64_t row) const {
    if (quantized_r) return quantized_product(quantized_h[static_cast<size_t>(b)], 0, *quantized_r, row);
    double acc = 0;
    for (int64_t k = 0; k < s.hidden; ++k) acc += h[b * s.hidden + k] * r[row * s.hidden + k];
    return acc;
  }

  double gate(int64_t t, int64_t b, const std::vector<double>& h, int64_t row) const {
    return input_part(t, b, row) + hidden_part(h, b, row) + wb[row] + rb[row];
  }

  // The new hidden (and cell) state of batch row b at time t.
  void step(int64_t t, int64_t b, const std::vector<double>& h, const std::vector<double>& c, std::vector<double>& next_h,
            std::vector<double>& next_c) const {
    const int64_t H = s.hidden;
    if (cell == Cell::Rnn) {
      for (int64_t j = 0; j < H; ++j) next_h[b * H + j] = std::tanh(clipped(gate(t, b, h, j)));
      return;
    }
    if (cell == Cell::Gru) {
      std::vector<double> reset(H), reset_h(h.size(), 0.0);
      for (int64_t j = 0; j < H; ++j) {
        reset[j] = sigmoid(clipped(gate(t, b, h, H + j)));
        reset_h[b * H + j] = reset[j] * h[b * H + j];
      }
      for (int64_t j = 0; j < H; ++j) {
        const int64_t row = 2 * H + j;
        // The reset gate scales h before the product, or (linear_before_reset) the product itself.
        const double recurrent =
            linear_before_reset ? reset[j] * (hidden_part(h, b, row) + rb[row]) : hidden_part(reset_h, b, row) + rb[row];
        const double candidate = std::tanh(clipped(input_part(t, b, row) + wb[row] + recurrent));
        const double z = sigmoid(clipped(gate(t, b, h, j)));
        next_h[b * H + j] = (1 - z) * candidate + z * h[b * H + j];
      }
      return;
    }
    for (int64_t j = 0; j < H; ++j) {
      const int64_t hj = b * H + j;
      const double i = sigmoid(clipped(gate(t, b, h, j) + p[j] * c[hj]));
      const double f = sigmoid(clipped(gate(t, b, h, 2 * H + j) + p[2 * H + j] * c[hj]));
      const double candidate = std::tanh(clipped(gate(t, b, h, 3 * H + j)));
      next_c[hj] = f * c[hj] + i * candidate;
      const double o = sigmoid(clipped(gate(t, b, h, H + j) + p[H + j] * next_c[hj]));
      next_h[hj] = o * std::tanh(next_c[hj]);
    }
  }

  void run(bool reverse, std::vector<double>& h, std::vector<double>& c, std::vector<double>& y) const {
    std::vector<double> next_h(h.size()), next_c(c.size());
    if (quantized_w) quantized_x = quantize_activations(x);
    for (int64_t i = 0; i < s.seq; ++i) {
      const int64_t t = reverse ? s.seq - 1 - i : i;
      if (quantized_r) {
        quantized_h.clear();
        for (int64_t b = 0; b < s.batch; ++b)
          quantized_h.push_back(quantize_activations(
              std::span<const double>(h).subspan(static_cast<size_t>(b * s.hidden), static_cast<size_t>(s.hidden))));
      }
      for (int64_t b = 0; b < s.batch; ++b) step(t, b, h, c, next_h, next_c);
      h = next_h;
      if (cell == Cell::Lstm) c = next_c;
      for (int64_t k = 0; k < s.batch * s.hidden; ++k) y[(t * s.directions + dir) * s.batch * s.hidden + k] = h[k];
    }
  }
};

// Swaps the first two axes of a row-major [a, b, rest] block.
std::vector<double> swap_leading(const std::vector<double>& v, int64_t a, int64_t b, int64_t rest) {
  std::vector<double> out(v.size());
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j)
      for (int64_t k = 0; k < rest; ++k) out[(j * a + i) * rest + k] = v[(i * b + j) * rest + k];
  return out;
}

Tensor tensor_of(DType t, Shape shape, const std::vector<double>& v) {
  Tensor out(t, std::move(shape));
  uint8_t* dst = out.mutable_data();
  for (size_t i = 0; i < v.size(); ++i) store_double(t, dst, static_cast<int64_t>(i), v[i]);
  return out;
}

// The weights of every direction: W [dirs, gates * hidden, input] and R [dirs, gates * hidden,
// hidden] as doubles, or (DynamicQuantizeLSTM) one direction's quantized W and R each.
struct RecurrentWeights {
  std::vector<double> w, r;
  std::vector<QuantizedWeights> quantized_w, quantized_r;
};

// X's sizes; `input` and `hidden` from the weights.
Sizes sizes_of(const Tensor& x, bool batch_first, int64_t input, int64_t hidden, int64_t directions) {
  return Sizes{batch_first ? x.dim(1) : x.dim(0), batch_first ? x.dim(0) : x.dim(1), input, hidden, directions};
}

void check_sequence(OpView& v, const Tensor& x, const Sizes& s, const std::string& direction) {
  if (x.dim(2) != s.input) fail("X's input size does not match the weights'");
  if (s.directions != (direction == "bidirectional" ? 2 : 1)) fail("W and R do not match the direction");
  if (const Tensor* lengths = v.input(4))
    for (int64_t length : ints_of(*lengths))
      if (length != s.seq) fail("sequence_lens shorter than the sequence are not supported");
}

template <Cell C>
void run_recurrent(OpView& v, const Sizes& s, const RecurrentWeights& weights) {
  const Tensor& x_in = v.required(0);
  const bool batch_first = v.attr_int("layout", 0) != 0;
  const std::string direction = v.attr_string("direction", "forward");
  check_sequence(v, x_in, s, direction);
  const int gates = gates_of(C);
  std::vector<double> x = doubles_of(x_in);
  if (batch_first) x = swap_leading(x, s.batch, s.seq, s.input);
  const std::vector<double>& w = weights.w;
  const std::vector<double>& r = weights.r;
  const bool quantized = !weights.quantized_w.empty();
  const std::vector<double> bias = values_or_zeros(v.input(3), static_cast<size_t>(s.directions * 2 * gates * s.hidden));
  const size_t state = static_cast<size_t>(s.directions * s.batch * s.hidden);
  const size_t h_input = 5, c_input = 6, p_input = 7;
  std::vector<double> h0 = values_or_zeros(v.input(h_input), state);
  std::vector<double> c0 = C == Cell::Lstm ? values_or_zeros(v.input(c_input), state) : std::vector<double>(state, 0.0);
  if (batch_first) {
    h0 = swap_leading(h0, s.batch, s.directions, s.hidden);
    c0 = swap_leading(c0, s.batch, s.directions, s.hidden);
  }
  const std::vector<double> peep = C == Cell::Lstm
                                       ? values_or_zeros(v.input(p_input), static_cast<size_t>(s.directions * 3 * s.hidden))
                                       : std::vector<double>(static_cast<size_t>(s.directions * 3 * s.hidden), 0.0);
  std::vector<double> y(static_cast<size_t>(s.seq * s.directions * s.batch * s.hidden), 0.0);
  std::vector<double> yh(state), yc(state);
  const int64_t gh = gates * s.hidden, block = s.batch * s.hidden;
  for (int dir = 0; dir < s.directions; ++dir) {
    const Direction d{C,
                      s,
                      dir,
                      v.attr_int("linear_before_reset", 0) != 0,
                      v.attr_float("clip", 0),
                      x,
                      quantized ? nullptr : w.data() + dir * gh * s.input,
                      quantized ? nullptr : r.data() + dir * gh * s.hidden,
                      bias.data() + dir * 2 * gh,
                      bias.data() + dir * 2 * gh + gh,
                      peep.data() + dir * 3 * s.hidden,
                      quantized ? &weights.quantized_w[static_cast<size_t>(dir)] : nullptr,
                      quantized ? &weights.quantized_r[static_cast<size_t>(dir)] : nullptr,
                      std::nullopt,
                      {}};
    std::vector<double> h(h0.begin() + dir * block, h0.begin() + (dir + 1) * block);
    std::vector<double> c(c0.begin() + dir * block, c0.begin() + (dir + 1) * block);
    d.run(direction == "reverse" || dir == 1, h, c, y);
    std::copy(h.begin(), h.end(), yh.begin() + dir * block);
    std::copy(c.begin(), c.end(), yc.begin() + dir * block);
  }
  const DType t = x_in.dtype();
  if (batch_first) {
    // Y [seq, dirs, batch, hidden] -> [batch, seq, dirs, hidden]; states [dirs, batch, hidden] -> [batch, dirs, hidden].
    std::vector<double> yb(y.size());
    for (int64_t q = 0; q < s.seq; ++q)
      for (int64_t dd = 0; dd < s.directions; ++dd)
        for (int64_t b = 0; b < s.batch; ++b)
          for (int64_t j = 0; j < s.hidden; ++j)
            yb[((b * s.seq + q) * s.directions + dd) * s.hidden + j] = y[((q * s.directions + dd) * s.batch + b) * s.hidden + j];
    v.output(0, tensor_of(t, {s.batch, s.seq, s.directions, s.hidden}, yb));
    v.output(1, tensor_of(t, {s.batch, s.directions, s.hidden}, swap_leading(yh, s.directions, s.batch, s.hidden)));
    v.output(2, tensor_of(t, {s.batch, s.directions, s.hidden}, swap_leading(yc, s.directions, s.batch, s.hidden)));
    return;
  }
  v.output(0, tensor_of(t, {s.seq, s.directions, s.batch, s.hidden}, y));
  v.output(1, tensor_of(t, {s.directions, s.batch, s.hidden}, yh));
  v.output(2, tensor_of(t, {s.directions, s.batch, s.hidden}, yc));
}

template <Cell C>
void recurrent(OpView& v) {
  const Tensor& x = v.required(0);
  const Tensor& w = v.required(1);
  const Tensor& r = v.required(2);
  if (x.rank() != 3 || w.rank() != 3 || r.rank() != 3) fail("X, W and R must have rank 3");
  const int64_t gates = gates_of(C), hidden = r.dim(2);
  if (w.dim(1) != gates * hidden || r.dim(0) != w.dim(0) || r.dim(1) != gates * hidden)
    fail("W and R do not match the hidden size");
  run_recurrent<C>(v, sizes_of(x, v.attr_int("layout", 0) != 0, w.dim(2), hidden, w.dim(0)),
                   RecurrentWeights{doubles_of(w), doubles_of(r), {}, {}});
}

// Direction `dir` of a DynamicQuantizeLSTM weight [dirs, K, 4 * hidden] with its scale and zero
// point ([dirs] or [dirs, 4 * hidden]; no zero point: 0).
QuantizedWeights quantized_weights(const Tensor& t, const Tensor& scale, const Tensor* zero_point, int64_t dir) {
  const auto is_byte = [](DType d) { return d == DType::Int8 || d == DType::UInt8; };
  if (!is_byte(t.dtype()) || (zero_point && !is_byte(zero_point->dtype())) || !is_floating(scale.dtype()))
    fail("int8 or uint8 weights and zero points with floating-point scales");
  QuantizedWeights q{{}, {}, t.dim(1), t.dim(2)};
  const int64_t directions = t.dim(0);
  const bool per_column = scale.rank() == 2;
  if (!(scale.rank() == 1 && scale.dim(0) == directions) && !(per_column && scale.dim(0) == directions && scale.dim(1) == q.n))
    fail("a weight scale of shape [directions] or [directions, 4 * hidden]");
  if (zero_point && zero_point->shape() != scale.shape()) fail("a weight zero point of its scale's shape");
  const std::vector<double> values = doubles_of(t), scales = doubles_of(scale);
  const std::vector<double> zeros = zero_point ? doubles_of(*zero_point) : std::vector<double>(scales.size(), 0.0);
  for (int64_t col = 0; col < q.n; ++col)
    q.scales.push_back(static_cast<float>(scales[static_cast<size_t>(per_column ? dir * q.n + col : dir)]));
  q.centered.resize(static_cast<size_t>(q.k * q.n));
  for (int64_t k = 0; k < q.k; ++k)
    for (int64_t col = 0; col < q.n; ++col) {
      const double zero = zeros[static_cast<size_t>(per_column ? dir * q.n + col : dir)];
      q.centered[static_cast<size_t>(k * q.n + col)] =
          static_cast<int32_t>(values[static_cast<size_t>((dir * q.k + k) * q.n + col)] - zero);
    }
  return q;
}

// DynamicQuantizeLSTM (ONNX Runtime's contrib op): X, W [dirs, input, 4 * hidden], R [dirs,
// hidden, 4 * hidden] of int8 or uint8, B, sequence_lens, initial_h, initial_c, P, W_scale,
// W_zero_point, R_scale, R_zero_point.
void dynamic_quantize_lstm(OpView& v) {
  const Tensor& x = v.required(0);
  const Tensor& w = v.required(1);
  const Tensor& r = v.required(2);
  if (x.rank() != 3 || w.rank() != 3 || r.rank() != 3) fail("X, W and R must have rank 3");
  const int64_t hidden = r.dim(1);
  if (w.dim(2) != 4 * hidden || r.dim(2) != 4 * hidden || r.dim(0) != w.dim(0))
    fail("W [directions, input, 4 * hidden] and R [directions, hidden, 4 * hidden]");
  RecurrentWeights weights;
  for (int64_t dir = 0; dir < w.dim(0); ++dir) {
    weights.quantized_w.push_back(quantized_weights(w, v.required(8), v.input(9), dir));
    weights.quantized_r.push_back(quantized_weights(r, v.required(10), v.input(11), dir));
  }
  run_recurrent<Cell::Lstm>(v, sizes_of(x, v.attr_int("layout", 0) != 0, w.dim(1), hidden, w.dim(0)), weights);
}

}  // namespace

void register_recurrent_ops(runtime::KernelTable& t) {
  t.add_onnx("ai.onnx", "RNN", kernel<recurrent<Cell::Rnn>>);
  t.add_onnx("ai.onnx", "GRU", kernel<recurrent<Cell::Gru>>);
  t.add_onnx("ai.onnx", "LSTM", kernel<recurrent<Cell::Lstm>>);
  t.add_onnx("com.microsoft", "DynamicQuantizeLSTM", kernel<dynamic_quantize_lstm>);
}

}  // namespace wgml::backend::cpu::onnx_ops
