// Kept ONNX ops that work element by element or along one axis: integer Div (truncating), Mod
// with fmod, Cast to types the mlx AsType cannot name, BitShift, CumProd, Pad's reflect/wrap
// modes, and TensorScatter.
#include <cmath>
#include <cstring>

#include "backend/cpu/broadcast.h"
#include "backend/cpu/onnx/onnx_op.h"
#include "backend/cpu/onnx/tensor_scatter.h"
#include "core/elements.h"
#include "core/layout.h"
#include "ir/onnx_dtypes.h"

namespace wgml::backend::cpu::onnx_ops {
namespace {

using runtime::fail;

// out = f(a, b) with numpy broadcasting; integers through int64, floats through double.
template <class IntF, class FloatF>
Tensor broadcast_binary(const Tensor& a, const Tensor& b, IntF int_f, FloatF float_f) {
  if (a.dtype() != b.dtype()) fail("operands of one dtype expected");
  const Shape shape = broadcast_shapes(a.shape(), b.shape());
  Tensor out(a.dtype(), shape);
  BroadcastIndex ia(a.shape(), shape), ib(b.shape(), shape);
  uint8_t* dst = out.mutable_data();
  const bool floating = is_floating(a.dtype());
  for (int64_t k = 0; k < out.numel(); ++k, ia.next(), ib.next()) {
    if (floating)
      store_double(out.dtype(), dst, k,
                   float_f(load_as_double(a.dtype(), a.data(), ia.offset()), load_as_double(b.dtype(), b.data(), ib.offset())));
    else
      store_int64(out.dtype(), dst, k,
                  int_f(load_as_int64(a.dtype(), a.data(), ia.offset()), load_as_int64(b.dtype(), b.data(), ib.offset())));
  }
  return out;
}

int64_t checked_divisor(int64_t b) {
  if (b == 0) fail("integer division by zero");
  return b;
}

// ONNX integer Div truncates toward zero, like C.
void div(OpView& v) {
  v.output(0, broadcast_binary(
                  v.required(0), v.required(1), [](int64_t a, int64_t b) { return a / checked_divisor(b); },
                  [](double a, double b) { return a / b; }));
}

// fmod=1: the sign of the dividend (C fmod); fmod=0: the sign of the divisor (Python).
void mod(OpView& v) {
  const bool c_style = v.attr_int("fmod", 0) != 0;
  v.output(0, broadcast_binary(
                  v.required(0), v.required(1),
                  [c_style](int64_t a, int64_t b) {
                    const int64_t r = a % checked_divisor(b);
                    return (!c_style && r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
                  },
                  [c_style](double a, double b) {
                    const double r = std::fmod(a, b);
                    return (!c_style && r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
                  }));
}

void cast_op(OpView& v) {
  const auto to = ir::dtype_from_onnx(static_cast<int32_t>(v.attr_int("to", 0)));
  if (!to) fail("Cast: unsupported target element type " + std::to_string(v.attr_int("to", 0)));
  v.output(0, cast(v.required(0), *to));
}

// Shifts by b in [0, width); other shifts give 0, or -1 for a negative value shifted right.
// Signed values shift right arithmetically; left shifts wrap to the element width on store.
void bit_shift(OpView& v) {
  const bool left = v.attr_string("direction", "") == "LEFT";
  const Tensor& x = v.required(0);
  const int bits = static_cast<int>(dtype_size(x.dtype()) * 8);
  const bool is_signed = is_signed_integral(x.dtype());
  v.output(0, broadcast_binary(
                  x, v.required(1),
                  [left, bits, is_signed](int64_t a, int64_t b) -> int64_t {
                    if (b < 0 || b >= bits) return !left && is_signed && a < 0 ? -1 : 0;
                    if (left) return static_cast<int64_t>(static_cast<uint64_t>(a) << b);
                    return is_signed ? a >> b : static_cast<int64_t>(static_cast<uint64_t>(a) >> b);
                  },
                  [](double, double) -> double { fail("BitShift: expected unsigned integers"); }));
}

// CumProd along `axis` (a scalar input), optionally exclusive and/or reversed.
void cum_prod(OpView& v) {
  const Tensor& x = v.required(0);
  const std::vector<int64_t> axis_value = ints_of(v.required(1));
  if (axis_value.size() != 1) fail("CumProd: axis must be a scalar");
  const int axis = normalize_axis(static_cast<int>(axis_value[0]), x.rank());
  const bool exclusive = v.attr_int("exclusive", 0) != 0, reverse = v.attr_int("reverse", 0) != 0;
  const auto strides = contiguous_strides(x.shape());
  const int64_t len = x.dim(axis), step = strides[axis];
  Tensor out(x.dtype(), x.shape());
  uint8_t* dst = out.mutable_data();
  for (int64_t base = 0; base < x.numel(); ++base) {
    if ((base / step) % len != 0) continue;  // visit each line once, from its first element
    double acc = 1;
    for (int64_t k = 0; k < len; ++k) {
      const int64_t i = base + (reverse ? len - 1 - k : k) * step;
      const double value = load_as_double(x.dtype(), x.data(), i);
      if (!exclusive) acc *= value;
      store_double(x.dtype(), dst, i, acc);
      if (exclusive) acc *= value;
    }
  }
  v.output(0, std::move(out));
}

// Source index along one axis for an output index, or -1 for the constant value.
int64_t pad_source(int64_t out_index, int64_t before, int64_t dim, const std::string& mode) {
  int64_t i = out_index - before;
  if (i >= 0 && i < dim) return i;
  if (mode == "constant" || dim == 0) return -1;
  if (mode == "edge") return i < 0 ? 0 : dim - 1;
  if (mode == "wrap") return ((i % dim) + dim) % dim;
  // reflect: mirror without repeating the edge element.
  if (dim == 1) return 0;
  const int64_t period = 2 * (dim - 1);
  i = ((i % period) + period) % period;
  return i < dim ? i : period - i;
}

void pad(OpView& v) {
  const Tensor& x = v.required(0);
  const std::string mode = v.attr_string("mode", "constant");
  std::vector<int64_t> pads, axes;
  double value = 0;
  if (v.opset() < 11) {
    pads = v.attr_ints(v.opset() < 2 ? "paddings" : "pads");
    value = v.attr_float("value", 0);
  } else {
    pads = ints_of(v.required(1));
    if (const Tensor* c = v.input(2); c && c->numel() > 0) value = load_as_double(c->dtype(), c->data(), 0);
    if (const Tensor* a = v.input(3)) axes = ints_of(*a);
  }
  if (axes.empty())
    for (int d = 0; d < x.rank(); ++d) axes.push_back(d);
  if (pads.size() != 2 * axes.size()) fail("Pad: expected two pads per axis");
  std::vector<int64_t> before(x.rank(), 0), after(x.rank(), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int a = normalize_axis(static_cast<int>(axes[i]), x.rank());
    before[a] = pads[i];
    after[a] = pads[i + axes.size()];
  }
  Shape shape = x.shape();
  for (int d = 0; d < x.rank(); ++d) {
    shape[d] += before[d] + after[d];
    if (shape[d] < 0) fail("Pad: negative pads remove more than the dimension holds");
  }
  Tensor out(x.dtype(), shape);
  const auto in_strides = contiguous_strides(x.shape());
  std::vector<int64_t> index(x.rank(), 0);
  uint8_t* dst = out.mutable_data();
  for (int64_t o = 0; o < out.numel(); ++o) {
    int64_t src = 0;
    for (int d = 0; d < x.rank() && src >= 0; ++d) {
      const int64_t s = pad_source(index[d], before[d], x.dim(d), mode);
      src = s < 0 ? -1 : src + s * in_strides[d];
    }
    if (src < 0)
      store_double(x.dtype(), dst, o, value);
    else
      std::memcpy(dst + o * dtype_size(x.dtype()), x.data() + src * dtype_size(x.dtype()), dtype_size(x.dtype()));
    for (int d = x.rank() - 1; d >= 0 && ++index[d] == shape[d]; --d) index[d] = 0;
  }
  v.output(0, std::move(out));
}

void tensor_scatter(OpView& v) {
  v.output(0, ::wgml::cpu::onnx::tensor_scatter(v.required(0), v.required(1), v.input(2), v.attr_int("axis", -2),
                                                v.attr_string("mode", "linear")));
}

}  // namespace

void register_elementwise_ops(runtime::KernelTable& t) {
  t.add_onnx("ai.onnx", "Div", kernel<div>);
  t.add_onnx("ai.onnx", "Mod", kernel<mod>);
  t.add_onnx("ai.onnx", "Cast", kernel<cast_op>);
  t.add_onnx("ai.onnx", "BitShift", kernel<bit_shift>);
  t.add_onnx("ai.onnx", "CumProd", kernel<cum_prod>);
  t.add_onnx("ai.onnx", "Pad", kernel<pad>);
  t.add_onnx("ai.onnx", "TensorScatter", kernel<tensor_scatter>);
}

}  // namespace wgml::backend::cpu::onnx_ops
