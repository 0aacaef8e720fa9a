// The com.microsoft ops ONNX Runtime's transformer optimiser fuses BERT-style encoders into:
// EmbedLayerNormalization (word, position and segment embeddings summed and layer-normalized, the
// attention mask reduced to a mask_index) and Attention (packed Q/K/V projection, key padding
// masks, unidirectional), lowered as ONNX Runtime's contrib op documentation and CPU kernels define
// them, to nodes the GPU kernels take: Take, LayerNorm, matmuls and Sdpa with an additive mask.
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

// Which keys each query may see, from mask_index as ONNX Runtime's CPU kernel reads it: 1-D [B] key
// counts (right padding) or [2B] ends then starts, 2-D [B, T] or 3-D [B, S, T] with nonzero where
// allowed. As [B, 1, 1 or S, T] booleans.
Tid allowed_keys(NodeLowering& n, IntOrVid keys) {
  const Value& m = n.in(3);
  const Tid mask = n.cast(n.in_tensor(3), m.dtype, kIndex);
  const Tid zero = n.scalar(0, kIndex);
  switch (m.rank()) {
    case 1: {
      // Ends are the first B entries; starts the next B, or 0 where mask_index holds only ends (the
      // mask padded with B zeros makes both cases one slice).
      const int64_t batch = n.in(0).dims[0];
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

  std::optional<Tid> mask;  // additive, broadcasting to [B, heads, S, S]
  if (n.has_input(3))
    mask = where_op(n, allowed_keys(n, seq), n.scalar(0, t), n.scalar(n.attr_float("mask_filter_value", -10000.0f), t));
  if (n.attr_int("unidirectional", 0) != 0) {
    const Tid later = n.binary<GreaterNode>(n.reshape(arange(n, seq, kIndex), {literal(1), literal(-1)}),
                                            n.reshape(arange(n, seq, kIndex), {literal(-1), literal(1)}));  // [S, S]
    mask = where_op(n, later, n.scalar(std::numeric_limits<float>::lowest(), t), mask ? *mask : n.scalar(0, t));
  }
  if (n.has_input(5)) mask = mask ? n.binary<AddNode>(*mask, n.in_tensor(5)) : n.in_tensor(5);
  float scale = n.attr_float("scale", 0);
  if (scale == 0) scale = 1.0f / std::sqrt(static_cast<float>(head_size));
  const Tid y = n.g.new_temp();
  n.g.emit(SdpaNode{.q = q, .k = k, .v = v, .out = y, .scale = scale, .mask = mask});
  const Tid out = n.reshape(n.transpose(y, {0, 2, 1, 3}), {batch, seq, literal(sizes[2])});
  n.set_output(0, out, t, {x.dims[0], x.dims[1], sizes[2]});
}

}  // namespace

void add_contrib_encoder_rules(std::vector<OpRule>& r) {
  r.push_back({kMicrosoft, "EmbedLayerNormalization", 1, embed_layer_normalization});
  r.push_back({kMicrosoft, "Attention", 1, attention});
}

}  // namespace wgml::frontend::onnx
