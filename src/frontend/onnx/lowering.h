#pragma once
// The state of lowering one ONNX model to an ir::Program: what is known about every ONNX value at
// load time, slot allocation, and the helpers op rules use to emit instructions. Shape arithmetic
// on integers is folded here where it is static and becomes value-slot arithmetic where it is not.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/named_data.h"
#include "ir/onnx_dtypes.h"
#include "ir/program.h"
#include "onnx-ml.pb.h"
#include "wgml/error.h"
#include "wgml/tensor.h"

namespace wgml::frontend::onnx {

namespace pb = ::onnx;

// int64 arithmetic on dims and shape values a model states: overflow is the model's error.
int64_t checked_add(int64_t a, int64_t b);
int64_t checked_mul(int64_t a, int64_t b);

// A vector whose element access is checked: rules index dims and shapes by axis, and a model
// whose values have other ranks than its ops require must get an error, not undefined behaviour.
[[noreturn]] void fail_rank(size_t index, size_t size);

template <class T>
class Checked : public std::vector<T> {
 public:
  using std::vector<T>::vector;
  Checked(const std::vector<T>& v) : std::vector<T>(v) {}
  Checked(std::vector<T>&& v) : std::vector<T>(std::move(v)) {}
  T& operator[](size_t i) {
    return i < this->size() ? std::vector<T>::operator[](i) : (fail_rank(i, this->size()), this->front());
  }
  const T& operator[](size_t i) const {
    return i < this->size() ? std::vector<T>::operator[](i) : (fail_rank(i, this->size()), this->front());
  }
  T& back() { return (*this)[this->size() - 1]; }
  const T& back() const { return (*this)[this->size() - 1]; }
};

// Dims of a value: -1 where only the run time knows it.
using Dims = Checked<int64_t>;
constexpr int64_t kUnknownDim = -1;

struct Alternatives;

// What the lowering knows about one ONNX value.
struct Value {
  DType dtype = DType::Float32;
  Dims dims;
  std::optional<ir::Tid> tid;      // its tensor slot, once something needs one
  std::optional<Tensor> constant;  // its contents, when known at load time
  // An integer scalar or vector known element by element: literals, or value slots computed at
  // run time (shape arithmetic). Consumers that take shapes read these without a tensor.
  std::optional<std::vector<ir::IntOrVid>> elements;
  // Set when the value is one of two that a run-time If chose between and they could not be
  // merged into one (different ranks, different known shape elements). The other fields are then
  // the first alternative's; rules never see such a value (lower_node splits its consumers).
  std::shared_ptr<const Alternatives> alternatives;
  // Set for an ONNX sequence: its tensors, known one by one at load time (dtype is theirs, dims
  // and the rest unused). Only the sequence ops read one (rules_sequence.cpp).
  std::shared_ptr<const std::vector<Value>> sequence;

  int rank() const { return static_cast<int>(dims.size()); }
  bool dims_known() const;
};

// The value is `when_true` where the value slot `cond` is nonzero at run time, else `when_false`.
struct Alternatives {
  ir::Vid cond;
  Value when_true, when_false;
};

// Dims of either of two values of one rank: unknown where they differ.
Dims merge_dims(const Dims& a, const Dims& b);

// Why a model cannot be lowered: collected over all nodes, reported in one error.
struct Unsupported {
  std::string what;
};

class Lowering {
 public:
  explicit Lowering(std::string source);

  const std::string& source() const { return source_; }

  // Slots. Tids are provisional until finish() orders them constants, inputs, outputs, temps.
  ir::Tid new_temp();
  ir::Vid new_value();
  ir::Tid add_constant(const Tensor& t, const std::string& name_hint);
  // A 0-D constant, one slot per (dtype, value) however often it is asked for.
  ir::Tid scalar_constant(double v, DType dtype);
  ir::Tid add_input(const std::string& name, ir::TensorMeta meta);

  // Instructions go to the current chain (the main chain, or a subgraph's body while lowering it).
  void emit(ir::Node node);
  void emit(ir::OnnxOp op);
  // What the instructions emitted from now on are made from ("node 'x' (Conv)"), for errors.
  void set_origin(std::string origin) { origin_ = std::move(origin); }
  uint32_t new_chain();
  // Drops what `chain` holds (a lowering that failed part way) for `op` alone.
  void replace_chain(uint32_t chain, ir::OnnxOp op);
  // Runs f with instructions going to `chain` and values defined inside scoped to it.
  void in_chain(uint32_t chain, const std::function<void()>& f);
  // Inside the chain an IfNode on `cond` runs when `cond` is `holds`: every value that depends on
  // that choice becomes the alternative taken.
  void assume(ir::Vid cond, bool holds);
  // The value of an IfNode on `cond` whose chains produced `when_true` and `when_false`: one value
  // when both are the same known value, one slot both chains copy into when the two are tensors
  // of one dtype and rank, else the pair as alternatives.
  Value join(ir::Vid cond, uint32_t true_chain, uint32_t false_chain, const Value& when_true, const Value& when_false);
  // The value of an IfNode whose other chain, `failing_chain`, fails at run time: `v` itself.
  Value only_one_side(const Value& v, uint32_t failing_chain);
  // A value without alternatives: they are copied into one slot by an IfNode on their condition;
  // dims are merged (unknown where they differ). Alternatives of different ranks are Unsupported
  // unless `any_rank` (the dims are then the first alternative's).
  Value merged(const Value& v, bool any_rank = false);

  // ONNX values by name.
  bool has_value(const std::string& name) const;
  const Value& value(const std::string& name) const;
  void define(const std::string& name, Value v);

  // The tensor slot holding a value, creating a constant or emitting the instructions that build
  // it from value slots where it has none yet. tensor_of remembers the slot for the named value.
  ir::Tid tensor(const Value& v);
  ir::Tid tensor_of(const std::string& name);
  // A runtime value held in `tid`.
  static Value runtime(ir::Tid tid, DType dtype, Dims dims);
  Value constant_value(const Tensor& t);

  // Dimension `axis` of v: a literal where known, else a value slot read at run time.
  ir::IntOrVid dim(const Value& v, int axis);
  Checked<ir::IntOrVid> shape_of(const Value& v);
  // Elements of an integer scalar or vector: known ones as literals or value slots; otherwise read
  // from the tensor at run time (its length must be known).
  std::vector<ir::IntOrVid> int_elements(const Value& v, const std::string& what);
  // Elements when all are literals at load time.
  std::optional<std::vector<int64_t>> literal_ints(const Value& v) const;
  std::optional<std::vector<ir::IntOrVid>> known_elements(const Value& v) const;

  // Value-slot arithmetic, folded when both sides are literals.
  ir::IntOrVid add(ir::IntOrVid a, ir::IntOrVid b);
  ir::IntOrVid sub(ir::IntOrVid a, ir::IntOrVid b);
  ir::IntOrVid mul(ir::IntOrVid a, ir::IntOrVid b);
  ir::IntOrVid floor_div(ir::IntOrVid a, ir::IntOrVid b);
  ir::IntOrVid mod(ir::IntOrVid a, ir::IntOrVid b);
  ir::IntOrVid product(const std::vector<ir::IntOrVid>& v);

  // Builds the program: Tids renumbered by class, outputs copied into output slots.
  void add_output(const std::string& name, const Value& v, std::vector<ir::Dim> declared);
  // Constants' bytes go to `named`, by the names of their named slots.
  ir::Program finish(ir::NamedData& named);

  // Unique name for a synthesized constant or node.
  std::string unique_name(const std::string& hint);

  // The model's opsets by domain ("" is ai.onnx).
  std::map<std::string, int64_t> opsets;
  // Reads a TensorProto (initializer, Constant value, attribute), external data included.
  std::function<Tensor(const pb::TensorProto&, const std::string& where)> load_tensor;
  // Names of values whose producer could not be lowered: their consumers are skipped.
  std::set<std::string> poisoned;

  // Lowering may lower a node more than once (a Loop or Scan body whose carried shapes change is
  // lowered again, rules_control.cpp; a node reading values a run-time If chose, once per way it
  // can go, onnx_model.cpp), and nesting multiplies that: every node lowered counts, trials and
  // alternatives included, and `node` past `budget` in all is refused with ResourceLimit.
  void set_node_budget(uint64_t budget, uint64_t nodes_in_file);
  void count_lowered(const pb::NodeProto& node);
  uint64_t nodes_lowered() const { return work_->lowered; }

  // A lowering that may be taken back (a Loop body lowered to learn how its carried shapes
  // change): unless kept, leaving the Trial's scope (an exception included) restores the Lowering
  // as it was when the Trial began. It costs what is lowered inside it, not the Lowering's size.
  class Trial {
   public:
    explicit Trial(Lowering& g);
    Trial(const Trial&) = delete;
    Trial& operator=(const Trial&) = delete;
    ~Trial();
    void keep();

   private:
    Lowering& g_;
    size_t slots_, constants_, chains_, values_undo_, dims_undo_, trial_undo_;
    uint32_t num_values_, chain_;
    std::string origin_;
    bool open_ = true;
  };

 private:
  enum class SlotClass { Constant, Input, Output, Temp };
  ir::Tid new_slot(SlotClass c);
  // The program validator cannot tell that a value of one IfNode branch is read only where that
  // branch ran: its slots made since `first_slot` also get a write, never read, in the other
  // branch's chain.
  void write_placeholders(const Value& v, uint32_t chain, size_t first_slot);
  ir::Tid tensor_from_elements(const Value& v);

  std::string source_;
  std::vector<SlotClass> slot_classes_;
  std::vector<std::optional<ir::TensorMeta>> slot_meta_;
  std::vector<std::pair<std::string, Tensor>> constants_;  // by constant index
  std::vector<ir::Tid> constant_tids_;
  std::vector<std::pair<std::string, ir::Tid>> inputs_, outputs_;
  uint32_t num_values_ = 0;
  std::vector<ir::Chain> chains_;
  std::vector<size_t> chain_first_slot_;  // by chain: how many slots existed when it was made
  uint32_t chain_ = 0;
  // value() resolves a value against the chain's assumptions when it is read (assume() resolving
  // every value at once cost the number of values per node lowered per alternative).
  mutable std::map<std::string, Value> values_;
  std::vector<std::pair<ir::Vid, bool>> assumptions_;  // of the chain being lowered and those around it
  std::map<std::pair<uint32_t, int>, ir::Vid> dim_cache_;
  std::map<std::string, int> name_counts_;
  std::string origin_;
  std::map<std::pair<DType, uint64_t>, ir::Tid> scalars_;  // by dtype and the value's bits
  struct Work {
    uint64_t lowered = 0;
    uint64_t budget = UINT64_MAX;
    uint64_t nodes_in_file = 0;
  };
  std::shared_ptr<Work> work_ = std::make_shared<Work>();
  // Undo logs, so that a scope's changes are taken back at a cost in proportion to them (copying
  // the state per body made loading quadratic in the number of Ifs and Loops side by side).
  // Values and cached dims belong to a body (in_chain) or a Trial; name counts, scalar constants
  // and the lengths of chains written to, to a Trial (new slots and chains are truncated).
  struct ValueBefore {
    std::string name;
    std::optional<Value> before;  // none: the name was not defined
  };
  mutable std::vector<ValueBefore> values_undo_;
  std::vector<std::pair<uint32_t, int>> dims_undo_;  // dim_cache_ keys added
  std::vector<std::function<void()>> trial_undo_;
  int open_scopes_ = 0;  // bodies and Trials
  int open_trials_ = 0;
  void remember_value(const std::string& name) const;  // before a change to it
  void remember_chain_length(uint32_t chain);
  void undo_values(size_t values_mark, size_t dims_mark);
};

// The ONNX node being lowered: its inputs, attributes and outputs, with errors that name it.
class NodeLowering {
 public:
  NodeLowering(Lowering& g, const pb::NodeProto& node, int64_t opset);

  Lowering& g;
  const pb::NodeProto& node;
  const int64_t opset;

  std::string where() const;                                     // "node 'name' (OpType)"
  [[noreturn]] void fail(const std::string& expected) const;     // malformed: InvalidProgram
  [[noreturn]] void unsupported(const std::string& what) const;  // valid but not handled here

  size_t num_inputs() const { return static_cast<size_t>(node.input_size()); }
  bool has_input(size_t i) const;
  const Value& in(size_t i) const;
  ir::Tid in_tensor(size_t i);
  size_t num_outputs() const { return static_cast<size_t>(node.output_size()); }
  bool wants_output(size_t i) const;
  void set_output(size_t i, Value v);
  // Defines output i as the tensor in `tid`.
  void set_output(size_t i, ir::Tid tid, DType dtype, Dims dims);

  const pb::AttributeProto* attr(const std::string& name) const;
  int64_t attr_int(const std::string& name, int64_t fallback) const;
  float attr_float(const std::string& name, float fallback) const;
  std::string attr_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& name) const;
  std::vector<float> attr_floats(const std::string& name) const;
  std::optional<Tensor> attr_tensor(const std::string& name) const;
  const pb::GraphProto* attr_graph(const std::string& name) const;

  // An input (or attribute) that must be known at load time as integers.
  std::vector<int64_t> literal_ints_input(size_t i, const std::string& what) const;
  // Normalizes an axis into [0, rank), failing with this node's name when out of range.
  int axis(int64_t a, int rank) const;

  // Emit helpers: a new temp holding the node's result.
  template <class N>
  ir::Tid unary(ir::Tid x) {
    const ir::Tid out = g.new_temp();
    g.emit(N{.x = x, .out = out});
    return out;
  }
  template <class N>
  ir::Tid binary(ir::Tid a, ir::Tid b) {
    const ir::Tid out = g.new_temp();
    g.emit(N{.a = a, .b = b, .out = out});
    return out;
  }
  ir::Tid scalar(double v, DType dtype);          // a 0-D constant
  ir::Tid cast(ir::Tid x, DType from, DType to);  // x itself when from == to
  ir::Tid convert(ir::Tid x, DType to);           // always emits the conversion
  ir::Tid reshape(ir::Tid x, const std::vector<ir::IntOrVid>& shape);
  ir::Tid transpose(ir::Tid x, const std::vector<int>& perm);
  // Keeps this op in the ai.onnx domain: its CPU kernel runs it as ONNX defines it.
  ir::OnnxOp kept_op();
};

// One lowering rule per ONNX op type, for opsets from `since` on.
using LowerFn = void (*)(NodeLowering&);
struct OpRule {
  const char* domain;  // "" for ai.onnx
  const char* op_type;
  int since;
  LowerFn lower;
};

// Each rule family registers itself (one file each).
void add_elementwise_rules(std::vector<OpRule>& rules);
void add_shape_rules(std::vector<OpRule>& rules);
void add_reduce_rules(std::vector<OpRule>& rules);
void add_nn_rules(std::vector<OpRule>& rules);
void add_kept_rules(std::vector<OpRule>& rules);
void add_control_rules(std::vector<OpRule>& rules);
void add_attention_rules(std::vector<OpRule>& rules);
void add_quant_rules(std::vector<OpRule>& rules);
void add_misc_rules(std::vector<OpRule>& rules);
void add_sequence_rules(std::vector<OpRule>& rules);
void add_contrib_rules(std::vector<OpRule>& rules);
void add_contrib_decoder_rules(std::vector<OpRule>& rules);
void add_contrib_encoder_rules(std::vector<OpRule>& rules);

const OpRule* find_rule(const std::string& domain, const std::string& op_type, int64_t opset);

// Lowers a subgraph in place with its inputs bound to `inputs`; returns its outputs.
std::vector<Value> inline_subgraph(NodeLowering& n, const pb::GraphProto& graph, const std::vector<Value>& inputs);

// "node 'name' (domain.OpType, opset N)": how unsupported uses are listed.
std::string versioned_label(const pb::NodeProto& n, int64_t opset);

// Lowers a graph's nodes into the current chain (used for the main graph and for subgraphs).
void lower_nodes(Lowering& g, const pb::GraphProto& graph, std::vector<Unsupported>& unsupported);

// dtype helpers shared by the rules (see also ir/onnx_dtypes.h).
std::string onnx_type_name(int32_t elem_type);
// The ExecuTorch ScalarType code AsType/Full/ARange nodes take; none for dtypes MLX lacks (float64).
std::optional<int8_t> scalar_type(DType t);

}  // namespace wgml::frontend::onnx
