// Attention (opset 23/24), RotaryEmbedding, and the losses NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss, composed of mlx nodes step by step as ONNX's definitions read. Plain
// attention (no mask, bias, softcap or extra outputs) is one SdpaNode.
#include <cmath>
#include <limits>

#include "frontend/onnx/lowering.h"
#include "frontend/onnx/rule_helpers.h"

namespace wgml::frontend::onnx {
namespace {

using namespace ir;

const double kInf = std::numeric_limits<double>::infinity();

// [B, S, H*D] -> [B, H, S, D].
Tid split_heads(NodeLowering& n, const Value& v, Tid t, int64_t heads) {
  const auto s = n.g.shape_of(v);
  return n.transpose(n.reshape(t, {s[0], s[1], literal(heads), literal(-1)}), {0, 2, 1, 3});
}

// Additive bias 0 where `allowed`, -inf elsewhere.
Tid additive(NodeLowering& n, Tid allowed, DType t) { return where_op(n, allowed, n.scalar(0, t), n.scalar(-kInf, t)); }

// (i + offset) - j for query row i and key j: how far key j lies behind the query's position.
// Causal attention allows distance >= 0; a sliding window bounds it on both sides.
Tid key_distance(NodeLowering& n, IntOrVid lq, IntOrVid lk, Tid offset) {
  const Tid i = n.reshape(arange(n, lq, DType::Int64), {literal(-1), literal(1)});
  const Tid j = n.reshape(arange(n, lk, DType::Int64), {literal(1), literal(-1)});
  return n.binary<SubtractNode>(n.binary<AddNode>(i, offset), j);
}

Tid add_bias(NodeLowering& n, std::optional<Tid> bias, Tid more) { return bias ? n.binary<AddNode>(*bias, more) : more; }

void attention(NodeLowering& n) {
  const Value& q_in = n.in(0);
  const DType t = q_in.dtype;
  const bool three_d = q_in.rank() == 3;
  if (!three_d && q_in.rank() != 4) n.fail("Q of rank 3 or 4");
  const int64_t q_heads_attr = n.attr_int("q_num_heads", 0), kv_heads_attr = n.attr_int("kv_num_heads", 0);
  Tid q = n.in_tensor(0), k = n.in_tensor(1), v = n.in_tensor(2);
  if (three_d) {
    if (q_heads_attr <= 0 || kv_heads_attr <= 0) n.fail("q_num_heads and kv_num_heads for 3-D inputs");
    q = split_heads(n, q_in, q, q_heads_attr);
    k = split_heads(n, n.in(1), k, kv_heads_attr);
    v = split_heads(n, n.in(2), v, kv_heads_attr);
  }
  const int64_t q_heads = three_d ? q_heads_attr : q_in.dims[1];
  const int64_t kv_heads = three_d ? kv_heads_attr : n.in(1).dims[1];
  const int64_t head_size = three_d ? (q_in.dims[2] < 0 ? -1 : q_in.dims[2] / q_heads) : q_in.dims[3];
  if (q_heads < 0 || kv_heads < 0) n.unsupported("head counts known only at run time");
  const Value q4 =
      Lowering::runtime(q, t, {three_d ? q_in.dims[0] : q_in.dims[0], q_heads, three_d ? q_in.dims[1] : q_in.dims[2], head_size});
  // KV cache: past entries come first along the sequence axis.
  const bool has_past = n.has_input(4) && n.has_input(5);
  if (has_past) {
    k = concat_op(n, {n.in_tensor(4), k}, 2);
    v = concat_op(n, {n.in_tensor(5), v}, 2);
  }
  // The key length, known at load time where K's (and the cache's) dims are.
  int64_t key_length = n.in(1).dims[three_d ? 1 : 2];
  if (has_past) key_length = key_length < 0 || n.in(4).dims[2] < 0 ? kUnknownDim : key_length + n.in(4).dims[2];
  const Value k4 = Lowering::runtime(k, t, {kUnknownDim, kUnknownDim, key_length, kUnknownDim});
  if (n.wants_output(1)) n.set_output(1, k, t, Dims(4, kUnknownDim));
  if (n.wants_output(2)) n.set_output(2, v, t, Dims(4, kUnknownDim));
  const IntOrVid lq = n.g.dim(q4, 2), lk = n.g.dim(k4, 2);

  double scale = n.attr_float("scale", 0);
  if (!n.attr("scale")) {
    if (head_size <= 0) n.unsupported("a head size known only at run time without an explicit scale");
    scale = 1.0 / std::sqrt(static_cast<double>(head_size));
  }
  const bool causal = n.attr_int("is_causal", 0) != 0;
  const bool has_mask = n.has_input(3);
  const bool nonpad = n.opset >= 24 && n.has_input(6);
  const double softcap = n.attr_float("softcap", 0);
  const bool wants_qk = n.wants_output(3);
  const int64_t left = n.attr_int("left_window_size", -1), right = n.attr_int("right_window_size", -1);
  const bool windowed = left >= 0 || right >= 0;
  Dims out_dims =
      three_d ? Dims{q_in.dims[0], q_in.dims[1], kUnknownDim} : Dims{q_in.dims[0], q_heads, q_in.dims[2], kUnknownDim};

  // Grouped-query attention: each KV head serves q_heads / kv_heads query heads.
  auto repeat_heads = [&](Tid x) {
    if (q_heads == kv_heads) return x;
    if (kv_heads == 0 || q_heads % kv_heads != 0) n.fail("q heads divisible by kv heads");
    const Value xv = Lowering::runtime(x, t, Dims(4, kUnknownDim));
    const auto s = n.g.shape_of(xv);
    const Tid grouped = expand_dims(n, x, 2);
    const Tid out = n.g.new_temp();
    n.g.emit(BroadcastToNode{.x = grouped, .out = out, .shape = {s[0], s[1], literal(q_heads / kv_heads), s[2], s[3]}});
    return n.reshape(out, {s[0], literal(q_heads), s[2], s[3]});
  };

  Tid y;
  if (!causal && !windowed && !has_mask && !nonpad && softcap <= 0 && !wants_qk && !n.attr("softmax_precision")) {
    y = n.g.new_temp();
    n.g.emit(SdpaNode{.q = q, .k = k, .v = v, .out = y, .scale = static_cast<float>(scale)});
  } else {
    // The bias: mask (bool: 0 or -inf), causal rule, key padding; -inf rows give zero rows.
    std::optional<Tid> bias;
    if (has_mask) {
      const Value& m = n.in(3);
      Tid mask = n.in_tensor(3);
      const int64_t mask_len = m.dims.empty() ? kUnknownDim : m.dims.back();
      if (!lk.is_vid && mask_len >= 0 && mask_len < lk.literal) {  // a shorter mask: pad the keys
        std::vector<IntOrVid> widths(2 * m.rank(), literal(0));
        widths.back() = literal(lk.literal - mask_len);
        const Tid padded = n.g.new_temp();
        n.g.emit(PadNode{.x = mask,
                         .out = padded,
                         .pad_width = widths,
                         .mode = "constant",
                         .constant_value = m.dtype == DType::Bool ? 0.0f : -std::numeric_limits<float>::infinity()});
        mask = padded;
      }
      bias = m.dtype == DType::Bool ? additive(n, mask, t) : mask;
    }
    // Where the query block starts among the keys: after the cache, or per batch before the
    // padding, or at 0.
    Tid offset = n.scalar(0, DType::Int64);
    if (has_past)
      offset = scalar_of(n, n.g.dim(Lowering::runtime(n.in_tensor(4), t, n.in(4).dims), 2), DType::Int64);
    else if (nonpad) {
      const Tid lengths = n.cast(n.in_tensor(6), n.in(6).dtype, DType::Int64);
      offset = n.reshape(n.binary<SubtractNode>(lengths, scalar_of(n, lq, DType::Int64)),
                         {literal(-1), literal(1), literal(1), literal(1)});
    }
    if (causal || windowed) {
      const Tid distance = key_distance(n, lq, lk, offset);
      const Tid zero = n.scalar(0, DType::Int64);
      if (causal) bias = add_bias(n, bias, additive(n, n.binary<GreaterEqualNode>(distance, zero), t));
      if (left >= 0)
        bias = add_bias(n, bias,
                        additive(n, n.binary<LessEqualNode>(distance, n.scalar(static_cast<double>(left), DType::Int64)), t));
      if (right >= 0) {
        const Tid ahead = n.unary<NegNode>(distance);
        bias =
            add_bias(n, bias, additive(n, n.binary<LessEqualNode>(ahead, n.scalar(static_cast<double>(right), DType::Int64)), t));
      }
    }
    if (nonpad) {
      const Tid lengths =
          n.reshape(n.cast(n.in_tensor(6), n.in(6).dtype, DType::Int64), {literal(-1), literal(1), literal(1), literal(1)});
      const Tid j = arange(n, lk, DType::Int64);
      bias = add_bias(n, bias, additive(n, n.binary<LessNode>(j, lengths), t));
    }
    // ONNX scales Q and K by sqrt(scale) each before the product.
    const Tid root = n.scalar(std::sqrt(scale), t);
    const Tid kt = n.transpose(repeat_heads(k), {0, 1, 3, 2});
    Tid qk = matmul_op(n, n.binary<MultiplyNode>(q, root), n.binary<MultiplyNode>(kt, root));
    if (softcap > 0) {
      const Tid cap = n.scalar(softcap, t);
      qk = n.binary<MultiplyNode>(n.unary<TanhNode>(n.binary<DivideNode>(qk, cap)), cap);
    }
    const Tid with_bias = bias ? n.binary<AddNode>(qk, *bias) : qk;
    DType softmax_type = t;
    if (const pb::AttributeProto* p = n.attr("softmax_precision")) {
      const auto st = ir::dtype_from_onnx(static_cast<int32_t>(p->i()));
      if (!st) n.unsupported("softmax_precision " + onnx_type_name(static_cast<int32_t>(p->i())));
      softmax_type = *st;
    }
    Tid probs = n.g.new_temp();
    n.g.emit(SoftmaxNode{.x = n.cast(with_bias, t, softmax_type), .out = probs, .axis = -1, .precise = true});
    probs = n.cast(probs, softmax_type, t);
    if (bias) {  // rows whose bias is -inf everywhere attend to nothing
      const Tid row_max = n.g.new_temp();
      n.g.emit(MaxNode{.x = *bias, .out = row_max, .axes = {-1}, .keepdims = true});
      probs = where_op(n, n.binary<EqualNode>(row_max, n.scalar(-kInf, t)), n.scalar(0, t), probs);
    }
    if (wants_qk) {
      const int64_t mode = n.attr_int("qk_matmul_output_mode", 0);
      const Tid qk_out = mode == 2 ? with_bias : mode == 3 ? probs : qk;
      n.set_output(3, qk_out, t, Dims(4, kUnknownDim));
    }
    y = matmul_op(n, probs, repeat_heads(v));
  }
  if (three_d) {
    const auto s = n.g.shape_of(q_in);
    y = n.reshape(n.transpose(y, {0, 2, 1, 3}), {s[0], s[1], literal(-1)});
  }
  n.set_output(0, y, t, out_dims);
}

// Scores (Q K^T scaled), each optionally rewritten by a subgraph before and after the softmax.
void flex_attention(NodeLowering& n) {
  const Value& q = n.in(0);
  const Value& k = n.in(1);
  if (q.rank() != 4 || k.rank() != 4 || n.in(2).rank() != 4) n.fail("rank-4 Q, K and V");
  const DType t = q.dtype;
  const int64_t q_heads = q.dims[1], kv_heads = k.dims[1], head_size = q.dims[3];
  if (q_heads < 0 || kv_heads < 0) n.unsupported("head counts known only at run time");
  double scale = n.attr_float("scale", 0);
  if (!n.attr("scale")) {
    if (head_size <= 0) n.unsupported("a head size known only at run time without an explicit scale");
    scale = 1.0 / std::sqrt(static_cast<double>(head_size));
  }
  DType compute = dtype_size(t) < 4 ? DType::Float32 : t;
  if (const pb::AttributeProto* p = n.attr("softmax_precision")) {
    const auto st = ir::dtype_from_onnx(static_cast<int32_t>(p->i()));
    if (!st) n.unsupported("softmax_precision " + onnx_type_name(static_cast<int32_t>(p->i())));
    compute = *st;
  }
  auto repeat_heads = [&](Tid x) {
    if (q_heads == kv_heads) return x;
    if (kv_heads == 0 || q_heads % kv_heads != 0) n.fail("q heads divisible by kv heads");
    const auto s = n.g.shape_of(Lowering::runtime(x, t, Dims(4, kUnknownDim)));
    const Tid out = n.g.new_temp();
    n.g.emit(
        BroadcastToNode{.x = expand_dims(n, x, 2), .out = out, .shape = {s[0], s[1], literal(q_heads / kv_heads), s[2], s[3]}});
    return n.reshape(out, {s[0], literal(q_heads), s[2], s[3]});
  };
  const Tid root = n.scalar(std::sqrt(static_cast<float>(scale)), t);
  const Tid kt = n.transpose(n.binary<MultiplyNode>(repeat_heads(n.in_tensor(1)), root), {0, 1, 3, 2});
  Value scores = Lowering::runtime(n.cast(matmul_op(n, n.binary<MultiplyNode>(n.in_tensor(0), root), kt), t, compute), compute,
                                   Dims(4, kUnknownDim));
  auto modified = [&](const char* attribute, Value v) {
    const pb::GraphProto* graph = n.attr_graph(attribute);
    if (!graph) return v;
    const std::vector<Value> out = inline_subgraph(n, *graph, {v});
    if (out.size() != 1) n.fail(std::string("a ") + attribute + " subgraph with one output");
    return Lowering::runtime(n.cast(n.g.tensor(out[0]), out[0].dtype, compute), compute, Dims(4, kUnknownDim));
  };
  scores = modified("score_mod", scores);
  const Tid probs = n.g.new_temp();
  n.g.emit(SoftmaxNode{.x = n.g.tensor(scores), .out = probs, .axis = -1, .precise = true});
  const Value mod_probs = modified("prob_mod", Lowering::runtime(probs, compute, Dims(4, kUnknownDim)));
  const Tid v = n.cast(repeat_heads(n.in_tensor(2)), n.in(2).dtype, compute);
  const Tid y = matmul_op(n, n.g.tensor(mod_probs), v);
  n.set_output(0, n.cast(y, compute, n.in(2).dtype), n.in(2).dtype, {q.dims[0], q_heads, q.dims[2], n.in(2).dims[3]});
}

}  // namespace

Tid take_rows(NodeLowering& n, Tid table, Tid ids) {
  const Tid out = n.g.new_temp();
  n.g.emit(TakeNode{.x = table, .out = out, .index = {0, {}, ids, IntOrVidOrTid::Tensor}, .axis = 0});
  return out;
}

Tid rotate_heads(NodeLowering& n, Tid h, Tid cos, Tid sin, const Rotation& r, DType t) {
  const int64_t rot = r.dims;
  const Tid rotated_part = slice_axis(n, h, 3, literal(0), literal(rot));
  cos = expand_dims(n, cos, 2);
  sin = expand_dims(n, sin, 2);
  const Tid x1 = r.interleaved ? slice_axis(n, rotated_part, 3, literal(0), literal(rot), 2)
                               : slice_axis(n, rotated_part, 3, literal(0), literal(rot / 2));
  const Tid x2 = r.interleaved ? slice_axis(n, rotated_part, 3, literal(1), literal(rot), 2)
                               : slice_axis(n, rotated_part, 3, literal(rot / 2), literal(rot));
  const Tid real = n.binary<SubtractNode>(n.binary<MultiplyNode>(cos, x1), n.binary<MultiplyNode>(sin, x2));
  const Tid imag = n.binary<AddNode>(n.binary<MultiplyNode>(sin, x1), n.binary<MultiplyNode>(cos, x2));
  Tid rotated;
  if (r.interleaved) {
    const Tid pairs = concat_op(n, {expand_dims(n, real, 4), expand_dims(n, imag, 4)}, 4);
    const Value pv = Lowering::runtime(pairs, t, Dims(5, kUnknownDim));
    rotated = n.reshape(pairs, {n.g.dim(pv, 0), n.g.dim(pv, 1), n.g.dim(pv, 2), literal(rot)});
  } else {
    rotated = concat_op(n, {real, imag}, 3);
  }
  return rot < r.head_size ? concat_op(n, {rotated, slice_axis(n, h, 3, literal(rot), literal(r.head_size))}, 3) : rotated;
}

namespace {

// x rotated pairwise by angles whose cos and sin are given per position.
void rotary_embedding(NodeLowering& n) {
  const Value& x = n.in(0);
  const DType t = x.dtype;
  const bool four_d = x.rank() == 4;
  if (!four_d && x.rank() != 3) n.fail("an input of rank 3 or 4");
  Tid h = n.in_tensor(0);
  const auto shape = n.g.shape_of(x);
  if (four_d)
    h = n.transpose(h, {0, 2, 1, 3});  // [B, S, H, D]
  else {
    const int64_t heads = n.attr_int("num_heads", 0);
    if (heads <= 0) n.fail("num_heads for a 3-D input");
    h = n.reshape(h, {shape[0], shape[1], literal(heads), literal(-1)});
  }
  const int64_t head_size = four_d ? x.dims[3] : (x.dims[2] < 0 ? -1 : x.dims[2] / n.attr_int("num_heads", 1));
  if (head_size <= 0) n.unsupported("a head size known only at run time");
  int64_t rot = n.attr_int("rotary_embedding_dim", 0);
  if (rot == 0) rot = head_size;
  Tid cos = n.in_tensor(1), sin = n.in_tensor(2);
  if (n.has_input(3)) {
    cos = take_rows(n, cos, n.in_tensor(3));
    sin = take_rows(n, sin, n.in_tensor(3));
  }
  Tid out = rotate_heads(n, h, cos, sin, {rot, head_size, n.attr_int("interleaved", 0) != 0}, t);
  out = four_d ? n.transpose(out, {0, 2, 1, 3}) : n.reshape(out, shape);
  n.set_output(0, out, t, x.dims);
}

// -log_prob[n, target[n, d...], d...], weighted per class, ignore_index contributing nothing,
// reduced by `reduction`: output `out` of the node.
void negative_log_likelihood(NodeLowering& n, Tid log_prob, DType t, size_t out) {
  const Value& target = n.in(1);
  Tid index = n.in_tensor(1);
  std::optional<Tid> counted;
  if (const pb::AttributeProto* ignore = n.attr("ignore_index")) {
    counted = n.binary<NotEqualNode>(index, n.scalar(static_cast<double>(ignore->i()), target.dtype));
    index = where_op(n, *counted, index, n.scalar(0, target.dtype));
  }
  const Tid picked = n.g.new_temp();
  n.g.emit(TakeAlongAxisNode{.x = log_prob, .indices = expand_dims(n, index, 1), .out = picked, .axis = 1});
  Tid loss = n.unary<NegNode>(squeeze_axes(n, picked, {1}));
  std::optional<Tid> weights;
  if (n.has_input(2)) {
    weights = n.g.new_temp();
    n.g.emit(TakeNode{.x = n.in_tensor(2), .out = *weights, .index = {0, {}, index, IntOrVidOrTid::Tensor}, .axis = 0});
  }
  if (counted) {
    const Tid mask = n.cast(*counted, DType::Bool, t);
    weights = weights ? n.binary<MultiplyNode>(*weights, mask) : mask;
  }
  if (weights) loss = n.binary<MultiplyNode>(loss, *weights);
  const std::string reduction = n.attr_string("reduction", "mean");
  if (reduction == "none") return n.set_output(out, loss, t, target.dims);
  if (reduction != "sum" && reduction != "mean") n.fail("reduction none, sum or mean, found '" + reduction + "'");
  auto total = [&](Tid x) {
    const Tid s = n.g.new_temp();
    n.g.emit(SumNode{.x = x, .out = s, .axes = {}, .keepdims = false});
    return s;
  };
  Tid result = total(loss);
  if (reduction == "mean") {
    if (weights)
      result = n.binary<DivideNode>(result, total(*weights));
    else {
      const Tid mean = n.g.new_temp();
      n.g.emit(MeanNode{.x = loss, .out = mean, .axes = {}, .keepdims = false});
      result = mean;
    }
  }
  n.set_output(out, result, t, {});
}

void nll_loss(NodeLowering& n) { negative_log_likelihood(n, n.in_tensor(0), n.in(0).dtype, 0); }

void softmax_cross_entropy(NodeLowering& n) {
  const Value& x = n.in(0);
  const Tid lse = n.g.new_temp();
  n.g.emit(LogSumExpNode{.x = n.in_tensor(0), .out = lse, .axes = {1}, .keepdims = true});
  const Tid log_prob = n.binary<SubtractNode>(n.in_tensor(0), lse);
  negative_log_likelihood(n, log_prob, x.dtype, 0);
  if (n.wants_output(1)) n.set_output(1, log_prob, x.dtype, x.dims);
}

}  // namespace

void add_attention_rules(std::vector<OpRule>& r) {
  r.push_back({"", "Attention", 23, attention});
  r.push_back({"ai.onnx.preview", "FlexAttention", 1, flex_attention});
  r.push_back({"", "RotaryEmbedding", 23, rotary_embedding});
  r.push_back({"", "NegativeLogLikelihoodLoss", 12, nll_loss});
  r.push_back({"", "SoftmaxCrossEntropyLoss", 12, softmax_cross_entropy});
}

}  // namespace wgml::frontend::onnx
