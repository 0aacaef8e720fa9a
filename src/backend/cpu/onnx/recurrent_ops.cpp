// RNN, GRU and LSTM with ONNX's default activations (the frontend refuses others): one time step
// after another, each direction on its own, in double precision. Gate order as ONNX lays out W, R
// and B: RNN one gate; GRU z, r, h; LSTM i, o, f, c (peepholes P: i, o, f).
#include <algorithm>
#include <cmath>

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

  double clipped(double v) const { return clip > 0 ? std::clamp(v, -clip, clip) : v; }

  // x_t . W[row] + h . R[row] for one batch row.
  double input_part(int64_t t, int64_t b, int64_t row) const {
    double acc = 0;
    for (int64_t k = 0; k < s.input; ++k) acc += x[(t * s.batch + b) * s.input + k] * w[row * s.input + k];
    return acc;
  }
  double hidden_part(const std::vector<double>& h, int64_t b, int64_t row) const {
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
    for (int64_t i = 0; i < s.seq; ++i) {
      const int64_t t = reverse ? s.seq - 1 - i : i;
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

template <Cell C>
void recurrent(OpView& v) {
  const Tensor& x_in = v.required(0);
  const Tensor& w_in = v.required(1);
  const Tensor& r_in = v.required(2);
  const bool batch_first = v.attr_int("layout", 0) != 0;
  const std::string direction = v.attr_string("direction", "forward");
  if (x_in.rank() != 3 || w_in.rank() != 3 || r_in.rank() != 3) fail("X, W and R must have rank 3");
  const int gates = gates_of(C);
  Sizes s{batch_first ? x_in.dim(1) : x_in.dim(0), batch_first ? x_in.dim(0) : x_in.dim(1), x_in.dim(2), r_in.dim(2),
          w_in.dim(0)};
  const int64_t expected_directions = direction == "bidirectional" ? 2 : 1;
  if (s.directions != expected_directions || w_in.dim(1) != gates * s.hidden || w_in.dim(2) != s.input ||
      r_in.dim(0) != s.directions || r_in.dim(1) != gates * s.hidden)
    fail("W and R do not match the direction, hidden size and input size");
  if (const Tensor* lengths = v.input(4))
    for (int64_t length : ints_of(*lengths))
      if (length != s.seq) fail("sequence_lens shorter than the sequence are not supported");
  std::vector<double> x = doubles_of(x_in);
  if (batch_first) x = swap_leading(x, s.batch, s.seq, s.input);
  const std::vector<double> w = doubles_of(w_in), r = doubles_of(r_in);
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
                      w.data() + dir * gh * s.input,
                      r.data() + dir * gh * s.hidden,
                      bias.data() + dir * 2 * gh,
                      bias.data() + dir * 2 * gh + gh,
                      peep.data() + dir * 3 * s.hidden};
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

}  // namespace

void register_recurrent_ops(runtime::KernelTable& t) {
  t.add_onnx("ai.onnx", "RNN", kernel<recurrent<Cell::Rnn>>);
  t.add_onnx("ai.onnx", "GRU", kernel<recurrent<Cell::Gru>>);
  t.add_onnx("ai.onnx", "LSTM", kernel<recurrent<Cell::Lstm>>);
}

}  // namespace wgml::backend::cpu::onnx_ops
