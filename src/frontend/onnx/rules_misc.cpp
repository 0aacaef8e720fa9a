// Smaller ONNX ops, mostly of recent opsets: SwiGLU, CenterCropPad, CausalConvWithState and the
// window functions as mlx compositions; LinearAttention, BitCast, Det, MaxUnpool and AffineGrid
// kept in the ai.onnx domain.
#include <cmath>

#include "frontend/onnx/lowering.h"
#include "frontend/onnx/rule_helpers.h"

namespace wgml::frontend::onnx {
namespace {

using namespace ir;

Dims unknown(int rank) { return Dims(static_cast<size_t>(rank), kUnknownDim); }

// Y = A * sigmoid(alpha * A) * B.
void swiglu(NodeLowering& n) {
  const Value& a = n.in(0);
  const Tid x = n.in_tensor(0);
  const Tid gate =
      n.binary<MultiplyNode>(x, n.unary<SigmoidNode>(n.binary<MultiplyNode>(x, n.scalar(n.attr_float("alpha", 1.0f), a.dtype))));
  n.set_output(0, n.binary<MultiplyNode>(gate, n.in_tensor(1)), a.dtype, a.dims);
}

// Crops (centered, the extra element taken from the end) or zero-pads (the extra one at the end)
// each listed axis to the target size.
void center_crop_pad(NodeLowering& n) {
  const Value& x = n.in(0);
  if (known_only_at_run_time(n, 1)) return keep_with_rank(n, x.dtype, x.rank());
  const std::vector<int64_t> target = n.literal_ints_input(1, "shape");
  std::vector<int64_t> axes = n.attr_ints("axes");
  if (axes.empty())
    for (int d = 0; d < x.rank(); ++d) axes.push_back(d);
  if (axes.size() != target.size()) n.fail("one target size per axis");
  Tid t = n.in_tensor(0);
  Dims dims = x.dims;
  std::vector<IntOrVid> widths(2 * x.rank(), literal(0));
  bool padded = false;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int axis = n.axis(axes[i], x.rank());
    const int64_t dim = x.dims[axis], size = target[i];
    if (dim < 0) n.unsupported("CenterCropPad of a size known only at run time");
    if (size < dim) t = slice_axis(n, t, axis, literal((dim - size) / 2), literal((dim - size) / 2 + size));
    if (size > dim) {
      widths[2 * axis] = literal((size - dim) / 2);
      widths[2 * axis + 1] = literal(size - dim - (size - dim) / 2);
      padded = true;
    }
    dims[axis] = size;
  }
  if (padded) {
    const Tid out = n.g.new_temp();
    n.g.emit(PadNode{.x = t, .out = out, .pad_width = widths, .mode = "constant", .constant_value = 0});
    t = out;
  }
  n.set_output(0, t, x.dtype, dims);
}

// Depthwise causal Conv1D over [state, input]; the new state is the last k-1 positions.
void causal_conv_with_state(NodeLowering& n) {
  const Value& x = n.in(0);
  const Value& w = n.in(1);
  if (x.rank() != 3 || w.rank() != 3 || w.dims[2] < 1) n.fail("input [B, C, L] and weight [C, 1, k]");
  const int64_t k = w.dims[2];
  const std::string activation = n.attr_string("activation", "none");
  if (activation != "none" && activation != "silu" && activation != "swish") n.fail("activation none, silu or swish");
  const auto s = n.g.shape_of(x);
  const Tid state = n.has_input(3) ? n.in_tensor(3) : full(n, {s[0], s[1], literal(k - 1)}, 0, x.dtype);
  const Tid joined = concat_op(n, {state, n.in_tensor(0)}, 2);
  const Tid weight = n.transpose(n.in_tensor(1), {0, 2, 1});  // [C, k, 1]: mlx's [O, k, I/groups]
  const Tid conv = n.g.new_temp();
  if (s[1].is_vid || s[1].literal > INT32_MAX) n.unsupported("a channel count known only at run time");
  n.g.emit(
      Conv1DNode{.x = n.transpose(joined, {0, 2, 1}), .w = weight, .out = conv, .groups = static_cast<int32_t>(s[1].literal)});
  Tid y = n.transpose(conv, {0, 2, 1});
  if (n.has_input(2)) y = n.binary<AddNode>(y, n.reshape(n.in_tensor(2), {literal(-1), literal(1)}));
  if (activation != "none") y = n.unary<SiluNode>(y);
  n.set_output(0, y, x.dtype, x.dims);
  if (n.wants_output(1)) {
    const Value joined_value = Lowering::runtime(joined, x.dtype, unknown(3));
    const IntOrVid length = n.g.dim(joined_value, 2);
    n.set_output(1, slice_axis(n, joined, 2, n.g.sub(length, literal(k - 1)), length), x.dtype, {x.dims[0], x.dims[1], k - 1});
  }
}

// Hann, Hamming and Blackman windows: sums of cosines of 2*pi*n/N over n < size, N = size (periodic)
// or size - 1.
void window(NodeLowering& n) {
  const std::string op = n.node.op_type();
  const pb::AttributeProto* dt = n.attr("output_datatype");
  const auto out = dt ? ir::dtype_from_onnx(static_cast<int32_t>(dt->i())) : std::optional<DType>(DType::Float32);
  if (!out) n.unsupported("output_datatype " + onnx_type_name(static_cast<int32_t>(dt->i())));
  const DType f = DType::Float64;
  const IntOrVid size = n.g.int_elements(n.in(0), n.where() + " input 0 (size)")[0];
  const Tid index = n.cast(arange(n, size, DType::Int64), DType::Int64, f);
  Tid period = n.cast(n.reshape(n.in_tensor(0), {}), n.in(0).dtype, f);
  if (n.attr_int("periodic", 1) == 0) period = n.binary<SubtractNode>(period, n.scalar(1, f));
  const Tid phase = n.binary<DivideNode>(n.binary<MultiplyNode>(index, n.scalar(2 * M_PI, f)), period);
  auto cosine = [&](double multiple, double weight) {
    return n.binary<MultiplyNode>(n.unary<CosNode>(n.binary<MultiplyNode>(phase, n.scalar(multiple, f))), n.scalar(weight, f));
  };
  Tid w;
  if (op == "HannWindow")
    w = n.binary<AddNode>(n.scalar(0.5, f), cosine(1, -0.5));
  else if (op == "HammingWindow")
    w = n.binary<AddNode>(n.scalar(25.0 / 46.0, f), cosine(1, -21.0 / 46.0));
  else
    w = n.binary<AddNode>(n.binary<AddNode>(n.scalar(0.42, f), cosine(1, -0.5)), cosine(2, 0.08));
  n.set_output(0, n.cast(w, f, *out), *out, {size.is_vid ? kUnknownDim : size.literal});
}

void linear_attention(NodeLowering& n) {
  const Value& q = n.in(0);
  const int64_t q_heads = n.attr_int("q_num_heads", 0), kv_heads = n.attr_int("kv_num_heads", 0);
  if (q_heads <= 0 || kv_heads <= 0 || q_heads % kv_heads != 0) n.fail("q_num_heads a positive multiple of kv_num_heads");
  const int64_t value_width = n.in(2).dims.size() == 3 ? n.in(2).dims[2] : kUnknownDim;
  const int64_t key_width = n.in(1).dims.size() == 3 ? n.in(1).dims[2] : kUnknownDim;
  const int64_t dv = value_width < 0 ? kUnknownDim : value_width / kv_heads;
  const int64_t dk = key_width < 0 ? kUnknownDim : key_width / kv_heads;
  keep(n, {q.dtype, n.has_input(3) ? n.in(3).dtype : q.dtype},
       {{q.dims[0], q.dims[1], dv < 0 ? kUnknownDim : q_heads * dv}, {q.dims[0], kv_heads, dk, dv}});
}

void bit_cast(NodeLowering& n) {
  const Value& x = n.in(0);
  const pb::AttributeProto* to = n.attr("to");
  if (!to) n.fail("attribute 'to'");
  const auto t = ir::dtype_from_onnx(static_cast<int32_t>(to->i()));
  if (!t) n.unsupported("bit cast to " + onnx_type_name(static_cast<int32_t>(to->i())));
  if (dtype_size(*t) != dtype_size(x.dtype)) n.fail("a type of the input's bit width");
  keep(n, {*t}, {x.dims});
}

void det(NodeLowering& n) {
  const Value& x = n.in(0);
  if (x.rank() < 2) n.fail("an input of rank >= 2");
  keep(n, {x.dtype}, {Dims(x.dims.begin(), x.dims.end() - 2)});
}

void max_unpool(NodeLowering& n) { keep(n, {n.in(0).dtype}, {unknown(n.in(0).rank())}); }

void affine_grid(NodeLowering& n) {
  const Value& size = n.in(1);
  if (size.rank() != 1 || (size.dims[0] != 4 && size.dims[0] != 5)) n.fail("size [N, C, H, W] or [N, C, D, H, W]");
  const int spatial = static_cast<int>(size.dims[0]) - 2;
  keep(n, {n.in(0).dtype}, {unknown(spatial + 2)});
}

void tfidf_vectorizer(NodeLowering& n) {
  const Value& x = n.in(0);
  if (x.dtype == DType::Float32 || x.dtype == DType::Float64) n.fail("an integer input");
  if (x.rank() != 1 && x.rank() != 2) n.fail("an input [N] or [B, N]");
  int64_t width = 0;
  for (int64_t i : n.attr_ints("ngram_indexes")) {
    if (i < 0) n.fail("ngram_indexes not negative");
    width = std::max(width, i + 1);
  }
  keep(n, {DType::Float32}, {x.rank() == 2 ? Dims{x.dims[0], width} : Dims{width}});
}

void mel_weight_matrix(NodeLowering& n) {
  const int32_t code = static_cast<int32_t>(n.attr_int("output_datatype", 1));
  const auto dtype = ir::dtype_from_onnx(code);
  if (!dtype) n.unsupported("output_datatype " + onnx_type_name(code));
  keep_with_rank(n, *dtype, 2);
}

// Col2Im: [N, C * prod(block_shape), L] -> [N, C, image_shape...].
void col2im(NodeLowering& n) {
  if (n.in(0).rank() != 3) n.fail("an input [N, C * prod(block_shape), L]");
  const int64_t spatial = static_length(n, 1, "image_shape");
  if (spatial < 1 || spatial != static_length(n, 2, "block_shape")) n.fail("image_shape and block_shape of one length");
  keep_with_rank(n, n.in(0).dtype, static_cast<int>(spatial) + 2);
}

void dft(NodeLowering& n) { keep_with_rank(n, n.in(0).dtype, n.in(0).rank()); }
void stft(NodeLowering& n) { keep_with_rank(n, n.in(0).dtype, 4); }

// ai.onnx.ml Binarizer: 1 where x > threshold, else 0, in x's type.
void binarizer(NodeLowering& n) {
  const Value& x = n.in(0);
  const Tid above = n.binary<GreaterNode>(n.in_tensor(0), n.scalar(n.attr_float("threshold", 0), x.dtype));
  n.set_output(0, n.cast(above, DType::Bool, x.dtype), x.dtype, x.dims);
}

// ai.onnx.ml ArrayFeatureExtractor: the listed positions of the last axis.
void array_feature_extractor(NodeLowering& n) {
  const Value& x = n.in(0);
  const Value& indices = n.in(1);
  const Tid out = n.g.new_temp();
  n.g.emit(TakeNode{.x = n.in_tensor(0),
                    .out = out,
                    .index = {0, {}, n.reshape(n.in_tensor(1), {literal(-1)}), IntOrVidOrTid::Tensor},
                    .axis = -1});
  Dims dims = x.dims;
  if (dims.empty()) n.fail("an input of rank >= 1");
  dims.back() = indices.dims_known() && indices.rank() > 0 ? indices.dims.back() : kUnknownDim;
  n.set_output(0, out, x.dtype, dims);
}

// Optional values of tensors are the tensors themselves; an omitted input is the empty optional.
void optional_has_element(NodeLowering& n) {
  Tensor present(DType::Bool, {});
  present.mutable_data()[0] = n.has_input(0);
  n.set_output(0, n.g.constant_value(present));
}

void optional_get_element(NodeLowering& n) { n.set_output(0, n.in(0)); }

}  // namespace

void add_misc_rules(std::vector<OpRule>& r) {
  r.push_back({"", "SwiGLU", 28, swiglu});
  r.push_back({"", "CenterCropPad", 18, center_crop_pad});
  r.push_back({"", "CausalConvWithState", 27, causal_conv_with_state});
  r.push_back({"", "HannWindow", 17, window});
  r.push_back({"", "HammingWindow", 17, window});
  r.push_back({"", "BlackmanWindow", 17, window});
  r.push_back({"", "LinearAttention", 27, linear_attention});
  r.push_back({"", "BitCast", 26, bit_cast});
  r.push_back({"", "Det", 11, det});
  r.push_back({"", "MaxUnpool", 9, max_unpool});
  r.push_back({"", "AffineGrid", 20, affine_grid});
  r.push_back({"", "DFT", 17, dft});
  r.push_back({"", "MelWeightMatrix", 17, mel_weight_matrix});
  r.push_back({"", "Col2Im", 18, col2im});
  r.push_back({"", "TfIdfVectorizer", 9, tfidf_vectorizer});
  r.push_back({"", "OptionalHasElement", 15, optional_has_element});
  r.push_back({"", "OptionalGetElement", 15, optional_get_element});
  r.push_back({"", "STFT", 17, stft});
  r.push_back({"ai.onnx.ml", "Binarizer", 1, binarizer});
  r.push_back({"ai.onnx.ml", "ArrayFeatureExtractor", 1, array_feature_extractor});
}

}  // namespace wgml::frontend::onnx
