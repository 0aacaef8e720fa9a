// The com.microsoft ops of LLM decoders as ONNX Runtime's model builder exports them:
// GroupQueryAttention (KV cache in and out, rotary embedding from cos/sin caches, grouped heads),
// RotaryEmbedding and GatherBlockQuantized (4-bit tied embeddings), lowered as ONNX Runtime's
// contrib op documentation and CPU kernels define them, to nodes the GPU kernels take: Sdpa with a
// boolean mask, Take, element-wise arithmetic, and MLX's affine Dequantize.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <optional>

#include "frontend/onnx/lowering.h"
#include "frontend/onnx/rule_helpers.h"

namespace wgml::frontend::onnx {
namespace {

using namespace ir;

constexpr const char* kMicrosoft = "com.microsoft";

// Sequence lengths, offsets and other index arithmetic run in int32 (seqlens_k's type).
constexpr DType kIndex = DType::Int32;

// max(a, b) of value slots: [a >= b] is (a - b + 2^30) div 2^30 for 0 <= a, b < 2^30, which
// sequence lengths are.
IntOrVid max_of(Lowering& g, IntOrVid a, IntOrVid b) {
  if (!a.is_vid && !b.is_vid) return literal(std::max(a.literal, b.literal));
  const IntOrVid bound = literal(int64_t{1} << 30);
  const IntOrVid a_at_least_b = g.floor_div(g.add(g.sub(a, b), bound), bound);
  return g.add(b, g.mul(g.sub(a, b), a_at_least_b));
}

// [B, S, heads * D] -> [B, S, heads, D].
Tid split_heads(NodeLowering& n, Tid x, const Checked<IntOrVid>& shape, int64_t heads, int64_t head_size) {
  return n.reshape(x, {shape[0], shape[1], literal(heads), literal(head_size)});
}

// The operands of one GroupQueryAttention node, as its attributes and inputs give them.
struct GqaShape {
  int64_t heads = 0, kv_heads = 0, head_size = 0;
  Checked<IntOrVid> query_shape;  // [B, S, hidden]
  IntOrVid past_length;           // keys in each past cache buffer (0 without one)
};

GqaShape gqa_shape(NodeLowering& n) {
  GqaShape s;
  s.heads = n.attr_int("num_heads", 0);
  s.kv_heads = n.attr_int("kv_num_heads", 0);
  if (s.heads <= 0 || s.kv_heads <= 0) n.fail("positive num_heads and kv_num_heads");
  if (s.heads % s.kv_heads != 0) n.fail("num_heads a multiple of kv_num_heads");
  const Value& q = n.in(0);
  if (q.rank() != 3) n.fail("a query of rank 3 ([batch, sequence, hidden])");
  const bool packed = !n.has_input(1);
  if (packed != !n.has_input(2)) n.fail("key and value both present or both absent");
  const int64_t hidden = q.dims[2];
  const int64_t heads_in_query = packed ? s.heads + 2 * s.kv_heads : s.heads;
  if (hidden < 0) n.unsupported("a query hidden size known only at run time");
  if (hidden == 0 || hidden % heads_in_query != 0) n.fail("a query hidden size divisible by its heads");
  s.head_size = hidden / heads_in_query;
  s.query_shape = n.g.shape_of(q);
  const bool has_past = n.has_input(3) && n.has_input(4);
  if (n.has_input(3) != n.has_input(4)) n.fail("past_key and past_value both present or both absent");
  if (has_past && (n.in(3).rank() != 4 || n.in(4).rank() != 4)) n.fail("past_key and past_value of rank 4 (BNSH)");
  s.past_length = has_past ? n.g.dim(n.in(3), 2) : literal(0);
  return s;
}

// The GroupQueryAttention features beyond what decoders exported for the CPU and WebGPU use.
void refuse_unsupported_gqa(NodeLowering& n) {
  static const char* const kInputs[] = {"k_scale", "v_scale", "q_norm_weight", "k_norm_weight", "query_seqlens"};
  for (size_t i = 12; i < n.num_inputs(); ++i)
    if (n.has_input(i)) n.unsupported(std::string("input ") + (i - 12 < std::size(kInputs) ? kInputs[i - 12] : "beyond 16"));
  if (n.wants_output(3)) n.unsupported("the output_qk output");
  if (n.attr_float("softcap", 0) < 0) n.fail("a softcap of 0 (none) or above");
  if (n.attr_int("causal", 1) != 1) n.unsupported("non-causal attention");
  if (n.attr_int("kv_cache_bit_width", 0) != 0) n.unsupported("a quantized KV cache");
  for (const char* a : {"k_quant_type", "v_quant_type"})
    if (n.attr_string(a, "NONE") != "NONE") n.unsupported(std::string(a) + " " + n.attr_string(a, ""));
}

// How scores become probabilities, in onnxruntime's order: scaled, softcapped (cap * tanh(x / cap)),
// plus attention_bias, masked, then a softmax whose denominator may hold a sink logit per head
// (head_sink, or 0 for smooth_softmax) as if a key no value belongs to.
struct ScoreRules {
  float scale;
  float softcap;            // 0: none
  std::optional<Tid> bias;  // broadcasts to [B, heads, S, P]
  std::optional<Tid> sink;  // [1, heads, 1, 1] or 0-D
};

// Attention where SdpaNode's softmax does not fit (a softcap or a sink), composed of matmuls and
// element-wise nodes. q [B, heads, S, D], k and v [B, kv_heads, P, D], `allowed` [B, 1, S, P].

Tid composed_attention(NodeLowering& n, const GqaShape& s, Tid q, Tid k, Tid v, Tid allowed, IntOrVid keys,
                       const ScoreRules& rules, DType t) {
  const IntOrVid batch = s.query_shape[0], seq = s.query_shape[1];
  auto repeat_heads = [&](Tid x) {  // [B, kv_heads, P, D] -> [B, heads, P, D]
    if (s.heads == s.kv_heads) return x;
    const Tid grouped = n.g.new_temp();
    n.g.emit(BroadcastToNode{.x = expand_dims(n, x, 2),
                             .out = grouped,
                             .shape = {batch, literal(s.kv_heads), literal(s.heads / s.kv_heads), keys, literal(s.head_size)}});
    return n.reshape(grouped, {batch, literal(s.heads), keys, literal(s.head_size)});
  };
  const Tid kt = n.transpose(repeat_heads(k), {0, 1, 3, 2});
  Tid scores = matmul_op(n, n.binary<MultiplyNode>(q, n.scalar(rules.scale, t)), kt);
  if (rules.softcap > 0) {
    const Tid cap = n.scalar(rules.softcap, t);
    scores = n.binary<MultiplyNode>(n.unary<TanhNode>(n.binary<DivideNode>(scores, cap)), cap);
  }
  if (rules.bias) scores = n.binary<AddNode>(scores, *rules.bias);
  scores = where_op(n, allowed, scores, n.scalar(-std::numeric_limits<double>::infinity(), t));
  if (rules.sink) {
    const Tid column = n.g.new_temp();
    n.g.emit(BroadcastToNode{.x = *rules.sink, .out = column, .shape = {batch, literal(s.heads), seq, literal(1)}});
    scores = concat_op(n, {scores, column}, 3);
  }
  Tid probs = n.g.new_temp();
  n.g.emit(SoftmaxNode{.x = scores, .out = probs, .axis = -1, .precise = true});
  if (rules.sink) probs = slice_axis(n, probs, 3, literal(0), keys);
  return matmul_op(n, probs, repeat_heads(v));
}

// GroupQueryAttention (ONNX Runtime's contrib op, CPU kernel semantics). Per batch b the past
// holds past_b = seqlens_k[b] + 1 - S keys (0 for the first prompt), right-padded to the buffer's
// length L; present_key/value [B, kv_heads, P, D], P = max(total_sequence_length, L), hold those
// keys, then the S new ones, then zeros. Query i attends keys j <= past_b + i (with
// local_window_size w > 0 only the last w of those, j > past_b + i - w), Q and K rotated at
// positions past_b + i when do_rotary is set. The buffers are built with TakeAlongAxis and Where so
// that each batch entry gets its own offset.
void group_query_attention(NodeLowering& n) {
  refuse_unsupported_gqa(n);
  const GqaShape s = gqa_shape(n);
  const DType t = n.in(0).dtype;
  if (!is_floating(t)) n.fail("a floating-point query");
  const IntOrVid batch = s.query_shape[0], seq = s.query_shape[1];

  // Q, K, V as [B, S, heads, D].
  Tid q, k, v;
  if (!n.has_input(1)) {
    const Tid all = split_heads(n, n.in_tensor(0), s.query_shape, s.heads + 2 * s.kv_heads, s.head_size);
    q = slice_axis(n, all, 2, literal(0), literal(s.heads));
    k = slice_axis(n, all, 2, literal(s.heads), literal(s.heads + s.kv_heads));
    v = slice_axis(n, all, 2, literal(s.heads + s.kv_heads), literal(s.heads + 2 * s.kv_heads));
  } else {
    q = split_heads(n, n.in_tensor(0), s.query_shape, s.heads, s.head_size);
    k = split_heads(n, n.in_tensor(1), n.g.shape_of(n.in(1)), s.kv_heads, s.head_size);
    v = split_heads(n, n.in_tensor(2), n.g.shape_of(n.in(2)), s.kv_heads, s.head_size);
  }

  // past_b = max(0, seqlens_k[b] + 1 - S), as [B, 1, 1, 1].
  const Tid seqlens = n.cast(n.in_tensor(5), n.in(5).dtype, kIndex);
  const Tid past = n.binary<MaximumNode>(
      n.binary<SubtractNode>(n.binary<AddNode>(seqlens, n.scalar(1, kIndex)), scalar_of(n, seq, kIndex)), n.scalar(0, kIndex));
  const Tid past_b = n.reshape(past, {literal(-1), literal(1), literal(1), literal(1)});

  if (n.attr_int("do_rotary", 0) != 0) {
    if (!n.has_input(7) || !n.has_input(8)) n.fail("cos_cache and sin_cache with do_rotary");
    const Value& cos_cache = n.in(7);
    if (cos_cache.rank() != 2 || cos_cache.dims[1] <= 0) n.fail("a cos_cache of rank 2 with a known width");
    const int64_t rot = 2 * cos_cache.dims[1];
    if (rot > s.head_size) n.fail("cos_cache at most head_size / 2 wide");
    // Positions [B, S]: position_ids where given, else past_b + s.
    const Tid positions = n.has_input(9) ? n.cast(n.in_tensor(9), n.in(9).dtype, kIndex)
                                         : n.binary<AddNode>(n.reshape(past, {literal(-1), literal(1)}), arange(n, seq, kIndex));
    const Tid cos = take_rows(n, n.in_tensor(7), positions);
    const Tid sin = take_rows(n, n.in_tensor(8), positions);
    const Rotation r{rot, s.head_size, n.attr_int("rotary_interleaved", 0) != 0};
    q = rotate_heads(n, q, cos, sin, r, t);
    k = rotate_heads(n, k, cos, sin, r, t);
  }
  q = n.transpose(q, {0, 2, 1, 3});
  k = n.transpose(k, {0, 2, 1, 3});
  v = n.transpose(v, {0, 2, 1, 3});

  // The present buffers: key j of batch b is past[j] for j < past_b, new[j - past_b] up to
  // past_b + S, else 0; picked from past and new concatenated (where the past may be empty).
  const std::vector<IntOrVid> total = n.g.int_elements(n.in(6), n.where() + " input 6 (total_sequence_length)");
  if (total.size() != 1) n.fail("a total_sequence_length of one element");
  const IntOrVid present_length = max_of(n.g, total[0], s.past_length);
  const Tid j = n.reshape(arange(n, present_length, kIndex), {literal(1), literal(1), literal(-1), literal(1)});
  const Tid from_new = n.binary<SubtractNode>(j, past_b);  // [B, 1, P, 1]
  const Tid new_index =
      n.binary<AddNode>(scalar_of(n, s.past_length, kIndex),
                        clip_op(n, from_new, n.scalar(0, kIndex), scalar_of(n, n.g.sub(seq, literal(1)), kIndex)));
  Tid index = n.g.new_temp();
  n.g.emit(BroadcastToNode{.x = where_op(n, n.binary<LessNode>(from_new, n.scalar(0, kIndex)), j, new_index),
                           .out = index,
                           .shape = {batch, literal(s.kv_heads), present_length, literal(s.head_size)}});
  const Tid written = n.binary<LessNode>(from_new, scalar_of(n, seq, kIndex));
  auto present = [&](Tid fresh, size_t past_input) {
    const Tid keys = n.has_input(past_input) ? concat_op(n, {n.in_tensor(past_input), fresh}, 2) : fresh;
    const Tid taken = n.g.new_temp();
    n.g.emit(TakeAlongAxisNode{.x = keys, .indices = index, .out = taken, .axis = 2});
    return where_op(n, written, taken, n.scalar(0, t));
  };
  const Tid present_k = present(k, 3), present_v = present(v, 4);
  const Dims present_dims{n.in(0).dims[0], s.kv_heads, kUnknownDim, s.head_size};
  if (n.wants_output(1)) n.set_output(1, present_k, t, present_dims);
  if (n.wants_output(2)) n.set_output(2, present_v, t, present_dims);

  // Query i may see key j where j - i <= past_b and, in a local window of w keys, j - i > past_b - w.
  const Tid key_minus_query = n.binary<SubtractNode>(n.reshape(arange(n, present_length, kIndex), {literal(1), literal(-1)}),
                                                     n.reshape(arange(n, seq, kIndex), {literal(-1), literal(1)}));  // [S, P]
  Tid allowed = n.binary<LessEqualNode>(key_minus_query, past_b);  // [B, 1, S, P]
  if (const int64_t window = n.attr_int("local_window_size", -1); window > 0) {
    const Tid lowest = n.binary<SubtractNode>(past_b, n.scalar(static_cast<double>(window - 1), kIndex));
    allowed = n.binary<LogicalAndNode>(allowed, n.binary<GreaterEqualNode>(key_minus_query, lowest));
  }
  float scale = n.attr_float("scale", 0);
  if (scale == 0) scale = 1.0f / std::sqrt(static_cast<float>(s.head_size));
  ScoreRules rules{scale, n.attr_float("softcap", 0), std::nullopt, std::nullopt};
  if (n.has_input(10)) rules.bias = n.in_tensor(10);
  if (n.has_input(11))
    rules.sink = n.reshape(n.in_tensor(11), {literal(1), literal(s.heads), literal(1), literal(1)});
  else if (n.attr_int("smooth_softmax", 0) != 0)
    rules.sink = n.scalar(0, t);
  Tid y;
  if (rules.softcap > 0 || rules.sink) {
    y = composed_attention(n, s, q, present_k, present_v, allowed, present_length, rules, t);
  } else {  // an attention bias becomes Sdpa's additive mask
    const Tid mask =
        rules.bias ? where_op(n, allowed, *rules.bias, n.scalar(-std::numeric_limits<double>::infinity(), t)) : allowed;
    y = n.g.new_temp();
    n.g.emit(SdpaNode{.q = q, .k = present_k, .v = present_v, .out = y, .scale = scale, .mask = mask});
  }
  const Tid out = n.reshape(n.transpose(y, {0, 2, 1, 3}), {batch, seq, literal(s.heads * s.head_size)});
  n.set_output(0, out, t, {n.in(0).dims[0], n.in(0).dims[1], s.heads * s.head_size});
}

// RotaryEmbedding (com.microsoft): input [B, S, heads * D] or [B, heads, S, D]; position_ids
// [B, S], or one element p giving positions p, p + 1, ...; cos/sin caches [positions, dims / 2].
void rotary_embedding(NodeLowering& n) {
  const Value& x = n.in(0);
  const DType t = x.dtype;
  if (n.attr_int("is_packed_batching", 0) != 0) n.unsupported("is_packed_batching");
  const Value& cos_cache = n.in(2);
  if (cos_cache.rank() != 2 || cos_cache.dims[1] <= 0) n.fail("a cos_cache of rank 2 with a known width");
  const int64_t heads_attr = n.attr_int("num_heads", 0);
  int64_t rot = n.attr_int("rotary_embedding_dim", 0);
  const bool four_d = x.rank() == 4;
  if (!four_d && x.rank() != 3) n.fail("an input of rank 3 or 4");
  const int64_t hidden = four_d ? x.dims[3] : x.dims[2];
  if (hidden < 0) n.unsupported("a hidden size known only at run time");
  // Without num_heads, a 3-D input's heads are as wide as the rotation the caches give.
  const int64_t head_size = four_d ? hidden : heads_attr > 0 ? hidden / heads_attr : 2 * cos_cache.dims[1];
  if (head_size <= 0 || (!four_d && hidden % head_size != 0)) n.fail("a hidden size divisible by num_heads");
  if (rot == 0) rot = head_size;
  if (rot > head_size || rot != 2 * cos_cache.dims[1]) n.fail("rotary_embedding_dim twice the caches' width, at most head_size");

  const auto shape = n.g.shape_of(x);
  const Tid h = four_d ? n.transpose(n.in_tensor(0), {0, 2, 1, 3})
                       : split_heads(n, n.in_tensor(0), shape, hidden / head_size, head_size);  // [B, S, heads, D]
  const Value& ids = n.in(1);
  Tid positions = n.cast(n.in_tensor(1), ids.dtype, kIndex);
  if (ids.dims.size() <= 1) {  // one start position: [1, S]
    if (ids.rank() == 1 && ids.dims[0] != 1) n.fail("position_ids of one element or [batch, sequence]");
    const IntOrVid seq = four_d ? shape[2] : shape[1];
    positions = n.reshape(n.binary<AddNode>(n.reshape(positions, {}), arange(n, seq, kIndex)), {literal(1), literal(-1)});
  }
  const Tid cos = take_rows(n, n.in_tensor(2), positions), sin = take_rows(n, n.in_tensor(3), positions);
  Tid out = rotate_heads(n, h, cos, sin, {rot, head_size, n.attr_int("interleaved", 0) != 0}, t);
  out = four_d ? n.transpose(out, {0, 2, 1, 3}) : n.reshape(out, shape);
  n.set_output(0, out, t, x.dims);
}

// GatherBlockQuantized with uint8 data [rows, K * bits / 8] (gather axis 0, quantized along the
// last): the rows `indices` picks, dequantized, [indices..., K]. The table becomes MLX's affine
// layout once, at load time; per run only the picked rows are taken and dequantized.
void gather_block_quantized(NodeLowering& n) {
  const Value& data = n.in(0);
  const Value& scales = n.in(2);
  if (!data.constant || !scales.constant || (n.has_input(3) && !n.in(3).constant))
    n.unsupported("quantized data, scales or zero points known only at run time");
  if (data.constant->dtype() != DType::UInt8) n.unsupported("data of a type other than uint8 (int4 or uint4)");
  if (data.rank() != 2) n.unsupported("data of rank other than 2");
  if (n.axis(n.attr_int("gather_axis", 0), 2) != 0 || n.axis(n.attr_int("quantize_axis", 1), 2) != 1)
    n.unsupported("gather_axis other than 0 or quantize_axis other than the last");
  const DType t = scales.dtype;
  if (!is_floating(t)) n.fail("floating-point scales");
  const int64_t bits = n.attr_int("bits", 4), block = n.attr_int("block_size", 128);
  if (bits != 2 && bits != 4 && bits != 8) n.unsupported("bits " + std::to_string(bits));
  const int64_t rows = data.dims[0], k = data.dims[1] * (8 / bits);
  const AffineWeights w =
      affine_weights(n, *data.constant, *scales.constant, n.has_input(3) ? &*n.in(3).constant : nullptr, rows, k, bits, block, t);
  const Tid ids = n.reshape(n.in_tensor(1), {literal(-1)});
  const Tid words = take_rows(n, n.g.add_constant(w.words, n.node.input(0) + ".words"), ids);
  const Tid row_scales = take_rows(n, n.g.add_constant(w.scales, n.node.input(2) + ".scales"), ids);
  const Tid row_biases = take_rows(n, n.g.add_constant(w.biases, n.node.input(2) + ".biases"), ids);
  const Tid rows_out = n.g.new_temp();
  n.g.emit(DequantizeNode{.w = words,
                          .scales = row_scales,
                          .out = rows_out,
                          .biases = row_biases,
                          .group_size = static_cast<int32_t>(block),
                          .bits = static_cast<int32_t>(bits),
                          .mode = "affine"});
  std::vector<IntOrVid> shape = n.g.shape_of(n.in(1));
  shape.push_back(literal(k));
  Dims dims = n.in(1).dims;
  dims.push_back(k);
  n.set_output(0, n.reshape(rows_out, shape), t, dims);
}

}  // namespace

void add_contrib_decoder_rules(std::vector<OpRule>& r) {
  r.push_back({kMicrosoft, "GroupQueryAttention", 1, group_query_attention});
  r.push_back({kMicrosoft, "RotaryEmbedding", 1, rotary_embedding});
  r.push_back({kMicrosoft, "GatherBlockQuantized", 1, gather_block_quantized});
}

}  // namespace wgml::frontend::onnx
