// The com.microsoft ops ONNX Runtime's transformer optimiser fuses BERT-style encoders into:
// EmbedLayerNormalization (word, position and segment embeddings summed and layer-normalized, the
// attention mask reduced to a mask_index) and Attention (packed Q/K/V projection, key padding
// masks, unidirectional), and MultiHeadAttention (projected Q, K and V, cross attention, a KV
// cache), lowered as ONNX Runtime's contrib op documentation and CPU kernels define them, to nodes
// the GPU kernels take: Take, LayerNorm, matmuls and Sdpa with an additive mask.
#include <cmath>
#include <limits>

#include "frontend/onnx/lowering.h"
#include "frontend/onnx/rule_helpers.h"

namespace wgml::frontend::onnx {
namespace {

using namespace ir;

constexpr const char* kMicrosoft = "com.microsoft";
constexpr DType kIndex = DType::Int32;  // mask_index's type

// The rows `ids` picks of the embedding table that input `table` holds ([B, S] -> [B, S, H]).
Tid embedded(NodeLowering& n, size_t table, Tid ids, DType id_type) {
  return take_rows(n, n.in_tensor(table), n.cast(ids, id_type, kIndex));
}

// The sum of x [B, S] over its last axis: [B].
Tid row_sums(NodeLowering& n, Tid x) {
  const Tid out = n.g.new_temp();
  n.g.emit(SumNode{.x = x, .out = out, .axes = {1}, .keepdims = false});
  return out;
}

// EmbedLayerNormalization: LayerNorm(word[input_ids] + position[position_ids] + segment[segment_ids])
// with gamma and beta; position_ids default to 0..S-1. mask_index (output 1) is the number of ones
// in each row of `mask` (0 without a mask), the 1-D key padding Attention takes; output 2 is the sum
// before the norm.
void embed_layer_normalization(NodeLowering& n) {
  const Value& ids = n.in(0);
  if (ids.rank() != 2) n.fail("input_ids of rank 2 ([batch, sequence])");
  const Value& words = n.in(2);
  if (words.rank() != 2) n.fail("a word_embedding of rank 2");
  const DType t = words.dtype;
  const auto shape = n.g.shape_of(ids);
  const Tid positions = n.has_input(8) ? n.cast(n.in_tensor(8), n.in(8).dtype, kIndex)
                                       : n.reshape(arange(n, shape[1], kIndex), {literal(1), literal(-1)});
  Tid sum = n.binary<AddNode>(embedded(n, 2, n.in_tensor(0), ids.dtype), take_rows(n, n.in_tensor(3), positions));
  if (n.has_input(1) != n.has_input(4)) n.fail("segment_ids and segment_embedding both present or both absent");
  if (n.has_input(1)) sum = n.binary<AddNode>(sum, embedded(n, 4, n.in_tensor(1), n.in(1).dtype));
  const Tid y = n.g.new_temp();
  n.g.emit(LayerNormNode{
      .x = sum, .out = y, .weight = n.in_tensor(5), .bias = n.in_tensor(6), .eps = n.attr_float("epsilon", 1e-12f)});
  const Dims dims{ids.dims[0], ids.dims[1], words.dims[1]};
  n.set_output(0, y, t, dims);
  if (n.wants_output(1)) {
    // Ones counted as floats (exact below 2^24 keys) so that the sum runs where float sums run.
    Tid mask_index;
    if (n.has_input(7)) {
      const Tid ones = n.binary<EqualNode>(n.in_tensor(7), n.scalar(1, n.in(7).dtype));
      mask_index = n.convert(row_sums(n, n.convert(ones, DType::Float32)), kIndex);
    } else {
      mask_index = full(n, {shape[0]}, 0, kIndex);
    }
    n.set_output(1, mask_index, kIndex, {ids.dims[0]});
  }
  if (n.wants_output(2)) n.set_output(2, sum, t, dims);
}

// The Attention features beyond what ONNX Runtime's BERT fusions emit.
void refuse_unsupported_attention(NodeLowering& n) {
  if (n.has_input(4)) n.unsupported("a past state");
  if (n.has_input(6)) n.unsupported("past_sequence_length");
  if (n.wants_output(1)) n.unsupported("the present output");
  if (n.attr_int("do_rotary", 0) != 0) n.unsupported("do_rotary");
  if (n.attr_int("past_present_share_buffer", 0) != 0) n.unsupported("past_present_share_buffer");
}

// Which keys each query may see, from the mask in input `input` as ONNX Runtime's CPU kernels read
// it: 1-D [B] key counts (right padding) or [2B] ends then starts, 2-D [B, T] or 3-D [B, S, T] with
// nonzero where allowed. As [B, 1, 1 or S, T] booleans.
Tid allowed_keys(NodeLowering& n, IntOrVid keys, size_t input) {
  const Value& m = n.in(input);
  const Tid mask = n.cast(n.in_tensor(input), m.dtype, kIndex);
  const Tid zero = n.scalar(0, kIndex);
  switch (m.rank()) {
    case 1: {
      // Ends are the first B entries; starts the next B, or 0 where mask_index holds only ends (the
      // mask padded with B zeros makes both cases one slice).
      const int64_t batch = n.in(0).dims[0];
      if (batch >= 0 && m.dims[0] == 3 * batch + 2)
        n.unsupported("a mask of 3 * batch + 2 entries (cumulative sequence lengths)");
      if (batch >= 0 && m.dims[0] >= 0 && m.dims[0] != batch && m.dims[0] != 2 * batch)
        n.fail("a 1-D mask_index of batch or 2 * batch entries");
      const IntOrVid b = n.g.shape_of(n.in(0))[0];
      const Tid padded = concat_op(n, {mask, full(n, {b}, 0, kIndex)}, 0);
      auto column = [&](IntOrVid start) {
        return n.reshape(slice_axis(n, padded, 0, start, n.g.add(start, b)), {literal(-1), literal(1)});
      };
      const Tid j = n.reshape(arange(n, keys, kIndex), {literal(1), literal(-1)});  // [1, T]
      const Tid allowed =
          n.binary<LogicalAndNode>(n.binary<LessNode>(j, column(literal(0))), n.binary<GreaterEqualNode>(j, column(b)));
      return n.reshape(allowed, {literal(-1), literal(1), literal(1), keys});
    }
    case 2:
      return n.reshape(n.binary<GreaterNode>(mask, zero), {literal(-1), literal(1), literal(1), keys});
    case 3:
      return expand_dims(n, n.binary<GreaterNode>(mask, zero), 1);
    default:
      n.unsupported("a mask_index of rank " + std::to_string(m.rank()));
  }
}

// Heads attending: q [B, heads, S, size] against k and v [B, heads, T, size].
struct Heads {
  Tid q, k, v;
  DType dtype;
  IntOrVid queries, keys;
  int64_t head_size;
};
// The inputs that mask an attention node's scores, where it has them.
struct ScoreMasks {
  size_t key_mask, attention_bias;
};

// softmax(scale * Q K^T + mask + attention_bias) V as ONNX Runtime's attention kernels compute it:
// masked keys get mask_filter_value added (not -inf) and, when unidirectional, keys after a query's
// position (the last query aligned with the last key) the lowest float. [B, heads, S, v_size].
Tid attend(NodeLowering& n, const Heads& h, const ScoreMasks& inputs) {
  std::optional<Tid> mask;  // additive, broadcasting to [B, heads, S, T]
  if (n.has_input(inputs.key_mask))
    mask = where_op(n, allowed_keys(n, h.keys, inputs.key_mask), n.scalar(0, h.dtype),
                    n.scalar(n.attr_float("mask_filter_value", -10000.0f), h.dtype));
  if (n.attr_int("unidirectional", 0) != 0) {
    // Key j is later than query i when j - i > T - S.
    const Tid j = n.reshape(arange(n, h.keys, kIndex), {literal(1), literal(-1)});
    const Tid i = n.reshape(arange(n, h.queries, kIndex), {literal(-1), literal(1)});
    const Tid offset = n.binary<SubtractNode>(scalar_of(n, h.keys, kIndex), scalar_of(n, h.queries, kIndex));
    const Tid later = n.binary<GreaterNode>(n.binary<SubtractNode>(j, i), offset);  // [S, T]
    mask = where_op(n, later, n.scalar(std::numeric_limits<float>::lowest(), h.dtype), mask ? *mask : n.scalar(0, h.dtype));
  }
  if (n.has_input(inputs.attention_bias))
    mask = mask ? n.binary<AddNode>(*mask, n.in_tensor(inputs.attention_bias)) : n.in_tensor(inputs.attention_bias);
  float scale = n.attr_float("scale", 0);
  if (scale == 0) scale = 1.0f / std::sqrt(static_cast<float>(h.head_size));
  const Tid y = n.g.new_temp();
  n.g.emit(SdpaNode{.q = h.q, .k = h.k, .v = h.v, .out = y, .scale = scale, .mask = mask});
  return y;
}

// Attention (ONNX Runtime's contrib op, CPU kernel semantics): input [B, S, in] times weights
// [in, q + k + v] plus bias, split by qkv_hidden_sizes (equal thirds by default) into num_heads
// heads; softmax(scale * Q K^T + mask + attention_bias) V with masked keys at mask_filter_value
// (added, as ONNX Runtime does, not -inf) and, when unidirectional, later keys at the lowest float.
void attention(NodeLowering& n) {
  refuse_unsupported_attention(n);
  const Value& x = n.in(0);
  const Value& w = n.in(1);
  const DType t = x.dtype;
  if (!is_floating(t)) n.fail("a floating-point input");
  if (x.rank() != 3 || w.rank() != 2) n.fail("an input of rank 3 and weights of rank 2");
  const int64_t heads = n.attr_int("num_heads", 0);
  if (heads <= 0) n.fail("a positive num_heads");
  std::vector<int64_t> sizes = n.attr_ints("qkv_hidden_sizes");
  if (sizes.empty()) {
    if (w.dims[1] < 0 || w.dims[1] % 3 != 0) n.fail("weights whose width splits into three");
    sizes.assign(3, w.dims[1] / 3);
  }
  if (sizes.size() != 3 || sizes[0] != sizes[1] || sizes[0] % heads != 0 || sizes[2] % heads != 0)
    n.fail("qkv_hidden_sizes of three, Q and K equal, each divisible by num_heads");
  const int64_t head_size = sizes[0] / heads, v_head_size = sizes[2] / heads;

  Tid qkv = matmul_op(n, n.in_tensor(0), n.in_tensor(1));
  if (n.has_input(2)) qkv = n.binary<AddNode>(qkv, n.in_tensor(2));
  const auto shape = n.g.shape_of(x);
  const IntOrVid batch = shape[0], seq = shape[1];
  auto heads_of = [&](int64_t start, int64_t width, int64_t size) {  // -> [B, heads, S, size]
    const Tid part = slice_axis(n, qkv, 2, literal(start), literal(start + width));
    return n.transpose(n.reshape(part, {batch, seq, literal(heads), literal(size)}), {0, 2, 1, 3});
  };
  const Tid q = heads_of(0, sizes[0], head_size), k = heads_of(sizes[0], sizes[1], head_size);
  const Tid v = heads_of(sizes[0] + sizes[1], sizes[2], v_head_size);

  const Tid y = attend(n, {q, k, v, t, seq, seq, head_size}, {.key_mask = 3, .attention_bias = 5});
  const Tid out = n.reshape(n.transpose(y, {0, 2, 1, 3}), {batch, seq, literal(sizes[2])});
  n.set_output(0, out, t, {x.dims[0], x.dims[1], sizes[2]});
}

// A MultiHeadAttention input as heads [B, heads, length, size]: [B, length, heads * size] split,
// plus `bias` where given, or already [B, heads, length, size] (BNSH; then no bias may apply).
Tid heads_of_input(NodeLowering& n, size_t input, int64_t heads, std::optional<Tid> bias) {
  const Value& x = n.in(input);
  if (x.rank() == 4) {
    if (bias) n.unsupported("a bias with key and value given as heads (BNSH)");
    return n.in_tensor(input);
  }
  if (x.rank() != 3 || (x.dims[2] >= 0 && x.dims[2] % heads != 0))
    n.fail("query, key and value of rank 3 with a width divisible by num_heads, or key and value of rank 4");
  Tid projected = n.in_tensor(input);
  if (bias) projected = n.binary<AddNode>(projected, *bias);
  const auto shape = n.g.shape_of(x);
  return n.transpose(n.reshape(projected, {shape[0], shape[1], literal(heads), literal(-1)}), {0, 2, 1, 3});
}

// MultiHeadAttention (ONNX Runtime's contrib op, CPU kernel semantics): query [B, S, D], key and
// value [B, L, D] / [B, L, D_v] or, for cross attention, already heads [B, heads, L, size]; bias
// [D + D + D_v] added to the three projections; past_key/past_value [B, heads, P, size] before the
// new keys (present_key/present_value are what was attended); key_padding_mask, attention_bias,
// unidirectional (the last query aligned with the last key) as Attention has them.
void multi_head_attention(NodeLowering& n) {
  const Value& query = n.in(0);
  const DType t = query.dtype;
  if (!is_floating(t)) n.fail("a floating-point query");
  if (!n.has_input(1) || !n.has_input(2)) n.unsupported("packed QKV or packed KV (key or value absent)");
  if (n.has_input(8) || n.has_input(9)) n.unsupported("past_sequence_length or cache_indirection (beam search)");
  if (n.has_input(6) != n.has_input(7)) n.fail("past_key and past_value both present or both absent");
  if (n.wants_output(3)) n.unsupported("the qk output");
  const int64_t heads = n.attr_int("num_heads", 0);
  if (heads <= 0) n.fail("a positive num_heads");
  if (query.rank() != 3 || query.dims[2] < 0 || query.dims[2] % heads != 0)
    n.fail("a query [batch, sequence, hidden] with a known hidden size divisible by num_heads");
  const int64_t hidden = query.dims[2], head_size = hidden / heads;
  std::optional<Tid> q_bias, k_bias, v_bias;
  if (n.has_input(3)) {
    const Value& bias = n.in(3);
    if (bias.rank() != 1 || bias.dims[0] < 2 * hidden) n.fail("a bias [hidden + hidden + v_hidden]");
    q_bias = slice_axis(n, n.in_tensor(3), 0, literal(0), literal(hidden));
    k_bias = slice_axis(n, n.in_tensor(3), 0, literal(hidden), literal(2 * hidden));
    v_bias = slice_axis(n, n.in_tensor(3), 0, literal(2 * hidden), literal(bias.dims[0]));
  }
  const Tid q = heads_of_input(n, 0, heads, q_bias);
  Tid k = heads_of_input(n, 1, heads, k_bias), v = heads_of_input(n, 2, heads, v_bias);
  if (n.has_input(6)) {
    k = concat_op(n, {n.in_tensor(6), k}, 2);
    v = concat_op(n, {n.in_tensor(7), v}, 2);
  }
  const auto q_shape = n.g.shape_of(query);
  IntOrVid keys = n.g.dim(n.in(1), n.in(1).rank() == 4 ? 2 : 1);
  if (n.has_input(6)) keys = n.g.add(n.g.dim(n.in(6), 2), keys);
  const Tid y = attend(n, {q, k, v, t, q_shape[1], keys, head_size}, {.key_mask = 4, .attention_bias = 5});
  const Tid out = n.reshape(n.transpose(y, {0, 2, 1, 3}), {q_shape[0], q_shape[1], literal(-1)});
  const int64_t v_hidden = n.in(2).rank() == 4 && n.in(2).dims[3] >= 0 ? heads * n.in(2).dims[3]
                           : n.in(2).rank() == 3                       ? n.in(2).dims[2]
                                                                       : kUnknownDim;
  n.set_output(0, out, t, {query.dims[0], query.dims[1], v_hidden});
  if (n.wants_output(1)) n.set_output(1, k, t, {query.dims[0], heads, kUnknownDim, head_size});
  if (n.wants_output(2)) n.set_output(2, v, t, {query.dims[0], heads, kUnknownDim, kUnknownDim});
}

}  // namespace

void add_contrib_encoder_rules(std::vector<OpRule>& r) {
  r.push_back({kMicrosoft, "EmbedLayerNormalization", 1, embed_layer_normalization});
  r.push_back({kMicrosoft, "Attention", 1, attention});
  r.push_back({kMicrosoft, "MultiHeadAttention", 1, multi_head_attention});
}

}  // namespace wgml::frontend::onnx
