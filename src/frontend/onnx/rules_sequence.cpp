// ONNX sequences, known element by element at load time: a sequence value is the list of its
// tensors' values, and the sequence ops build, edit and read that list. Positions must be known at
// load time, except SequenceAt's, which a Take from the stacked elements reads at run time.
#include "core/elements.h"
#include "frontend/onnx/lowering.h"
#include "frontend/onnx/rule_helpers.h"
#include "ir/onnx_dtypes.h"

namespace wgml::frontend::onnx {
namespace {

using namespace ir;
using Elements = std::vector<Value>;

const Elements& sequence_input(NodeLowering& n, size_t i) {
  const Value& v = n.in(i);
  if (!v.sequence) n.fail("input " + std::to_string(i) + " to be a sequence, found a tensor");
  return *v.sequence;
}

Value sequence_of(DType dtype, Elements elements) {
  Value v;
  v.dtype = dtype;
  v.sequence = std::make_shared<const Elements>(std::move(elements));
  return v;
}

const Value& tensor_input(NodeLowering& n, size_t i) {
  const Value& v = n.in(i);
  if (v.sequence) n.unsupported("a sequence where a tensor is expected (input " + std::to_string(i) + ")");
  return v;
}

// A position input in [-size, size + past_end) as an index into the list.
size_t position(NodeLowering& n, size_t input, size_t size, bool past_end) {
  const auto known = n.g.literal_ints(tensor_input(n, input));
  if (!known || known->size() != 1) n.unsupported("a sequence position known only at run time");
  const int64_t count = static_cast<int64_t>(size);
  const int64_t p = (*known)[0];
  if (p < -count || p >= count + (past_end ? 1 : 0))
    n.fail("a position in [" + std::to_string(-count) + ", " + std::to_string(count + (past_end ? 1 : 0)) + "), found " +
           std::to_string(p));
  return static_cast<size_t>(p < 0 ? p + count : p);
}

void sequence_empty(NodeLowering& n) {
  const auto dtype = ir::dtype_from_onnx(static_cast<int32_t>(n.attr_int("dtype", pb::TensorProto::FLOAT)));
  if (!dtype) n.unsupported("sequences of this element type");
  n.set_output(0, sequence_of(*dtype, {}));
}

void sequence_construct(NodeLowering& n) {
  Elements elements;
  for (size_t i = 0; i < n.num_inputs(); ++i) {
    elements.push_back(tensor_input(n, i));
    if (elements.back().dtype != elements.front().dtype) n.fail("tensors of one dtype");
  }
  if (elements.empty()) n.fail("at least one input");
  const DType dtype = elements.front().dtype;  // read before the list moves: argument order is unspecified
  n.set_output(0, sequence_of(dtype, std::move(elements)));
}

void sequence_insert(NodeLowering& n) {
  const Value& seq = n.in(0);
  Elements elements = sequence_input(n, 0);
  const Value& tensor = tensor_input(n, 1);
  if (tensor.dtype != seq.dtype) n.fail("a tensor of the sequence's dtype " + std::string(dtype_name(seq.dtype)));
  const size_t at = n.has_input(2) ? position(n, 2, elements.size(), true) : elements.size();
  elements.insert(elements.begin() + static_cast<std::ptrdiff_t>(at), tensor);
  n.set_output(0, sequence_of(seq.dtype, std::move(elements)));
}

void sequence_erase(NodeLowering& n) {
  Elements elements = sequence_input(n, 0);
  if (elements.empty()) n.fail("a sequence with an element to erase, found an empty one");
  const size_t at = n.has_input(1) ? position(n, 1, elements.size(), false) : elements.size() - 1;
  elements.erase(elements.begin() + static_cast<std::ptrdiff_t>(at));
  n.set_output(0, sequence_of(n.in(0).dtype, std::move(elements)));
}

void sequence_length(NodeLowering& n) {
  Tensor length(DType::Int64, {});
  store_int64(DType::Int64, length.mutable_data(), 0, static_cast<int64_t>(sequence_input(n, 0).size()));
  n.set_output(0, n.g.constant_value(length));
}

// A position known only at run time: the elements (of one rank) are stacked and one is taken.
void sequence_at(NodeLowering& n) {
  const Elements& elements = sequence_input(n, 0);
  if (elements.empty()) n.fail("a nonempty sequence");
  if (n.g.literal_ints(tensor_input(n, 1))) return n.set_output(0, elements[position(n, 1, elements.size(), false)]);
  Dims dims = elements.front().dims;
  std::vector<Tid> parts;
  for (const Value& e : elements) {
    if (e.rank() != static_cast<int>(dims.size())) n.unsupported("a run-time position into tensors of different ranks");
    dims = merge_dims(dims, e.dims);
    parts.push_back(n.g.tensor(e));
  }
  const Tid stacked = n.g.new_temp();
  n.g.emit(StackNode{.tensors = parts, .out = stacked, .axis = 0});
  const IntOrVid index =
      n.g.mod(n.g.int_elements(n.in(1), n.where() + " input 1 (position)")[0], literal(static_cast<int64_t>(elements.size())));
  const Tid out = n.g.new_temp();
  n.g.emit(TakeNode{.x = stacked,
                    .out = out,
                    .index = {index.literal, index.vid, {}, index.is_vid ? IntOrVidOrTid::Value : IntOrVidOrTid::Literal},
                    .axis = 0});
  n.set_output(0, out, elements.front().dtype, dims);
}

// Pieces of `split` elements along the axis (the last one smaller), of sizes given by a 1-D
// split, or of 1 each without one (squeezed unless keepdims).
void split_to_sequence(NodeLowering& n) {
  const Value& x = tensor_input(n, 0);
  const int axis = n.axis(n.attr_int("axis", 0), x.rank());
  const IntOrVid length = n.g.dim(x, axis);
  std::vector<IntOrVid> sizes;
  bool squeeze = false;
  if (!n.has_input(1)) {
    if (length.is_vid) n.unsupported("splitting an axis of a length known only at run time into pieces of 1");
    sizes.assign(static_cast<size_t>(length.literal), literal(1));
    squeeze = n.attr_int("keepdims", 1) == 0;
  } else if (n.in(1).rank() == 0) {
    const auto piece = n.g.literal_ints(n.in(1));
    if (!piece || length.is_vid) n.unsupported("a piece size or axis length known only at run time");
    if ((*piece)[0] <= 0) n.fail("a positive split size");
    for (int64_t start = 0; start < length.literal; start += (*piece)[0])
      sizes.push_back(literal(std::min((*piece)[0], length.literal - start)));
  } else {
    sizes = n.g.int_elements(n.in(1), n.where() + " input 1 (split)");
  }
  const Tid t = n.in_tensor(0);
  Elements pieces;
  IntOrVid start = literal(0);
  for (const IntOrVid& size : sizes) {
    const IntOrVid stop = n.g.add(start, size);
    Tid piece = slice_axis(n, t, axis, start, stop);
    Dims dims = x.dims;
    dims[axis] = size.is_vid ? kUnknownDim : size.literal;
    if (squeeze) {
      piece = squeeze_axes(n, piece, {axis});
      dims.erase(dims.begin() + axis);
    }
    pieces.push_back(Lowering::runtime(piece, x.dtype, dims));
    start = stop;
  }
  n.set_output(0, sequence_of(x.dtype, std::move(pieces)));
}

void concat_from_sequence(NodeLowering& n) {
  const Elements& elements = sequence_input(n, 0);
  if (elements.empty()) n.fail("a nonempty sequence");
  const bool new_axis = n.attr_int("new_axis", 0) != 0;
  const int rank = elements.front().rank();
  const int axis = n.axis(n.attr_int("axis", 0), rank + (new_axis ? 1 : 0));
  std::vector<Tid> parts;
  Dims dims = elements.front().dims;
  int64_t concatenated = 0;
  for (const Value& e : elements) {
    if (e.rank() != rank) n.fail("tensors of one rank");
    parts.push_back(n.g.tensor(e));
    concatenated =
        concatenated < 0 || (!new_axis && e.dims[axis] < 0) ? kUnknownDim : concatenated + (new_axis ? 1 : e.dims[axis]);
    dims = merge_dims(dims, e.dims);
  }
  const Tid out = n.g.new_temp();
  if (new_axis) {
    n.g.emit(StackNode{.tensors = parts, .out = out, .axis = axis});
    dims.insert(dims.begin() + axis, concatenated);
  } else {
    n.g.emit(ConcatenateNode{.tensors = parts, .out = out, .axis = axis});
    dims[axis] = concatenated;
  }
  n.set_output(0, out, elements.front().dtype, dims);
}

}  // namespace

void add_sequence_rules(std::vector<OpRule>& r) {
  r.push_back({"", "SequenceEmpty", 11, sequence_empty});
  r.push_back({"", "SequenceConstruct", 11, sequence_construct});
  r.push_back({"", "SequenceInsert", 11, sequence_insert});
  r.push_back({"", "SequenceErase", 11, sequence_erase});
  r.push_back({"", "SequenceLength", 11, sequence_length});
  r.push_back({"", "SequenceAt", 11, sequence_at});
  r.push_back({"", "SplitToSequence", 11, split_to_sequence});
  r.push_back({"", "ConcatFromSequence", 11, concat_from_sequence});
}

}  // namespace wgml::frontend::onnx
