// ONNX ops without a faithful lowering to mlx nodes stay in the ai.onnx domain: their CPU kernels
// (src/backend/cpu/onnx) implement ONNX's definition. The rules here check what can be checked at
// load time and say what the outputs' dtypes and ranks are.
#include <algorithm>
#include <map>

#include "frontend/onnx/lowering.h"
#include "frontend/onnx/rule_helpers.h"

namespace wgml::frontend::onnx {
namespace {

Dims unknown(int rank) { return Dims(static_cast<size_t>(rank), kUnknownDim); }

void same_as_input(NodeLowering& n) {
  const Value& x = n.in(0);
  keep(n, {x.dtype}, {x.dims});
}

void bit_shift(NodeLowering& n) {
  const std::string direction = n.attr_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT") n.fail("direction LEFT or RIGHT, found '" + direction + "'");
  keep_elementwise(n, n.in(0).dtype);
}

void resize(NodeLowering& n) {
  const Value& x = n.in(0);
  const std::string mode = n.attr_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic" && mode != "bilinear")
    n.fail("mode nearest, linear or cubic, found '" + mode + "'");
  keep(n, {x.dtype}, {unknown(x.rank())});
}

void top_k(NodeLowering& n) {
  const Value& x = n.in(0);
  Dims dims = x.dims;
  const int axis = n.axis(n.attr_int("axis", -1), x.rank());
  if (n.opset < 10) {
    dims[axis] = n.attr_int("k", 0);
  } else if (auto k = n.g.literal_ints(n.in(1))) {
    dims[axis] = (*k)[0];
  } else {
    dims[axis] = kUnknownDim;
  }
  keep(n, {x.dtype, DType::Int64}, {dims, dims});
}

void non_zero(NodeLowering& n) { keep(n, {DType::Int64}, {{static_cast<int64_t>(n.in(0).rank()), kUnknownDim}}); }

void non_max_suppression(NodeLowering& n) { keep(n, {DType::Int64}, {{kUnknownDim, 3}}); }

void compress(NodeLowering& n) {
  const Value& x = n.in(0);
  keep(n, {x.dtype}, {n.attr("axis") ? unknown(x.rank()) : unknown(1)});
}

void unique(NodeLowering& n) {
  const Value& x = n.in(0);
  const Dims y = n.attr("axis") ? unknown(x.rank()) : unknown(1);
  keep(n, {x.dtype, DType::Int64, DType::Int64, DType::Int64}, {y, unknown(1), unknown(1), unknown(1)});
}

void gather_nd(NodeLowering& n) {
  const Value& data = n.in(0);
  const Value& indices = n.in(1);
  const int64_t batch = n.attr_int("batch_dims", 0);
  const int64_t last = indices.rank() > 0 ? indices.dims.back() : kUnknownDim;
  if (last < 0) n.unsupported("indices whose last dim is known only at run time");
  const int64_t rank = indices.rank() - 1 + data.rank() - last - batch;
  if (rank < 0) n.fail("indices[-1] <= rank(data) - batch_dims");
  keep(n, {data.dtype}, {unknown(static_cast<int>(rank))});
}

void grid_sample(NodeLowering& n) {
  const Value& x = n.in(0);
  const Value& grid = n.in(1);
  Dims dims{x.dims[0], x.dims.size() > 1 ? x.dims[1] : kUnknownDim};
  for (int d = 1; d + 1 < grid.rank(); ++d) dims.push_back(grid.dims[d]);
  keep(n, {x.dtype}, {dims});
}

// DeformConv: the output's spatial dims are the offset's.
void deform_conv(NodeLowering& n) {
  const Value& x = n.in(0);
  const Value& offset = n.in(2);
  if (x.rank() != 4 || offset.rank() != 4 || n.in(1).rank() != 4) n.unsupported("DeformConv other than 2-D");
  keep(n, {x.dtype}, {{x.dims[0], n.in(1).dims[0], offset.dims[2], offset.dims[3]}});
}

void roi_align(NodeLowering& n) {
  const Value& x = n.in(0);
  keep(n, {x.dtype}, {{n.in(1).dims[0], x.dims[1], n.attr_int("output_height", 1), n.attr_int("output_width", 1)}});
}

// The output rank: explicit labels after "->", else the labels used once (numpy's implicit form).
void einsum(NodeLowering& n) {
  const std::string equation = n.attr_string("equation", "");
  if (equation.find("...") != std::string::npos) n.unsupported("ellipsis in an Einsum equation");
  const auto arrow = equation.find("->");
  std::map<char, int> uses;
  for (char c : equation.substr(0, arrow))
    if (std::isalpha(static_cast<unsigned char>(c))) ++uses[c];
  int rank = 0;
  if (arrow != std::string::npos) {
    for (char c : equation.substr(arrow + 2))
      if (std::isalpha(static_cast<unsigned char>(c))) ++rank;
  } else {
    for (const auto& [c, count] : uses) rank += count == 1;
  }
  keep(n, {n.in(0).dtype}, {unknown(rank)});
}

// RNN, GRU, LSTM and ONNX Runtime's DynamicQuantizeLSTM (an LSTM over int8 or uint8 weights): Y
// [seq, dirs, batch, hidden] (or batch first), Y_h and Y_c [dirs, batch, hidden].
void recurrent(NodeLowering& n) {
  const Value& x = n.in(0);
  const std::string op = n.node.op_type();
  const std::vector<std::string> defaults = op == "RNN"   ? std::vector<std::string>{"Tanh"}
                                            : op == "GRU" ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                          : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  if (const pb::AttributeProto* a = n.attr("activations"))
    for (int i = 0; i < a->strings_size(); ++i)
      if (a->strings(i) != defaults[static_cast<size_t>(i) % defaults.size()])
        n.unsupported("activation " + a->strings(i) + " (only the default activations)");
  if (op != "RNN" && op != "GRU" && n.attr_int("input_forget", 0) != 0) n.unsupported("input_forget");
  const bool batch_first = n.attr_int("layout", 0) != 0;
  const int64_t directions = n.attr_string("direction", "forward") == "bidirectional" ? 2 : 1;
  const int64_t hidden = n.attr_int("hidden_size", kUnknownDim);
  const int64_t seq = x.dims[batch_first ? 1 : 0], batch = x.dims[batch_first ? 0 : 1];
  const Dims y = batch_first ? Dims{batch, seq, directions, hidden} : Dims{seq, directions, batch, hidden};
  const Dims state = batch_first ? Dims{batch, directions, hidden} : Dims{directions, batch, hidden};
  keep(n, {x.dtype, x.dtype, x.dtype}, {y, state, state});
}

}  // namespace

void add_kept_rules(std::vector<OpRule>& r) {
  auto add = [&](const char* op, LowerFn f, int since = 1) { r.push_back({"", op, since, f}); };
  add("BitShift", bit_shift, 11);
  add("Resize", resize, 10);
  add("Upsample", resize, 7);
  add("TopK", top_k);
  add("NonZero", non_zero, 9);
  add("NonMaxSuppression", non_max_suppression, 10);
  add("Compress", compress, 9);
  add("Unique", unique, 11);
  add("GatherND", gather_nd, 11);
  add("ScatterElements", same_as_input, 11);
  add("Scatter", same_as_input, 9);
  add("ScatterND", same_as_input, 11);
  add("CumProd", same_as_input, 26);
  add("ReverseSequence", same_as_input, 10);
  add("GridSample", grid_sample, 16);
  add("RoiAlign", roi_align, 10);
  add("DeformConv", deform_conv, 19);
  add("Einsum", einsum, 12);
  add("TensorScatter", same_as_input, 24);
  add("RNN", recurrent, 7);
  add("GRU", recurrent, 7);
  add("LSTM", recurrent, 7);
  r.push_back({"com.microsoft", "DynamicQuantizeLSTM", 1, recurrent});
}

}  // namespace wgml::frontend::onnx
