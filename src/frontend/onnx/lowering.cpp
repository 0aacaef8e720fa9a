#include "frontend/onnx/lowering.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <type_traits>

#include "core/elements.h"

namespace wgml::frontend::onnx {
namespace {

ir::IntOrVid literal(int64_t v) { return ir::IntOrVid{v, {}, false}; }
ir::IntOrVid slot(ir::Vid v) { return ir::IntOrVid{0, v, true}; }

// Known element lists longer than this stay tensors: they are data, not shapes.
constexpr int64_t kMaxKnownElements = 4096;

// Tid fields of our own nodes, renumbered once the slot order is final. for_each_field offers
// read access only; the nodes are ours and not const, so writing through it is sound.
template <class Map>
struct TidRemapper {
  Map& map;
  void operator()(ir::Tid& t) const { t = map(t); }
  void operator()(std::optional<ir::Tid>& t) const {
    if (t) *t = map(*t);
  }
  void operator()(std::vector<ir::Tid>& ts) const {
    for (ir::Tid& t : ts) t = map(t);
  }
  void operator()(ir::VidOrTid& v) const {
    if (!v.is_vid) v.tid = map(v.tid);
  }
  void operator()(ir::IntOrVidOrTid& v) const {
    if (v.kind == ir::IntOrVidOrTid::Tensor) v.tid = map(v.tid);
  }
  template <class T>
  void operator()(T&) const {}
};

template <class Map>
void remap_tids(ir::Instruction& instruction, Map map) {
  if (auto* op = std::get_if<ir::OnnxOp>(&instruction)) {
    for (auto& t : op->inputs)
      if (t) *t = map(*t);
    for (auto& t : op->outputs)
      if (t) *t = map(*t);
    return;
  }
  std::visit(
      [&](auto& n) {
        for_each_field(n, [&](std::string_view, const auto& field, ir::FieldRole) {
          using Field = std::remove_cvref_t<decltype(field)>;
          TidRemapper<Map>{map}(const_cast<Field&>(field));
        });
      },
      std::get<ir::Node>(instruction));
}

bool same_elements(const std::vector<ir::IntOrVid>& a, const std::vector<ir::IntOrVid>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const ir::IntOrVid& x, const ir::IntOrVid& y) {
    return x.is_vid == y.is_vid && (x.is_vid ? x.vid == y.vid : x.literal == y.literal);
  });
}

// v where the IfNode on `cond` went the way `holds` says (alternatives on other conditions kept).
Value resolved(const Value& v, ir::Vid cond, bool holds) {
  if (!v.alternatives) return v;
  const Alternatives& a = *v.alternatives;
  if (a.cond == cond) return resolved(holds ? a.when_true : a.when_false, cond, holds);
  Value out = v;
  out.alternatives = std::make_shared<const Alternatives>(
      Alternatives{a.cond, resolved(a.when_true, cond, holds), resolved(a.when_false, cond, holds)});
  return out;
}

// Whether v is one of alternatives chosen by `cond` (or holds such alternatives).
bool depends_on(const Value& v, ir::Vid cond) {
  if (!v.alternatives) return false;
  const Alternatives& a = *v.alternatives;
  return a.cond == cond || depends_on(a.when_true, cond) || depends_on(a.when_false, cond);
}

// The ranks a value may have at run time.
std::set<int> ranks_of(const Value& v) {
  if (!v.alternatives) return {v.rank()};
  std::set<int> ranks = ranks_of(v.alternatives->when_true);
  ranks.merge(ranks_of(v.alternatives->when_false));
  return ranks;
}

ir::TensorMeta static_meta(DType dtype, const Shape& shape) {
  ir::TensorMeta m;
  m.dtype = dtype;
  for (int64_t d : shape) m.shape.push_back(ir::Dim{static_cast<int32_t>(d), 0, -1});
  return m;
}

}  // namespace

int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    throw Error(ErrorCode::InvalidProgram, "shape arithmetic overflows int64: " + std::to_string(a) + " + " + std::to_string(b));
  return r;
}

int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    throw Error(ErrorCode::InvalidProgram, "shape arithmetic overflows int64: " + std::to_string(a) + " * " + std::to_string(b));
  return r;
}

std::string versioned_label(const pb::NodeProto& n, int64_t opset) {
  const std::string domain = n.domain().empty() || n.domain() == "ai.onnx" ? "" : n.domain() + ".";
  return "node '" + n.name() + "' (" + domain + n.op_type() + ", opset " + std::to_string(opset) + ")";
}

Dims merge_dims(const Dims& a, const Dims& b) {
  Dims out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = i < b.size() && a[i] == b[i] ? a[i] : kUnknownDim;
  return out;
}

bool Value::dims_known() const {
  return std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 0; });
}

Lowering::Lowering(std::string source) : source_(std::move(source)) {
  chains_.emplace_back();
  chain_first_slot_.push_back(0);
}

ir::Tid Lowering::new_slot(SlotClass c) {
  slot_classes_.push_back(c);
  slot_meta_.emplace_back();
  return ir::Tid{static_cast<uint32_t>(slot_classes_.size() - 1)};
}

ir::Tid Lowering::new_temp() { return new_slot(SlotClass::Temp); }

ir::Vid Lowering::new_value() { return ir::Vid{num_values_++}; }

std::string Lowering::unique_name(const std::string& hint) {
  const int n = name_counts_[hint]++;
  if (open_trials_ > 0)
    trial_undo_.push_back([this, hint, n] { n == 0 ? void(name_counts_.erase(hint)) : void(name_counts_[hint] = n); });
  if (n == 0) return hint;
  std::string name = hint + "#" + std::to_string(n);
  while (name_counts_.count(name)) name += "'";
  name_counts_[name] = 1;
  if (open_trials_ > 0) trial_undo_.push_back([this, name] { name_counts_.erase(name); });
  return name;
}

ir::Tid Lowering::add_constant(const Tensor& t, const std::string& name_hint) {
  const ir::Tid tid = new_slot(SlotClass::Constant);
  slot_meta_[tid.idx] = static_meta(t.dtype(), t.shape());
  constants_.emplace_back(unique_name(name_hint), t);
  constant_tids_.push_back(tid);
  return tid;
}

ir::Tid Lowering::scalar_constant(double v, DType dtype) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  auto [it, fresh] = scalars_.emplace(std::make_pair(dtype, bits), ir::Tid{});
  if (fresh) {
    Tensor t(dtype, {});
    store_double(dtype, t.mutable_data(), 0, v);
    it->second = add_constant(t, "scalar");
    if (open_trials_ > 0) trial_undo_.push_back([this, key = it->first] { scalars_.erase(key); });
  }
  return it->second;
}

ir::Tid Lowering::add_input(const std::string& name, ir::TensorMeta meta) {
  const ir::Tid tid = new_slot(SlotClass::Input);
  slot_meta_[tid.idx] = std::move(meta);
  inputs_.emplace_back(unique_name(name), tid);
  return tid;
}

void Lowering::emit(ir::Node node) {
  chains_[chain_].instructions.emplace_back(std::move(node));
  chains_[chain_].origins.push_back(origin_);
}

void Lowering::emit(ir::OnnxOp op) {
  chains_[chain_].instructions.emplace_back(std::move(op));
  chains_[chain_].origins.push_back(origin_);
}

uint32_t Lowering::new_chain() {
  chains_.emplace_back();
  chain_first_slot_.push_back(slot_classes_.size());
  return static_cast<uint32_t>(chains_.size() - 1);
}

void Lowering::replace_chain(uint32_t chain, ir::OnnxOp op) {
  if (open_trials_ > 0) trial_undo_.push_back([this, chain, before = chains_[chain]] { chains_[chain] = before; });
  chains_[chain] = ir::Chain{};
  in_chain(chain, [&] { emit(std::move(op)); });
}

void Lowering::in_chain(uint32_t chain, const std::function<void()>& f) {
  // Values and value slots made inside a body exist only there: restore the outer view after.
  const uint32_t outer_chain = chain_;
  const std::string outer_origin = origin_;
  const size_t values_mark = values_undo_.size(), dims_mark = dims_undo_.size();
  const size_t outer_assumptions = assumptions_.size();
  remember_chain_length(chain);
  ++open_scopes_;
  chain_ = chain;
  auto leave = [&] {
    --open_scopes_;
    chain_ = outer_chain;
    origin_ = outer_origin;
    assumptions_.resize(outer_assumptions);
    undo_values(values_mark, dims_mark);
  };
  try {
    f();
  } catch (...) {
    leave();
    throw;
  }
  leave();
}

void Lowering::remember_value(const std::string& name) const {
  if (open_scopes_ == 0) return;
  const auto it = values_.find(name);
  values_undo_.push_back({name, it == values_.end() ? std::nullopt : std::optional<Value>(it->second)});
}

void Lowering::remember_chain_length(uint32_t chain) {
  if (open_trials_ == 0) return;
  trial_undo_.push_back([this, chain, length = chains_[chain].instructions.size()] {
    ir::Chain& c = chains_[chain];
    c.instructions.erase(c.instructions.begin() + static_cast<std::ptrdiff_t>(length), c.instructions.end());
    c.origins.erase(c.origins.begin() + static_cast<std::ptrdiff_t>(length), c.origins.end());
  });
}

void Lowering::undo_values(size_t values_mark, size_t dims_mark) {
  for (; values_undo_.size() > values_mark; values_undo_.pop_back()) {
    ValueBefore& change = values_undo_.back();
    if (change.before)
      values_[change.name] = std::move(*change.before);
    else
      values_.erase(change.name);
  }
  for (; dims_undo_.size() > dims_mark; dims_undo_.pop_back()) dim_cache_.erase(dims_undo_.back());
}

Lowering::Trial::Trial(Lowering& g)
    : g_(g),
      slots_(g.slot_classes_.size()),
      constants_(g.constants_.size()),
      chains_(g.chains_.size()),
      values_undo_(g.values_undo_.size()),
      dims_undo_(g.dims_undo_.size()),
      trial_undo_(g.trial_undo_.size()),
      num_values_(g.num_values_),
      chain_(g.chain_),
      origin_(g.origin_) {
  ++g.open_scopes_;
  ++g.open_trials_;
  g.remember_chain_length(g.chain_);
}

void Lowering::Trial::keep() {
  open_ = false;
  if (--g_.open_scopes_ == 0) g_.values_undo_.clear(), g_.dims_undo_.clear();
  if (--g_.open_trials_ == 0) g_.trial_undo_.clear();
}

Lowering::Trial::~Trial() {
  if (!open_) return;
  g_.undo_values(values_undo_, dims_undo_);
  for (; g_.trial_undo_.size() > trial_undo_; g_.trial_undo_.pop_back()) g_.trial_undo_.back()();
  g_.slot_classes_.resize(slots_);
  g_.slot_meta_.resize(slots_);
  g_.constants_.resize(constants_);
  g_.constant_tids_.resize(constants_);
  g_.chains_.resize(chains_);
  g_.chain_first_slot_.resize(chains_);
  g_.num_values_ = num_values_;
  g_.chain_ = chain_;
  g_.origin_ = origin_;
  --g_.open_scopes_;
  --g_.open_trials_;
}

void Lowering::assume(ir::Vid cond, bool holds) { assumptions_.emplace_back(cond, holds); }

Value Lowering::join(ir::Vid cond, uint32_t true_chain, uint32_t false_chain, const Value& when_true, const Value& when_false) {
  if (when_true.sequence || when_false.sequence)
    throw Error(ErrorCode::Unsupported, source_ + ": " + origin_ + ": a sequence chosen by a run-time If");
  const bool plain = !when_true.alternatives && !when_false.alternatives && when_true.dtype == when_false.dtype;
  if (plain && when_true.tid && when_false.tid && *when_true.tid == *when_false.tid) return when_true;
  const auto known_true = known_elements(when_true);
  const auto known_false = known_elements(when_false);
  if (plain && known_true && known_false && when_true.dims == when_false.dims && same_elements(*known_true, *known_false)) {
    Value same = when_true;
    same.tid.reset();  // a slot made in one chain only
    return same;
  }
  // Known elements stay alternatives: the shape arithmetic downstream folds on each side.
  if (plain && !known_true && !known_false && when_true.rank() == when_false.rank()) {
    const ir::Tid slot = new_temp();
    in_chain(true_chain, [&] { emit(ir::IdCopyNode{.x = tensor(when_true), .out = slot}); });
    in_chain(false_chain, [&] { emit(ir::IdCopyNode{.x = tensor(when_false), .out = slot}); });
    return runtime(slot, when_true.dtype, merge_dims(when_true.dims, when_false.dims));
  }
  const size_t first_slot = std::min(chain_first_slot_[true_chain], chain_first_slot_[false_chain]);
  write_placeholders(when_true, false_chain, first_slot);
  write_placeholders(when_false, true_chain, first_slot);
  Value out = when_true;
  out.tid.reset();
  out.constant.reset();
  out.elements.reset();
  out.alternatives = std::make_shared<const Alternatives>(Alternatives{cond, when_true, when_false});
  return out;
}

Value Lowering::only_one_side(const Value& v, uint32_t failing_chain) {
  write_placeholders(v, failing_chain, chain_first_slot_[failing_chain]);
  return v;
}

void Lowering::write_placeholders(const Value& v, uint32_t chain, size_t first_slot) {
  if (v.alternatives) {
    write_placeholders(v.alternatives->when_true, chain, first_slot);
    write_placeholders(v.alternatives->when_false, chain, first_slot);
  }
  // A slot older than the branches (a value the branch passes through) is written on every path
  // already: a placeholder would overwrite it where the other branch runs.
  if (!v.tid || v.tid->idx < first_slot || slot_classes_[v.tid->idx] != SlotClass::Temp) return;
  const ir::Tid placeholder = scalar_constant(0, DType::Bool);
  in_chain(chain, [&] { emit(ir::IdCopyNode{.x = placeholder, .out = *v.tid}); });
}

Value Lowering::merged(const Value& v, bool any_rank) {
  if (!v.alternatives) return v;
  const Alternatives& a = *v.alternatives;
  const uint32_t true_chain = new_chain();
  const uint32_t false_chain = new_chain();
  Value when_true, when_false;
  in_chain(true_chain, [&] {
    assume(a.cond, true);
    when_true = merged(a.when_true, any_rank);
  });
  in_chain(false_chain, [&] {
    assume(a.cond, false);
    when_false = merged(a.when_false, any_rank);
  });
  if ((when_true.rank() != when_false.rank() && !any_rank) || when_true.dtype != when_false.dtype)
    throw Error(ErrorCode::Unsupported, source_ + ": " + origin_ + ": a value that is of rank " +
                                            std::to_string(when_true.rank()) + " or " + std::to_string(when_false.rank()) +
                                            " depending on a run-time If, where one rank is needed");
  emit(ir::IfNode{.cond = slot(a.cond), .then_chain_idx = true_chain, .else_chain_idx = false_chain});
  const ir::Tid out = new_temp();
  in_chain(true_chain, [&] { emit(ir::IdCopyNode{.x = tensor(when_true), .out = out}); });
  in_chain(false_chain, [&] { emit(ir::IdCopyNode{.x = tensor(when_false), .out = out}); });
  return runtime(out, when_true.dtype,
                 when_true.rank() == when_false.rank() ? merge_dims(when_true.dims, when_false.dims) : when_true.dims);
}

void Lowering::set_node_budget(uint64_t budget, uint64_t nodes_in_file) {
  work_->budget = budget;
  work_->nodes_in_file = nodes_in_file;
}

void Lowering::count_lowered(const pb::NodeProto& node) {
  if (++work_->lowered <= work_->budget) return;
  throw Error(ErrorCode::ResourceLimit,
              source_ + ": node '" + node.name() + "' (" + node.op_type() + "): expected at most " +
                  std::to_string(work_->budget) + " node lowerings for a file of " + std::to_string(work_->nodes_in_file) +
                  " nodes: nested Loop or Scan bodies whose carried shapes change are lowered again at every level, "
                  "and a node reading values that run-time Ifs chose once per way they can go");
}

bool Lowering::has_value(const std::string& name) const { return values_.count(name) > 0; }

const Value& Lowering::value(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw Error(ErrorCode::InvalidProgram, source_ + ": value '" + name + "' is not defined");
  Value& v = it->second;
  auto applies = [&](const std::pair<ir::Vid, bool>& assumption) { return depends_on(v, assumption.first); };
  if (std::none_of(assumptions_.begin(), assumptions_.end(), applies)) return v;
  remember_value(name);
  for (const auto& [cond, holds] : assumptions_) v = resolved(v, cond, holds);
  return v;
}

void Lowering::define(const std::string& name, Value v) {
  remember_value(name);
  values_[name] = std::move(v);
}

ir::Tid Lowering::tensor_of(const std::string& name) {
  if (value(name).tid) return *value(name).tid;
  const ir::Tid tid = tensor(value(name));
  remember_value(name);
  values_.at(name).tid = tid;
  return tid;
}

ir::Tid Lowering::tensor(const Value& v) {
  if (v.alternatives) return *merged(v).tid;
  if (v.tid) return *v.tid;
  if (v.constant) return add_constant(*v.constant, "const");
  if (v.elements) return tensor_from_elements(v);
  throw Error(ErrorCode::InvalidProgram, source_ + ": internal: a value without a tensor");
}

ir::Tid Lowering::tensor_from_elements(const Value& v) {
  const auto st = scalar_type(v.dtype);
  if (!st) throw Error(ErrorCode::Unsupported, source_ + ": shape values of dtype " + std::string(dtype_name(v.dtype)));
  std::vector<ir::Tid> parts;
  std::vector<int64_t> run;
  auto flush_literals = [&] {
    if (run.empty()) return;
    Tensor t(v.dtype, {static_cast<int64_t>(run.size())});
    for (size_t i = 0; i < run.size(); ++i) store_int64(v.dtype, t.mutable_data(), i, run[i]);
    parts.push_back(add_constant(t, "shape"));
    run.clear();
  };
  for (const ir::IntOrVid& e : *v.elements) {
    if (!e.is_vid) {
      run.push_back(e.literal);
      continue;
    }
    flush_literals();
    const ir::Tid part = new_temp();
    emit(ir::ARangeNode{.out = part, .start = e, .stop = add(e, literal(1)), .step = literal(1), .scalar_type = *st});
    parts.push_back(part);
  }
  flush_literals();
  ir::Tid out = parts.empty() ? add_constant(Tensor(v.dtype, {0}), "shape") : parts[0];
  if (parts.size() > 1) {
    out = new_temp();
    emit(ir::ConcatenateNode{.tensors = parts, .out = out, .axis = 0});
  }
  if (v.rank() == 0) {
    const ir::Tid scalar = new_temp();
    emit(ir::ReshapeNode{.x = out, .out = scalar, .shape = {}});
    out = scalar;
  }
  return out;
}

Value Lowering::runtime(ir::Tid tid, DType dtype, Dims dims) {
  Value v;
  v.dtype = dtype;
  v.dims = std::move(dims);
  v.tid = tid;
  return v;
}

Value Lowering::constant_value(const Tensor& t) {
  Value v;
  v.dtype = t.dtype();
  v.dims = std::vector<int64_t>(t.shape());
  v.constant = t;
  return v;
}

void fail_rank(size_t index, size_t size) {
  throw Error(ErrorCode::InvalidProgram,
              "expected a value of rank above " + std::to_string(index) + ", found rank " + std::to_string(size));
}

ir::IntOrVid Lowering::dim(const Value& v, int axis) {
  if (axis < 0) throw Error(ErrorCode::InvalidProgram, "axis " + std::to_string(axis) + " is negative");
  if (v.dims[axis] >= 0) return literal(v.dims[axis]);
  const ir::Tid t = tensor(v);
  auto key = std::make_pair(t.idx, axis);
  auto it = dim_cache_.find(key);
  if (it != dim_cache_.end()) return slot(it->second);
  const ir::Vid out = new_value();
  emit(ir::SymSizeNode{.a = t, .dim = axis, .out = out});
  dim_cache_[key] = out;
  if (open_scopes_ > 0) dims_undo_.push_back(key);
  return slot(out);
}

Checked<ir::IntOrVid> Lowering::shape_of(const Value& v) {
  Checked<ir::IntOrVid> out;
  for (int d = 0; d < v.rank(); ++d) out.push_back(dim(v, d));
  return out;
}

std::optional<std::vector<ir::IntOrVid>> Lowering::known_elements(const Value& v) const {
  if (v.elements) return v.elements;
  if (!v.constant || v.rank() > 1 || is_floating(v.dtype)) return std::nullopt;
  const Tensor& t = *v.constant;
  if (t.numel() > kMaxKnownElements) return std::nullopt;
  std::vector<ir::IntOrVid> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(literal(load_as_int64(t.dtype(), t.data(), i)));
  return out;
}

std::optional<std::vector<int64_t>> Lowering::literal_ints(const Value& v) const {
  const auto known = known_elements(v);
  if (!known) return std::nullopt;
  std::vector<int64_t> out;
  for (const ir::IntOrVid& e : *known) {
    if (e.is_vid) return std::nullopt;
    out.push_back(e.literal);
  }
  return out;
}

std::vector<ir::IntOrVid> Lowering::int_elements(const Value& v, const std::string& what) {
  if (auto known = known_elements(v)) return *known;
  if (v.rank() > 1 || is_floating(v.dtype))
    throw Error(ErrorCode::InvalidProgram, source_ + ": " + what + ": expected an integer scalar or vector");
  const ir::Tid t = tensor(v);
  if (v.rank() == 0) {
    const ir::Vid out = new_value();
    emit(ir::ItemIntNode{.x = t, .out = out});
    return {slot(out)};
  }
  if (v.dims[0] < 0 || v.dims[0] > kMaxKnownElements)
    throw Error(ErrorCode::Unsupported, source_ + ": " + what + ": its length must be known at load time");
  std::vector<ir::IntOrVid> out;
  for (int64_t i = 0; i < v.dims[0]; ++i) {
    const ir::Tid element = new_temp();
    emit(ir::TakeNode{.x = t, .out = element, .index = {i, {}, {}, ir::IntOrVidOrTid::Literal}, .axis = 0});
    const ir::Vid value = new_value();
    emit(ir::ItemIntNode{.x = element, .out = value});
    out.push_back(slot(value));
  }
  return out;
}

ir::IntOrVid Lowering::add(ir::IntOrVid a, ir::IntOrVid b) {
  if (!a.is_vid && !b.is_vid) return literal(checked_add(a.literal, b.literal));
  if (!b.is_vid && b.literal == 0) return a;
  if (!a.is_vid && a.literal == 0) return b;
  const ir::Vid out = new_value();
  emit(ir::AddIntNode{.a = a, .b = b, .out = out});
  return slot(out);
}

ir::IntOrVid Lowering::sub(ir::IntOrVid a, ir::IntOrVid b) {
  if (!a.is_vid && !b.is_vid) {
    if (b.literal == INT64_MIN) throw Error(ErrorCode::InvalidProgram, "shape arithmetic overflows int64");
    return literal(checked_add(a.literal, -b.literal));
  }
  if (!b.is_vid && b.literal == 0) return a;
  const ir::Vid out = new_value();
  emit(ir::SubtractIntNode{.a = a, .b = b, .out = out});
  return slot(out);
}

ir::IntOrVid Lowering::mul(ir::IntOrVid a, ir::IntOrVid b) {
  if (!a.is_vid && !b.is_vid) return literal(checked_mul(a.literal, b.literal));
  if (!b.is_vid && b.literal == 1) return a;
  if (!a.is_vid && a.literal == 1) return b;
  const ir::Vid out = new_value();
  emit(ir::MultiplyIntNode{.a = a, .b = b, .out = out});
  return slot(out);
}

ir::IntOrVid Lowering::floor_div(ir::IntOrVid a, ir::IntOrVid b) {
  if (!a.is_vid && !b.is_vid && b.literal != 0 && !(a.literal == INT64_MIN && b.literal == -1)) {
    const int64_t q = a.literal / b.literal;
    return literal((a.literal % b.literal != 0 && ((a.literal < 0) != (b.literal < 0))) ? q - 1 : q);
  }
  if (!b.is_vid && b.literal == 1) return a;
  const ir::Vid out = new_value();
  emit(ir::FloorDivideIntNode{.a = a, .b = b, .out = out});
  return slot(out);
}

ir::IntOrVid Lowering::mod(ir::IntOrVid a, ir::IntOrVid b) {
  if (!a.is_vid && !b.is_vid && b.literal != 0 && b.literal != -1) {
    const int64_t r = a.literal % b.literal;
    return literal((r != 0 && ((r < 0) != (b.literal < 0))) ? r + b.literal : r);
  }
  const ir::Vid out = new_value();
  emit(ir::ModIntNode{.a = a, .b = b, .out = out});
  return slot(out);
}

ir::IntOrVid Lowering::product(const std::vector<ir::IntOrVid>& v) {
  ir::IntOrVid p = literal(1);
  for (const ir::IntOrVid& e : v) p = mul(p, e);
  return p;
}

void Lowering::add_output(const std::string& name, const Value& value, std::vector<ir::Dim> declared) {
  origin_ = "graph output '" + name + "'";
  if (value.sequence) throw Error(ErrorCode::Unsupported, source_ + ": " + origin_ + ": sequence outputs");
  // An output whose rank depends on a run-time If is that rank, as in onnxruntime; its metadata
  // is the model's declaration.
  const bool one_rank = ranks_of(value).size() == 1;
  const Value v = merged(value, true);
  const ir::Tid source = tensor(v);
  const ir::Tid out = new_slot(SlotClass::Output);
  ir::TensorMeta meta;
  meta.dtype = v.dtype;
  if (!one_rank) meta.shape = declared;
  for (int d = 0; d < (one_rank ? v.rank() : 0); ++d) {
    if (v.dims[d] >= 0)
      meta.shape.push_back(ir::Dim{static_cast<int32_t>(v.dims[d]), 0, -1});
    else if (static_cast<size_t>(d) < declared.size())
      meta.shape.push_back(declared[d]);
    else
      meta.shape.push_back(ir::Dim{});
  }
  slot_meta_[out.idx] = std::move(meta);
  emit(ir::IdCopyNode{.x = source, .out = out});
  outputs_.emplace_back(unique_name(name), out);
}

ir::Program Lowering::finish(ir::NamedData& named) {
  // Final Tid order: constants, inputs, outputs, temps (ExecuTorch's order, which Program uses).
  std::vector<uint32_t> final_tid(slot_classes_.size());
  uint32_t next = 0;
  for (ir::Tid t : constant_tids_) final_tid[t.idx] = next++;
  for (const auto& [name, t] : inputs_) final_tid[t.idx] = next++;
  for (const auto& [name, t] : outputs_) final_tid[t.idx] = next++;
  const uint32_t first_temp = next;
  for (size_t t = 0; t < slot_classes_.size(); ++t)
    if (slot_classes_[t] == SlotClass::Temp) final_tid[t] = next++;
  auto map = [&](ir::Tid t) { return ir::Tid{final_tid[t.idx]}; };

  ir::Program p;
  p.version = "1";
  p.num_constant_tensors = static_cast<uint32_t>(constant_tids_.size());
  p.num_input_tensors = static_cast<uint32_t>(inputs_.size());
  p.num_output_tensors = static_cast<uint32_t>(outputs_.size());
  p.num_temp_tensors = next - first_temp;
  p.num_values = num_values_;
  p.int64_values = true;
  for (ir::Chain& chain : chains_)
    for (ir::Instruction& instruction : chain.instructions) remap_tids(instruction, map);
  p.chains = std::move(chains_);
  p.tensor_meta.resize(first_temp);
  for (size_t t = 0; t < slot_classes_.size(); ++t)
    if (slot_classes_[t] != SlotClass::Temp) p.tensor_meta[final_tid[t]] = slot_meta_[t];
  for (size_t c = 0; c < constants_.size(); ++c) {
    const auto& [name, tensor] = constants_[c];
    const ir::Tid tid = map(constant_tids_[c]);
    p.named_slots.push_back({name, {tid.idx, ir::SlotType::Tensor}});
    auto owner = std::make_shared<Tensor>(tensor);
    named[name] = io::ByteView{owner, owner->data(), owner->nbytes()};
  }
  for (const auto& [name, t] : inputs_) {
    p.inputs.push_back({map(t).idx, ir::SlotType::Tensor});
    p.named_slots.push_back({name, {map(t).idx, ir::SlotType::Tensor}});
  }
  for (const auto& [name, t] : outputs_) {
    p.outputs.push_back({map(t).idx, ir::SlotType::Tensor});
    p.named_slots.push_back({name, {map(t).idx, ir::SlotType::Tensor}});
  }
  return p;
}

// ---- NodeLowering ----

NodeLowering::NodeLowering(Lowering& lowering, const pb::NodeProto& n, int64_t op_opset)
    : g(lowering), node(n), opset(op_opset) {}

std::string NodeLowering::where() const { return "node '" + node.name() + "' (" + node.op_type() + ")"; }

void NodeLowering::fail(const std::string& expected) const {
  throw Error(ErrorCode::InvalidProgram, g.source() + ": " + where() + ": expected " + expected);
}

void NodeLowering::unsupported(const std::string& what) const {
  throw Error(ErrorCode::Unsupported, versioned_label(node, opset) + ": " + what);
}

bool NodeLowering::has_input(size_t i) const { return i < num_inputs() && !node.input(static_cast<int>(i)).empty(); }

const Value& NodeLowering::in(size_t i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + ", found none");
  return g.value(node.input(static_cast<int>(i)));
}

ir::Tid NodeLowering::in_tensor(size_t i) {
  in(i);
  return g.tensor_of(node.input(static_cast<int>(i)));
}

bool NodeLowering::wants_output(size_t i) const { return i < num_outputs() && !node.output(static_cast<int>(i)).empty(); }

void NodeLowering::set_output(size_t i, Value v) {
  if (wants_output(i)) g.define(node.output(static_cast<int>(i)), std::move(v));
}

void NodeLowering::set_output(size_t i, ir::Tid tid, DType dtype, Dims dims) {
  set_output(i, Lowering::runtime(tid, dtype, std::move(dims)));
}

const pb::AttributeProto* NodeLowering::attr(const std::string& name) const {
  for (const pb::AttributeProto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t NodeLowering::attr_int(const std::string& name, int64_t fallback) const {
  const pb::AttributeProto* a = attr(name);
  if (!a) return fallback;
  if (a->type() != pb::AttributeProto::INT && !a->has_i()) fail("attribute '" + name + "' to be an int");
  return a->i();
}

float NodeLowering::attr_float(const std::string& name, float fallback) const {
  const pb::AttributeProto* a = attr(name);
  if (!a) return fallback;
  if (a->type() != pb::AttributeProto::FLOAT && !a->has_f()) fail("attribute '" + name + "' to be a float");
  return a->f();
}

std::string NodeLowering::attr_string(const std::string& name, const std::string& fallback) const {
  const pb::AttributeProto* a = attr(name);
  if (!a) return fallback;
  if (a->type() != pb::AttributeProto::STRING && !a->has_s()) fail("attribute '" + name + "' to be a string");
  return a->s();
}

std::vector<int64_t> NodeLowering::attr_ints(const std::string& name) const {
  const pb::AttributeProto* a = attr(name);
  if (!a) return {};
  return {a->ints().begin(), a->ints().end()};
}

std::vector<float> NodeLowering::attr_floats(const std::string& name) const {
  const pb::AttributeProto* a = attr(name);
  if (!a) return {};
  return {a->floats().begin(), a->floats().end()};
}

std::optional<Tensor> NodeLowering::attr_tensor(const std::string& name) const {
  const pb::AttributeProto* a = attr(name);
  if (!a) return std::nullopt;
  if (!a->has_t()) fail("attribute '" + name + "' to be a tensor");
  return g.load_tensor(a->t(), where() + ", attribute '" + name + "'");
}

const pb::GraphProto* NodeLowering::attr_graph(const std::string& name) const {
  const pb::AttributeProto* a = attr(name);
  if (!a) return nullptr;
  if (!a->has_g()) fail("attribute '" + name + "' to be a graph");
  return &a->g();
}

std::vector<int64_t> NodeLowering::literal_ints_input(size_t i, const std::string& what) const {
  auto ints = g.literal_ints(in(i));
  if (!ints) unsupported(what + " (input " + std::to_string(i) + ") must be known at load time");
  return *ints;
}

int NodeLowering::axis(int64_t a, int rank) const {
  if (a < -rank || a >= rank)
    fail("an axis in [" + std::to_string(-rank) + ", " + std::to_string(rank) + "), found " + std::to_string(a));
  return static_cast<int>(a < 0 ? a + rank : a);
}

ir::Tid NodeLowering::scalar(double v, DType dtype) { return g.scalar_constant(v, dtype); }

ir::Tid NodeLowering::cast(ir::Tid x, DType from, DType to) { return from == to ? x : convert(x, to); }

ir::Tid NodeLowering::convert(ir::Tid x, DType to) {
  const ir::Tid out = g.new_temp();
  const auto st = scalar_type(to);
  if (st) {
    g.emit(ir::AsTypeNode{.x = x, .out = out, .scalar_type = *st});
    return out;
  }
  // float64 has no ExecuTorch scalar type: ONNX's Cast keeps it.
  ir::OnnxOp op;
  op.domain = "ai.onnx";
  op.op_type = "Cast";
  op.opset = 21;
  op.name = node.name();
  op.inputs = {x};
  op.outputs = {out};
  op.attributes.push_back({"to", static_cast<int64_t>(ir::onnx_elem_type(to))});
  g.emit(std::move(op));
  return out;
}

ir::Tid NodeLowering::reshape(ir::Tid x, const std::vector<ir::IntOrVid>& shape) {
  const ir::Tid out = g.new_temp();
  g.emit(ir::ReshapeNode{.x = x, .out = out, .shape = shape});
  return out;
}

ir::Tid NodeLowering::transpose(ir::Tid x, const std::vector<int>& perm) {
  const ir::Tid out = g.new_temp();
  g.emit(ir::TransposeNode{.x = x, .out = out, .perm = {perm.begin(), perm.end()}});
  return out;
}

ir::OnnxOp NodeLowering::kept_op() {
  ir::OnnxOp op;
  op.domain = node.domain().empty() ? "ai.onnx" : node.domain();
  op.op_type = node.op_type();
  op.opset = static_cast<int32_t>(opset);
  op.name = node.name();
  for (size_t i = 0; i < num_inputs(); ++i)
    op.inputs.push_back(has_input(i) ? std::optional<ir::Tid>(in_tensor(i)) : std::nullopt);
  for (size_t i = 0; i < num_outputs(); ++i)
    op.outputs.push_back(wants_output(i) ? std::optional<ir::Tid>(g.new_temp()) : std::nullopt);
  for (const pb::AttributeProto& a : node.attribute()) {
    switch (a.type()) {
      case pb::AttributeProto::INT:
        op.attributes.push_back({a.name(), a.i()});
        break;
      case pb::AttributeProto::FLOAT:
        op.attributes.push_back({a.name(), double{a.f()}});
        break;
      case pb::AttributeProto::STRING:
        op.attributes.push_back({a.name(), a.s()});
        break;
      case pb::AttributeProto::INTS:
        op.attributes.push_back({a.name(), std::vector<int64_t>(a.ints().begin(), a.ints().end())});
        break;
      case pb::AttributeProto::FLOATS:
        op.attributes.push_back({a.name(), std::vector<double>(a.floats().begin(), a.floats().end())});
        break;
      case pb::AttributeProto::STRINGS:
        op.attributes.push_back({a.name(), std::vector<std::string>(a.strings().begin(), a.strings().end())});
        break;
      default:
        unsupported("attribute '" + a.name() + "' of this type");
    }
  }
  return op;
}

}  // namespace wgml::frontend::onnx
