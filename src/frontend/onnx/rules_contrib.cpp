// ONNX Runtime's contrib ops (domain com.microsoft) that its optimiser and model builder write into
// the models they export, lowered as ONNX Runtime's contrib op documentation defines them: fused
// activations and norms as short compositions, FusedMatMul as a matmul between transposes, and
// MatMulNBits as MLX's affine QuantizedMatmul on its own packed weights.

#include "frontend/onnx/lowering.h"
#include "frontend/onnx/rule_helpers.h"

namespace wgml::frontend::onnx {
namespace {

using namespace ir;

constexpr const char* kMicrosoft = "com.microsoft";

Tid gelu_of(NodeLowering& n, Tid x, const char* approximate) {
  const Tid out = n.g.new_temp();
  n.g.emit(GeluNode{.x = x, .out = out, .approximate = approximate});
  return out;
}

// x plus input `bias` where the node has it.
Tid with_bias(NodeLowering& n, Tid x, size_t bias) { return n.has_input(bias) ? n.binary<AddNode>(x, n.in_tensor(bias)) : x; }

// FastGelu: the tanh approximation of Gelu of X + bias.
void fast_gelu(NodeLowering& n) {
  const Value& x = n.in(0);
  n.set_output(0, gelu_of(n, with_bias(n, n.in_tensor(0), 1), "tanh"), x.dtype, x.dims);
}

// BiasGelu: exact Gelu of A + B.
void bias_gelu(NodeLowering& n) {
  const Value& a = n.in(0);
  n.set_output(0, gelu_of(n, n.binary<AddNode>(n.in_tensor(0), n.in_tensor(1)), "none"), a.dtype,
               broadcast_dims(a.dims, n.in(1).dims));
}

// Gelu (com.microsoft, what ONNX Runtime's optimizer fuses the erf form into): exact Gelu of X.
void exact_gelu(NodeLowering& n) {
  const Value& x = n.in(0);
  n.set_output(0, gelu_of(n, n.in_tensor(0), "none"), x.dtype, x.dims);
}

// QuickGelu: x * sigmoid(alpha * x).
void quick_gelu(NodeLowering& n) {
  const Value& v = n.in(0);
  const Tid x = n.in_tensor(0);
  const Tid scaled = n.binary<MultiplyNode>(x, n.scalar(n.attr_float("alpha", 1.702f), v.dtype));
  n.set_output(0, n.binary<MultiplyNode>(x, n.unary<SigmoidNode>(scaled)), v.dtype, v.dims);
}

// Swaps the last two axes of a value of rank >= 2.
Tid transpose_last_two(NodeLowering& n, Tid t, int rank) {
  std::vector<int> perm;
  for (int d = 0; d < rank; ++d) perm.push_back(d);
  std::swap(perm[rank - 2], perm[rank - 1]);
  return n.transpose(t, perm);
}

// FusedMatMul: alpha * op(A) @ op(B), op transposing the last two axes where transA/transB say.
void fused_mat_mul(NodeLowering& n) {
  const Value& a = n.in(0);
  const Value& b = n.in(1);
  if (a.rank() < 2 || b.rank() < 2) n.unsupported("operands of rank below 2");
  if (n.attr_int("transBatchA", 0) != 0 || n.attr_int("transBatchB", 0) != 0) n.unsupported("transBatchA or transBatchB");
  const bool trans_a = n.attr_int("transA", 0) != 0, trans_b = n.attr_int("transB", 0) != 0;
  const Tid ta = trans_a ? transpose_last_two(n, n.in_tensor(0), a.rank()) : n.in_tensor(0);
  const Tid tb = trans_b ? transpose_last_two(n, n.in_tensor(1), b.rank()) : n.in_tensor(1);
  const Tid product = matmul_op(n, ta, tb);
  const float alpha = n.attr_float("alpha", 1.0f);
  const Tid out = alpha == 1.0f ? product : n.binary<MultiplyNode>(product, n.scalar(alpha, a.dtype));
  Dims dims = broadcast_dims(Dims(a.dims.begin(), a.dims.end() - 2), Dims(b.dims.begin(), b.dims.end() - 2));
  dims.push_back(a.dims[a.rank() - (trans_a ? 1 : 2)]);
  dims.push_back(b.dims[b.rank() - (trans_b ? 2 : 1)]);
  n.set_output(0, out, a.dtype, dims);
}

// x normalized over its last axis (RMS or mean and variance), times gamma, plus beta where given.
Tid normalized_last_axis(NodeLowering& n, Tid x, bool rms, size_t gamma, std::optional<size_t> beta) {
  const float eps = n.attr_float("epsilon", 1e-5f);
  const Tid out = n.g.new_temp();
  const Tid weight = n.in_tensor(gamma);
  if (rms) {
    n.g.emit(RMSNormNode{.x = x, .weight = weight, .out = out, .eps = eps});
    return out;
  }
  std::optional<Tid> bias;
  if (beta && n.has_input(*beta)) bias = n.in_tensor(*beta);
  n.g.emit(LayerNormNode{.x = x, .out = out, .weight = weight, .bias = bias, .eps = eps});
  return out;
}

// SkipLayerNormalization (input, skip, gamma, beta, bias) and SkipSimplifiedLayerNormalization
// (input, skip, gamma, bias): the norm of input + skip + bias, and that sum as output 3. Outputs 1
// and 2 (mean, inverse standard deviation) are for training; ONNX Runtime's CPU kernel leaves them
// unwritten.
template <bool Rms>
void skip_normalization(NodeLowering& n) {
  const Value& x = n.in(0);
  if (n.wants_output(1) || n.wants_output(2)) n.unsupported("the mean and inv_std_var outputs");
  const size_t bias_input = Rms ? 3 : 4;
  const Tid sum = with_bias(n, n.binary<AddNode>(n.in_tensor(0), n.in_tensor(1)), bias_input);
  const Tid y = normalized_last_axis(n, sum, Rms, 2, Rms ? std::nullopt : std::optional<size_t>(3));
  n.set_output(0, y, x.dtype, x.dims);
  n.set_output(3, sum, x.dtype, x.dims);
}

// MatMulNBits: A [..., K] times B^T, B [N, K] quantized in blocks of block_size along K with a
// scale and zero point per block (ONNX Runtime's layout: [N, K / block_size, block_size * bits / 8]
// bytes, values packed from the low bits). Those bytes read as little-endian uint32 words are MLX's
// affine layout, so B becomes a QuantizedMatmul's weights unchanged; (q - zero) * scale is
// scale * q + bias with bias = -zero * scale.
void mat_mul_n_bits(NodeLowering& n) {
  const Value& a = n.in(0);
  const int64_t k = n.attr_int("K", 0), rows = n.attr_int("N", 0), bits = n.attr_int("bits", 4);
  const int64_t block = n.attr_int("block_size", 0);
  if (k <= 0 || rows <= 0) n.fail("positive K and N attributes");
  if (n.has_input(4)) n.unsupported("g_idx (act-order block indices)");
  if (!is_floating(a.dtype)) n.fail("a floating-point A");
  const Value& b = n.in(1);
  const Value& scales = n.in(2);
  if (!b.constant || !scales.constant || (n.has_input(3) && !n.in(3).constant))
    n.unsupported("quantized weights, scales or zero points known only at run time");
  const AffineWeights w = affine_weights(n, *b.constant, *scales.constant, n.has_input(3) ? &*n.in(3).constant : nullptr, rows, k,
                                         bits, block, a.dtype);
  const Tid out = n.g.new_temp();
  n.g.emit(QuantizedMatmulNode{.x = n.in_tensor(0),
                               .w = n.g.add_constant(w.words, n.node.input(1)),
                               .scales = n.g.add_constant(w.scales, n.node.input(2) + ".scales"),
                               .out = out,
                               .biases = n.g.add_constant(w.biases, n.node.input(2) + ".biases"),
                               .group_size = static_cast<int32_t>(block),
                               .bits = static_cast<int32_t>(bits),
                               .mode = "affine",
                               .transpose = true});
  Dims dims = a.dims;
  dims.back() = rows;
  n.set_output(0, with_bias(n, out, 5), a.dtype, dims);
}

}  // namespace

void add_contrib_rules(std::vector<OpRule>& r) {
  auto add = [&](const char* op, LowerFn f) { r.push_back({kMicrosoft, op, 1, f}); };
  add("Gelu", exact_gelu);
  add("FastGelu", fast_gelu);
  add("BiasGelu", bias_gelu);
  add("QuickGelu", quick_gelu);
  add("FusedMatMul", fused_mat_mul);
  add("SkipLayerNormalization", skip_normalization<false>);
  add("SkipSimplifiedLayerNormalization", skip_normalization<true>);
  add("MatMulNBits", mat_mul_n_bits);
}

}  // namespace wgml::frontend::onnx
