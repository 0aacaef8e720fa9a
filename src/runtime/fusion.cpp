#include "runtime/fusion.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <set>

#include "ir/slot_visit.h"

namespace wgml::runtime {
namespace {

using ir::FieldRole;
using ir::Tid;

constexpr size_t kBeforeChain = std::numeric_limits<size_t>::max();

bool has_body_chains(const ir::Instruction& instruction) {
  const ir::Node* node = ir::as_node(instruction);
  return node && (std::holds_alternative<ir::ScanNode>(*node) || std::holds_alternative<ir::IfNode>(*node));
}

// Whether the instruction writes value slot v (ONNX and fused ops write none).
bool writes_value(const ir::Instruction& instruction, ir::Vid v) {
  const ir::Node* node = ir::as_node(instruction);
  bool writes = false;
  if (node)
    std::visit(
        [&](const auto& n) {
          ir::for_each_field(n, [&](std::string_view, const auto& value, FieldRole role) {
            if constexpr (std::is_same_v<std::decay_t<decltype(value)>, ir::Vid>)
              writes = writes || (role == FieldRole::Write && value.idx == v.idx);
          });
        },
        *node);
  return writes;
}

// Which instruction wrote each tensor value an instruction reads, and which instructions read
// each value an instruction writes. A value is "escaping" when something outside the chain's
// straight line may read it: a program output, a mutable buffer, a Scan or If body.
class DefUse {
 public:
  DefUse(const ir::Program& p, const std::vector<ir::Instruction>& chain) : writes_(chain.size()) {
    std::map<uint32_t, size_t> last_writer;
    // A value escapes into a body that runs while it is in its slot: one after its writer, up to
    // the instruction that overwrites it (included). Checked when the value is overwritten, not at
    // each body for every slot (that made fusion quadratic in the number of Ifs and Loops).
    std::optional<size_t> last_body;
    auto note_escape = [&](uint32_t slot, size_t writer) {
      if (last_body && *last_body > writer) escaping_.insert({writer, slot});
    };
    reads_.resize(chain.size());
    for (size_t i = 0; i < chain.size(); ++i) {
      if (has_body_chains(chain[i])) last_body = i;
      ir::visit_slots(
          chain[i],
          [&](Tid t, FieldRole role, std::string_view) {
            if (role == FieldRole::Write) return;
            const auto it = last_writer.find(t.idx);
            const size_t writer = it == last_writer.end() ? kBeforeChain : it->second;
            reads_[i][t.idx] = writer;
            readers_[{writer, t.idx}].push_back(i);
          },
          [](ir::Vid, std::string_view) {});
      ir::visit_slots(
          chain[i],
          [&](Tid t, FieldRole role, std::string_view) {
            if (role == FieldRole::Read) return;
            if (const auto it = last_writer.find(t.idx); it != last_writer.end()) note_escape(t.idx, it->second);
            last_writer[t.idx] = i;
            writes_[i].push_back(t.idx);
          },
          [](ir::Vid, std::string_view) {});
    }
    for (const auto& [slot, writer] : last_writer) note_escape(slot, writer);
    std::vector<ir::Slot> live_after = p.outputs;
    live_after.insert(live_after.end(), p.mutable_buffers.begin(), p.mutable_buffers.end());
    for (const ir::Slot& s : live_after)
      if (const auto it = last_writer.find(s.idx); s.type == ir::SlotType::Tensor && it != last_writer.end())
        escaping_.insert({it->second, s.idx});
  }

  // The instruction whose value of `t` instruction `reader` reads (kBeforeChain: a constant, an
  // input, a buffer's value from the previous run), or nullopt when it does not read `t`.
  std::optional<size_t> writer(size_t reader, Tid t) const {
    const auto it = reads_[reader].find(t.idx);
    return it == reads_[reader].end() ? std::nullopt : std::optional(it->second);
  }
  // Whether `reader` is all that reads the value `writer` wrote to `t`.
  bool read_only_by(size_t writer, Tid t, size_t reader) const {
    if (escaping_.count({writer, t.idx})) return false;
    const auto it = readers_.find({writer, t.idx});
    return it != readers_.end() && std::all_of(it->second.begin(), it->second.end(), [&](size_t r) { return r == reader; });
  }
  const std::vector<uint32_t>& writes(size_t i) const { return writes_[i]; }
  // Whether every reader of the value `writer` wrote to `t` is in `allowed` (and it escapes not).
  bool read_only_by_any(size_t writer, Tid t, const std::set<size_t>& allowed) const {
    if (escaping_.count({writer, t.idx})) return false;
    const auto it = readers_.find({writer, t.idx});
    return it == readers_.end() || std::all_of(it->second.begin(), it->second.end(), [&](size_t r) { return allowed.count(r); });
  }

 private:
  std::vector<std::map<uint32_t, size_t>> reads_;
  std::map<std::pair<size_t, uint32_t>, std::vector<size_t>> readers_;
  std::set<std::pair<size_t, uint32_t>> escaping_;
  std::vector<std::vector<uint32_t>> writes_;
};

// A pattern found in the chain: its instructions (ascending) and the op that replaces them, at the
// place of its last instruction (of its first with `at_first`). An op placed before a part whose
// output it makes writes that output to a slot of its own, relayed by an IdCopy at the part's
// place: the part's slot may hold other values until then (exporters reuse temp slots).
struct Fusion {
  struct Relay {
    size_t output;  // in op.outputs
    size_t part;    // in parts
  };
  std::vector<size_t> parts;
  ir::OnnxOp op;
  bool at_first = false;
  std::vector<Relay> relays;
  // Instructions emitted just before the op (a later product's weight transposed again at the
  // place of the first, into a slot of its own), and ones it leaves dead (the Transposes they
  // replace), dropped from the chain.
  std::vector<ir::Instruction> before;
  std::vector<size_t> dropped;
  // The parts chain when it is not the parts themselves (value slots of its own), and main-chain
  // instructions outside the parts rewritten in place (by their index).
  std::vector<ir::Instruction> parts_chain;
  std::map<size_t, ir::Instruction> rewritten;
  // Inputs copied aside at the first part's place (IdCopy into slots of their own, no data
  // copied), where instructions between the parts write their slots before the op's place.
  std::vector<ir::Instruction> copies_at_first;
};

class Matcher {
 public:
  Matcher(const std::vector<ir::Instruction>& chain, const DefUse& flow) : chain_(chain), flow_(flow) {}

  template <class N>
  const N* node_at(size_t i) const {
    if (i == kBeforeChain || used_.count(i)) return nullptr;
    const ir::Node* node = ir::as_node(chain_[i]);
    return node ? std::get_if<N>(node) : nullptr;
  }
  // The node of type N that wrote the value of `t` that `reader` reads, when `reader` alone reads
  // that value; its index in `at`.
  template <class N>
  const N* sole_producer(size_t reader, Tid t, size_t& at) const {
    const std::optional<size_t> w = flow_.writer(reader, t);
    if (!w || *w == kBeforeChain || !flow_.read_only_by(*w, t, reader)) return nullptr;
    at = *w;
    return node_at<N>(*w);
  }
  std::optional<size_t> writer(size_t reader, Tid t) const { return flow_.writer(reader, t); }

  // Whether the pattern `parts` (ascending) can run at its last instruction: each value it reads
  // from outside is still in its slot there (no instruction outside the pattern writes that slot
  // in between).
  // `relayed`: a read (part, slot) left out, whose value the caller copies aside at that part.
  bool inputs_hold_until_last(const std::vector<size_t>& parts, std::optional<std::pair<size_t, Tid>> relayed = {}) const {
    const std::set<size_t> inside(parts.begin(), parts.end());
    bool hold = true;
    for (size_t k : parts)
      ir::visit_slots(
          chain_[k],
          [&](Tid t, FieldRole role, std::string_view) {
            if (role == FieldRole::Write || (relayed && relayed->first == k && relayed->second == t)) return;
            const std::optional<size_t> w = flow_.writer(k, t);
            if (w && *w != kBeforeChain && inside.count(*w)) return;  // made inside the pattern
            if (written_between(t, k, parts.back(), inside)) hold = false;
          },
          [](ir::Vid, std::string_view) {});
    return hold;
  }
  // Whether no instruction between the pattern's first and last, outside it, touches value slot v.
  bool value_kept(ir::Vid v, const std::vector<size_t>& parts) const {
    const std::set<size_t> inside(parts.begin(), parts.end());
    bool kept = true;
    for (size_t between = parts.front() + 1; between < parts.back(); ++between)
      if (!inside.count(between))
        ir::visit_slots(
            chain_[between], [](Tid, FieldRole, std::string_view) {},
            [&](ir::Vid touched, std::string_view) { kept = kept && touched.idx != v.idx; });
    return kept;
  }
  void claim(const std::vector<size_t>& parts) { used_.insert(parts.begin(), parts.end()); }

  // The fused op domain.op_type at instruction i, when no pattern took it.
  const ir::OnnxOp* op_at(size_t i, std::string_view domain, std::string_view op_type) const {
    if (i == kBeforeChain || used_.count(i)) return nullptr;
    const auto* op = std::get_if<ir::OnnxOp>(&chain_[i]);
    return op && op->parts_chain && op->domain == domain && op->op_type == op_type ? op : nullptr;
  }
  // Whether an instruction in (after, before), outside `parts`, reads or writes tensor slot t.
  bool slot_touched(Tid t, size_t after, size_t before, const std::set<size_t>& parts) const {
    bool touched = false;
    for (size_t i = after + 1; i < before; ++i)
      if (!parts.count(i))
        ir::visit_slots(
            chain_[i], [&](Tid u, FieldRole, std::string_view) { touched = touched || u.idx == t.idx; },
            [](ir::Vid, std::string_view) {});
    return touched;
  }
  // The last instruction before `before` (from `after` on) that writes value slot v, or nullopt;
  // a Scan or If on the way counts as one (its bodies may write any value slot).
  std::optional<size_t> value_writer(ir::Vid v, size_t after, size_t before) const {
    for (size_t i = before; i-- > after;)
      if (has_body_chains(chain_[i]) || writes_value(chain_[i], v)) return i;
    return std::nullopt;
  }
  // Whether an instruction in (after, before), outside `parts`, writes tensor slot t.
  bool written_between(Tid t, size_t after, size_t before, const std::set<size_t>& parts) const {
    for (size_t i = after + 1; i < before; ++i)
      if (!parts.count(i) && writes(i, t)) return true;
    return false;
  }
  const ir::Instruction& at(size_t i) const { return chain_[i]; }
  const DefUse& flow() const { return flow_; }

 private:
  bool writes(size_t i, Tid t) const {
    const auto& w = flow_.writes(i);
    return std::find(w.begin(), w.end(), t.idx) != w.end();
  }

  const std::vector<ir::Instruction>& chain_;
  const DefUse& flow_;
  std::set<size_t> used_;
};

bool literal(const ir::IntOrVid& v, int64_t& out) {
  if (v.is_vid) return false;
  out = v.literal;
  return true;
}

// A temp slot no instruction uses yet.
Tid new_temp_slot(ir::Program& p) {
  const Tid made{static_cast<uint32_t>(p.num_tensors())};
  ++p.num_temp_tensors;
  return made;
}

ir::OnnxOp fused_op(std::string domain, std::string op_type, std::vector<Tid> inputs, Tid out) {
  ir::OnnxOp op;
  op.domain = std::move(domain);
  op.op_type = std::move(op_type);
  for (Tid t : inputs) op.inputs.emplace_back(t);
  op.outputs.emplace_back(out);
  return op;
}

// rotate_half(x) = concat(-x[..., half:], x[..., :half]), as Hugging Face's RoPE writes it; `r` is
// the Concatenate's output read by `reader`. Finds x, the slices' axis, half and stop.
struct RotateHalf {
  Tid x{};
  int64_t axis = 0, half = 0, stop = 0;
  int32_t concat_axis = 0;
  std::vector<size_t> parts;
};

std::optional<RotateHalf> match_rotate_half(const Matcher& m, size_t reader, Tid r) {
  size_t concat_at = 0, neg_at = 0, upper_at = 0, lower_at = 0;
  const auto* concat = m.sole_producer<ir::ConcatenateNode>(reader, r, concat_at);
  if (!concat || concat->tensors.size() != 2) return std::nullopt;
  const auto* neg = m.sole_producer<ir::NegNode>(concat_at, concat->tensors[0], neg_at);
  const auto* lower = m.sole_producer<ir::SliceNode>(concat_at, concat->tensors[1], lower_at);
  if (!neg || !lower || concat->tensors[0] == concat->tensors[1]) return std::nullopt;
  const auto* upper = m.sole_producer<ir::SliceNode>(neg_at, neg->x, upper_at);
  if (!upper || upper->x.idx != lower->x.idx || m.writer(upper_at, upper->x) != m.writer(lower_at, lower->x)) return std::nullopt;
  RotateHalf found;
  int64_t lower_axis, lower_start, upper_axis, upper_start;
  if (!literal(lower->axis, lower_axis) || !literal(lower->start, lower_start) || !literal(lower->stop, found.half) ||
      !literal(upper->axis, upper_axis) || !literal(upper->start, upper_start) || !literal(upper->stop, found.stop))
    return std::nullopt;
  if (lower_axis != upper_axis || lower_start != 0 || upper_start != found.half || found.half <= 0 || lower->step != 1 ||
      upper->step != 1)
    return std::nullopt;
  found.x = lower->x;
  found.axis = lower_axis;
  found.concat_axis = concat->axis;
  found.parts = {concat_at, neg_at, upper_at, lower_at};
  return found;
}

// out = Add(Multiply(x, cos), Multiply(rotate_half(x), sin)), operands in either order.
std::optional<Fusion> match_rope(const Matcher& m, size_t add_at, const ir::AddNode& add) {
  for (const auto& [plain_operand, rotated_operand] : {std::pair(add.a, add.b), std::pair(add.b, add.a)}) {
    size_t plain_at = 0, rotated_at = 0;
    const auto* plain = m.sole_producer<ir::MultiplyNode>(add_at, plain_operand, plain_at);
    const auto* rotated = m.sole_producer<ir::MultiplyNode>(add_at, rotated_operand, rotated_at);
    if (!plain || !rotated || plain_at == rotated_at) continue;
    for (const auto& [r, sin] : {std::pair(rotated->a, rotated->b), std::pair(rotated->b, rotated->a)}) {
      std::optional<RotateHalf> rot = match_rotate_half(m, rotated_at, r);
      if (!rot) continue;
      const std::optional<size_t> x_writer = m.writer(rot->parts[3], rot->x);
      for (const auto& [x, cos] : {std::pair(plain->a, plain->b), std::pair(plain->b, plain->a)}) {
        if (x.idx != rot->x.idx || m.writer(plain_at, x) != x_writer) continue;
        Fusion f;
        f.parts = rot->parts;
        f.parts.insert(f.parts.end(), {plain_at, rotated_at, add_at});
        std::sort(f.parts.begin(), f.parts.end());
        f.op = fused_op("wgml", "RotateHalf", {x, cos, sin}, add.out);
        f.op.attributes = {
            {"axis", rot->axis}, {"half", rot->half}, {"stop", rot->stop}, {"concat_axis", int64_t{rot->concat_axis}}};
        return f;
      }
    }
  }
  return std::nullopt;
}

// The position of `up` among the QuantizedMatmul spec's inputs (x, w, scales, biases, lhs_indices,
// rhs_indices, addend, up).
constexpr size_t kUpInput = 7;

// x = Multiply(Silu(gate), up), operands in either order (the SwiGLU of Llama-style MLPs), with
// the instructions that compute it.
struct Gate {
  std::vector<size_t> parts;
  Tid gate, up;
};

std::optional<Gate> match_gate(const Matcher& m, size_t reader, Tid x) {
  size_t product_at = 0, silu_at = 0;
  const auto* product = m.sole_producer<ir::MultiplyNode>(reader, x, product_at);
  if (!product) return std::nullopt;
  for (const auto& [activated, up] : {std::pair(product->a, product->b), std::pair(product->b, product->a)})
    if (const auto* silu = m.sole_producer<ir::SiluNode>(product_at, activated, silu_at); silu && activated.idx != up.idx)
      return Gate{{silu_at, product_at}, silu->x, up};
  return std::nullopt;
}

// How a QuantizedMatmul's weights are quantized, as the attributes of a fused op that reads them.
std::vector<ir::OnnxAttribute> quantization_attributes(const ir::QuantizedMatmulNode& qmm) {
  return {{"group_size", int64_t{qmm.group_size}},
          {"bits", int64_t{qmm.bits}},
          {"mode", qmm.mode},
          {"transpose", int64_t{qmm.transpose}}};
}

// The quantized product of `qmm` written to `out`, with addend `residual` and the gate folded
// into its x when given.
ir::OnnxOp quantized_product(const ir::QuantizedMatmulNode& qmm, const std::optional<Gate>& gate, std::optional<Tid> residual,
                             Tid out) {
  ir::OnnxOp op = fused_op("mlx", "QuantizedMatmul", {gate ? gate->gate : qmm.x, qmm.w, qmm.scales}, out);
  op.inputs.insert(op.inputs.end(), {qmm.biases, std::nullopt, std::nullopt, residual});
  if (gate) op.inputs.emplace_back(gate->up);
  op.attributes = quantization_attributes(qmm);
  return op;
}

// The parts of a pattern: `rest`, then the gate's instructions when there is one, ascending.
std::vector<size_t> pattern_parts(std::vector<size_t> rest, const std::optional<Gate>& gate) {
  if (gate) rest.insert(rest.end(), gate->parts.begin(), gate->parts.end());
  std::sort(rest.begin(), rest.end());
  return rest;
}

// out = Add(product, r), operands in either order, where product is an Addmm with no bias and
// alpha 1 (then Addmm with bias r) or a QuantizedMatmul (then one with addend r, and its gate
// when its x is one).
std::optional<Fusion> match_residual(const Matcher& m, size_t add_at, const ir::AddNode& add) {
  for (const auto& [product, residual] : {std::pair(add.a, add.b), std::pair(add.b, add.a)}) {
    if (residual.idx == product.idx) continue;
    size_t at = 0;
    Fusion f;
    if (const auto* mm = m.sole_producer<ir::AddmmNode>(add_at, product, at); mm && !mm->bias && mm->alpha == 1.0f) {
      f.op = fused_op("mlx", "Addmm", {mm->mat1, mm->mat2, residual}, add.out);
      f.parts = {at, add_at};
    } else if (const auto* qmm = m.sole_producer<ir::QuantizedMatmulNode>(add_at, product, at)) {
      const std::optional<Gate> gate = match_gate(m, at, qmm->x);
      f.op = quantized_product(*qmm, gate, residual, add.out);
      f.parts = pattern_parts({at, add_at}, gate);
    } else {
      continue;
    }
    return f;
  }
  return std::nullopt;
}

// out = QuantizedMatmul(Multiply(Silu(gate), up), ...) with no residual after it.
std::optional<Fusion> match_gated_product(const Matcher& m, size_t at, const ir::QuantizedMatmulNode& qmm) {
  const std::optional<Gate> gate = match_gate(m, at, qmm.x);
  if (!gate) return std::nullopt;
  Fusion f;
  f.parts = pattern_parts({at}, gate);
  f.op = quantized_product(qmm, gate, std::nullopt, qmm.out);
  return f;
}

// Whether two quantized products multiply the same value of the same x by weights quantized alike.
bool same_x_and_quantization(const Matcher& m, size_t a_at, const ir::QuantizedMatmulNode& a, size_t b_at,
                             const ir::QuantizedMatmulNode& b) {
  return a.x == b.x && m.writer(a_at, a.x) == m.writer(b_at, b.x) && a.group_size == b.group_size && a.bits == b.bits &&
         a.mode == b.mode && a.transpose == b.transpose && a.biases.has_value() == b.biases.has_value();
}

// A product with no bias (then alpha does not apply: ExecuTorch's plain matmul).
const ir::AddmmNode* plain_product(const Matcher& m, size_t reader, Tid t, size_t& at) {
  const auto* mm = m.sole_producer<ir::AddmmNode>(reader, t, at);
  return mm && !mm->bias ? mm : nullptr;
}

// out = Multiply(Silu(x @ w_gate), x @ w_up), operands in either order, both products of the same
// value of x (a Llama MLP's gate and up projections and their SwiGLU): one kernel that reads x
// once and computes both products, wgml.QuantizedSwiGlu (4-bit) or wgml.MatmulSwiGlu.
std::optional<Fusion> match_swiglu(const Matcher& m, size_t product_at, const ir::MultiplyNode& product) {
  for (const auto& [activated, up] : {std::pair(product.a, product.b), std::pair(product.b, product.a)}) {
    size_t silu_at = 0, gate_at = 0, up_at = 0;
    const auto* silu = m.sole_producer<ir::SiluNode>(product_at, activated, silu_at);
    if (!silu || activated.idx == up.idx) continue;
    Fusion f;
    const auto* gate_q = m.sole_producer<ir::QuantizedMatmulNode>(silu_at, silu->x, gate_at);
    const auto* up_q = m.sole_producer<ir::QuantizedMatmulNode>(product_at, up, up_at);
    const auto* gate_mm = plain_product(m, silu_at, silu->x, gate_at);
    const auto* up_mm = plain_product(m, product_at, up, up_at);
    if (gate_q && up_q && gate_at != up_at && same_x_and_quantization(m, gate_at, *gate_q, up_at, *up_q)) {
      f.op = fused_op("wgml", "QuantizedSwiGlu", {gate_q->x, gate_q->w, gate_q->scales}, product.out);
      f.op.inputs.insert(f.op.inputs.end(), {gate_q->biases, up_q->w, up_q->scales, up_q->biases});
      f.op.attributes = quantization_attributes(*gate_q);
    } else if (gate_mm && up_mm && gate_at != up_at && gate_mm->mat1 == up_mm->mat1 &&
               m.writer(gate_at, gate_mm->mat1) == m.writer(up_at, up_mm->mat1)) {
      f.op = fused_op("wgml", "MatmulSwiGlu", {gate_mm->mat1, gate_mm->mat2, up_mm->mat2}, product.out);
    } else {
      continue;
    }
    f.parts = {gate_at, up_at, silu_at, product_at};
    std::sort(f.parts.begin(), f.parts.end());
    return f;
  }
  return std::nullopt;
}

// How far after the first of several products of one x the others are looked for (a Llama
// attention's q, k and v projections come one after the other, with q's reshapes between).
constexpr size_t kProductsWindow = 16;

// Three quantized products of one value of x by weights quantized alike (q, k and v): one
// wgml.QuantizedProducts at the place of the first, which needs each later product's weights made
// before it; the later outputs are relayed to their slots at their products' places.
std::optional<Fusion> match_products(const Matcher& m, size_t first_at, const ir::QuantizedMatmulNode& first, size_t end) {
  Fusion f;
  f.parts = {first_at};
  std::vector<const ir::QuantizedMatmulNode*> nodes = {&first};
  for (size_t at = first_at + 1; at < std::min(end, first_at + kProductsWindow) && nodes.size() < 3; ++at) {
    const auto* qmm = m.node_at<ir::QuantizedMatmulNode>(at);
    if (!qmm || !same_x_and_quantization(m, first_at, first, at, *qmm)) continue;
    const auto made_before = [&](const std::optional<Tid>& t) {
      const auto w = t ? m.writer(at, *t) : std::nullopt;
      return !t || (w && (*w == kBeforeChain || *w < first_at));
    };
    if (!made_before(qmm->w) || !made_before(qmm->scales) || !made_before(qmm->biases)) continue;
    f.parts.push_back(at);
    nodes.push_back(qmm);
  }
  if (nodes.size() != 3) return std::nullopt;
  f.op = fused_op("wgml", "QuantizedProducts", {first.x}, first.out);
  for (const auto* n : nodes) f.op.inputs.insert(f.op.inputs.end(), {n->w, n->scales, n->biases});
  f.op.outputs = {nodes[0]->out, nodes[1]->out, nodes[2]->out};
  f.op.attributes = quantization_attributes(first);
  f.at_first = true;
  f.relays = {{1, 1}, {2, 2}};
  return f;
}

// Where a plain product's weight, read at `at`, is made when the product moves to `first_at`:
// kBeforeChain when it is there already (a constant, a folded transpose), else the place of the
// Transpose (of a value that is there) that makes it later; nullopt when neither.
std::optional<size_t> weight_source(const Matcher& m, size_t at, Tid w, size_t first_at) {
  const std::optional<size_t> made = m.writer(at, w);
  if (!made) return std::nullopt;
  if (*made == kBeforeChain || *made < first_at) return kBeforeChain;
  const auto* transpose = m.node_at<ir::TransposeNode>(*made);
  const std::optional<size_t> source = transpose ? m.writer(*made, transpose->x) : std::nullopt;
  if (!source || (*source != kBeforeChain && *source >= first_at)) return std::nullopt;
  return made;
}

// Three plain products (Addmm without a bias) of one value of mat1 (a Llama attention's dense q,
// k and v projections): one wgml.MatmulProducts at the place of the first, as for the quantized
// ones. A later weight transposed after the first is transposed again there, into a temp slot of
// its own (exporters reuse the slot in between); the Transpose it replaces is dropped when that
// product was its only reader.
std::optional<Fusion> match_dense_products(ir::Program& p, const Matcher& m, size_t first_at, const ir::AddmmNode& first,
                                           size_t end) {
  std::vector<std::pair<size_t, const ir::AddmmNode*>> found = {{first_at, &first}};
  for (size_t at = first_at + 1; at < std::min(end, first_at + kProductsWindow) && found.size() < 3; ++at) {
    const auto* mm = m.node_at<ir::AddmmNode>(at);
    if (mm && !mm->bias && mm->mat1 == first.mat1 && m.writer(at, mm->mat1) == m.writer(first_at, first.mat1))
      found.emplace_back(at, mm);
  }
  if (first.bias || found.size() != 3) return std::nullopt;
  std::vector<size_t> sources;
  for (const auto& [at, mm] : found) {
    const std::optional<size_t> source = weight_source(m, at, mm->mat2, first_at);
    if (!source) return std::nullopt;
    sources.push_back(*source);
  }
  Fusion f;
  f.op = fused_op("wgml", "MatmulProducts", {first.mat1}, first.out);
  for (size_t s = 0; s < found.size(); ++s) {
    const auto& [at, mm] = found[s];
    ir::AddmmNode part = *mm;
    if (sources[s] != kBeforeChain) {
      ir::TransposeNode again = std::get<ir::TransposeNode>(*ir::as_node(m.at(sources[s])));
      again.out = part.mat2 = new_temp_slot(p);
      f.before.emplace_back(ir::Node(again));
      if (m.flow().read_only_by(sources[s], mm->mat2, at)) f.dropped.push_back(sources[s]);
    }
    f.parts.push_back(at);
    f.parts_chain.emplace_back(ir::Node(part));
    f.op.inputs.emplace_back(part.mat2);
  }
  f.op.outputs = {first.out, found[1].second->out, found[2].second->out};
  f.at_first = true;
  f.relays = {{1, 1}, {2, 2}};
  return f;
}

// Sdpa over prefixes of the KV caches, k = Slice(k_cache, axis, 0, n) and v = Slice(v_cache, axis,
// 0, n) with one bound n (a value slot or a literal): Sdpa reading the caches in place up to n.
std::optional<Fusion> match_cache_attention(const Matcher& m, size_t at, const ir::SdpaNode& sdpa) {
  size_t k_at = 0, v_at = 0;
  const auto* k = m.sole_producer<ir::SliceNode>(at, sdpa.k, k_at);
  const auto* v = m.sole_producer<ir::SliceNode>(at, sdpa.v, v_at);
  if (!k || !v || k_at == v_at) return std::nullopt;
  int64_t k_axis, v_axis, k_start, v_start;
  if (!literal(k->axis, k_axis) || !literal(v->axis, v_axis) || !literal(k->start, k_start) || !literal(v->start, v_start) ||
      k_axis != v_axis || k_start != 0 || v_start != 0 || k->step != 1 || v->step != 1)
    return std::nullopt;
  const ir::IntOrVid& stop = k->stop;
  if (stop.is_vid != v->stop.is_vid || (stop.is_vid ? stop.vid.idx != v->stop.vid.idx : stop.literal != v->stop.literal))
    return std::nullopt;
  Fusion f;
  f.parts = {k_at, v_at, at};
  std::sort(f.parts.begin(), f.parts.end());
  if (stop.is_vid && !m.value_kept(stop.vid, f.parts)) return std::nullopt;
  std::vector<Tid> inputs = {sdpa.q, k->x, v->x};
  if (sdpa.mask) inputs.push_back(*sdpa.mask);
  f.op = fused_op("mlx", "Sdpa", inputs, sdpa.out);
  f.op.attributes = {{"scale", double{sdpa.scale}}, {"causal", int64_t{sdpa.causal}}, {"kvAxis", k_axis}};
  if (stop.is_vid)
    f.op.value_attributes = {{"kvStop", stop.vid}};
  else
    f.op.attributes.push_back({"kvStop", stop.literal});
  return f;
}

// Dequantize(Take(w, rows), Take(scales, rows), Take(biases, rows)), each Take along axis 0 by one
// value of one index tensor (a quantized embedding's lookup): mlx.Dequantize of the whole table
// with `rows`, which reads each gathered row in place of copying it.
std::optional<Fusion> match_gathered_dequantize(const Matcher& m, size_t at, const ir::DequantizeNode& dq) {
  if (dq.global_scale) return std::nullopt;
  Fusion f;
  std::vector<Tid> tables;
  std::optional<Tid> rows;
  std::optional<size_t> rows_writer;
  for (const std::optional<Tid>& operand : {std::optional(dq.w), std::optional(dq.scales), dq.biases}) {
    if (!operand) continue;
    size_t take_at = 0;
    const auto* take = m.sole_producer<ir::TakeNode>(at, *operand, take_at);
    if (!take || take->axis != 0 || take->index.kind != ir::IntOrVidOrTid::Tensor) return std::nullopt;
    const std::optional<size_t> writer = m.writer(take_at, take->index.tid);
    if (rows && (take->index.tid != *rows || writer != rows_writer)) return std::nullopt;
    rows = take->index.tid;
    rows_writer = writer;
    tables.push_back(take->x);
    f.parts.push_back(take_at);
  }
  f.parts.push_back(at);
  std::sort(f.parts.begin(), f.parts.end());
  f.op = fused_op("mlx", "Dequantize", {tables[0], tables[1]}, dq.out);
  f.op.inputs.insert(f.op.inputs.end(), {dq.biases ? std::optional(tables[2]) : std::nullopt, std::nullopt, rows});
  f.op.attributes = {{"group_size", int64_t{dq.group_size}}, {"bits", int64_t{dq.bits}}, {"mode", dq.mode}};
  if (dq.dtype) f.op.attributes.push_back({"dtype", int64_t{*dq.dtype}});
  return f;
}

// A KV-cache write `SliceUpdate(cache, update, axis, start, stop)` in place, step 1, whose stop is
// start + SymSize(update, axis) as exports compute it: the SymSize and AddInt that make it.
struct CacheWrite {
  const ir::SliceUpdateNode* node = nullptr;
  size_t at = 0, size_at = 0, add_at = 0;
  int64_t axis = 0;
};

std::optional<CacheWrite> match_cache_write(const Matcher& m, size_t at) {
  CacheWrite w{m.node_at<ir::SliceUpdateNode>(at), at};
  if (!w.node || w.node->dst.idx != w.node->out.idx || w.node->step != 1 || !literal(w.node->axis, w.axis) ||
      !w.node->start.is_vid || !w.node->stop.is_vid)
    return std::nullopt;
  const ir::Vid start = w.node->start.vid;
  const std::optional<size_t> add_at = m.value_writer(w.node->stop.vid, 0, at);
  const auto* add = add_at ? std::get_if<ir::AddIntNode>(ir::as_node(m.at(*add_at))) : nullptr;
  if (!add || !add->a.is_vid || !add->b.is_vid) return std::nullopt;
  const ir::Vid size = add->a.vid.idx == start.idx ? add->b.vid : add->a.vid;
  if ((add->a.vid.idx != start.idx && add->b.vid.idx != start.idx) || m.value_writer(start, *add_at, at)) return std::nullopt;
  const std::optional<size_t> size_at = m.value_writer(size, 0, *add_at);
  const auto* sym = size_at ? std::get_if<ir::SymSizeNode>(ir::as_node(m.at(*size_at))) : nullptr;
  if (!sym || sym->a.idx != w.node->update.idx || sym->dim != w.axis ||
      m.writer(*size_at, sym->a) != m.writer(at, w.node->update))
    return std::nullopt;
  w.add_at = *add_at;
  w.size_at = *size_at;
  return w;
}

bool same_attributes(const ir::OnnxOp& a, const ir::OnnxOp& b) {
  return std::equal(
      a.attributes.begin(), a.attributes.end(), b.attributes.begin(), b.attributes.end(),
      [](const ir::OnnxAttribute& x, const ir::OnnxAttribute& y) { return x.name == y.name && x.value == y.value; });
}

// How far before a layer's v-cache write its k-cache write and RoPE ops are looked for.
constexpr size_t kRotaryWindow = 12;

// The parts chain of a rotary KV write: the two RotateHalf ops, then each cache write after a
// SymSize and AddInt of its own that recompute its stop into fresh value slots (the main chain's
// may hold other values by the fused op's place).
std::vector<ir::Instruction> rotary_parts(ir::Program& p, const Matcher& m, const ir::OnnxOp& q_rope, size_t rk,
                                          const std::array<CacheWrite, 2>& writes) {
  std::vector<ir::Instruction> parts = {q_rope, m.at(rk)};
  for (const CacheWrite& w : writes) {
    const ir::Vid size{p.num_values++}, stop{p.num_values++};
    ir::SymSizeNode sym = std::get<ir::SymSizeNode>(*ir::as_node(m.at(w.size_at)));
    sym.out = size;
    ir::SliceUpdateNode write = *w.node;
    write.stop = ir::IntOrVid{0, stop, true};
    parts.emplace_back(ir::Node(sym));
    parts.emplace_back(ir::Node(ir::AddIntNode{w.node->start, ir::IntOrVid{0, size, true}, stop}));
    parts.emplace_back(ir::Node(write));
  }
  return parts;
}

// A decode step's rotary embedding and cache writes (one attention layer of a Llama export, once
// the first stage made its RoPEs wgml.RotateHalf): q' = RotateHalf(q), k' = RotateHalf(k) with
// the same cos, sin and attributes; k' and v written into their caches at one start, each stop
// start + its extent. One wgml.RotaryKvWrite at the v write's place. k' moves there from its
// RotateHalf, so its SymSize reads k (of the same shape) instead, and nothing else in between may
// touch q', k' or the k cache.
std::optional<Fusion> match_rotary_kv_write(ir::Program& p, const Matcher& m, size_t j) {
  const std::optional<CacheWrite> v_write = match_cache_write(m, j);
  if (!v_write) return std::nullopt;
  const ir::Vid start = v_write->node->start.vid;
  for (size_t i = j; i-- > (j > kRotaryWindow ? j - kRotaryWindow : 0);) {
    const std::optional<CacheWrite> k_write = match_cache_write(m, i);
    if (!k_write || k_write->node->start.vid.idx != start.idx || k_write->node->dst.idx == v_write->node->dst.idx) continue;
    const std::optional<size_t> rk = m.writer(i, k_write->node->update);
    const ir::OnnxOp* k_rope = rk ? m.op_at(*rk, "wgml", "RotateHalf") : nullptr;
    if (!k_rope || m.value_writer(start, i, j)) return std::nullopt;
    for (size_t rq = *rk; rq-- > (*rk > kRotaryWindow ? *rk - kRotaryWindow : 0);) {
      const ir::OnnxOp* q_rope = m.op_at(rq, "wgml", "RotateHalf");
      if (!q_rope || q_rope->inputs[1] != k_rope->inputs[1] || q_rope->inputs[2] != k_rope->inputs[2] ||
          m.writer(rq, *q_rope->inputs[1]) != m.writer(*rk, *k_rope->inputs[1]) ||
          m.writer(rq, *q_rope->inputs[2]) != m.writer(*rk, *k_rope->inputs[2]) || !same_attributes(*q_rope, *k_rope))
        continue;
      Fusion f;
      f.parts = {rq, *rk, i, j};
      const std::set<size_t> inside(f.parts.begin(), f.parts.end());
      const Tid q_out = *q_rope->outputs[0], k_out = *k_rope->outputs[0];
      if (!m.flow().read_only_by_any(*rk, k_out, {i, k_write->size_at}) || m.slot_touched(q_out, rq, j, inside) ||
          m.slot_touched(k_out, *rk, j, {i, k_write->size_at}) || m.slot_touched(k_write->node->dst, i, j, inside) ||
          !m.inputs_hold_until_last(f.parts, std::pair(rq, *q_rope->inputs[0])))
        return std::nullopt;
      // q overwritten before the v write (the first layer reads the cache position into its slot):
      // copied aside at its RotateHalf's place, where the op and its parts read it.
      Tid q = *q_rope->inputs[0];
      ir::OnnxOp q_part = *q_rope;
      if (m.written_between(q, rq, j, inside)) {
        const Tid own = new_temp_slot(p);
        f.copies_at_first.emplace_back(ir::Node(ir::IdCopyNode{q, own}));
        q_part.inputs[0] = q = own;
      }
      const std::optional<Tid> k = k_rope->inputs[0];
      f.op = fused_op(
          "wgml", "RotaryKvWrite",
          {q, *k, v_write->node->update, *k_rope->inputs[1], *k_rope->inputs[2], k_write->node->dst, v_write->node->dst}, q_out);
      f.op.outputs = {q_out, k_out, k_write->node->dst, v_write->node->dst};
      f.op.attributes = k_rope->attributes;
      f.op.attributes.push_back({"k_axis", k_write->axis});
      f.op.attributes.push_back({"v_axis", v_write->axis});
      f.op.value_attributes = {{"start", start}};
      f.parts_chain = rotary_parts(p, m, q_part, *rk, {*k_write, *v_write});
      ir::SymSizeNode k_size = std::get<ir::SymSizeNode>(*ir::as_node(m.at(k_write->size_at)));
      k_size.a = *k;
      f.rewritten.emplace(k_write->size_at, ir::Instruction(ir::Node(k_size)));
      return f;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

// How far after a layer's rotary KV write its attention is looked for.
constexpr size_t kAttentionWindow = 12;

// The SymSize nodes in (after, before) that read tensor slot t.
std::vector<size_t> sizes_read_between(const Matcher& m, Tid t, size_t after, size_t before) {
  std::vector<size_t> found;
  for (size_t k = after + 1; k < before; ++k)
    if (const auto* size = m.node_at<ir::SymSizeNode>(k); size && size->a.idx == t.idx) found.push_back(k);
  return found;
}

// A decode step's rotary KV write (the second stage's wgml.RotaryKvWrite) and the attention over
// the caches it writes (the first stage's mlx.Sdpa, without a mask): Sdpa's q, k and v are the
// write's q' and caches, k' is read by nothing and q' by the attention and SymSize nodes alone
// (which then read q, of q''s shape). One wgml.RotarySdpa at the attention's place, with both
// ops as its parts; nothing between may touch the caches.
std::optional<Fusion> match_rotary_sdpa(ir::Program& p, const Matcher& m, size_t i) {
  const size_t chain_size = p.chains[p.main_chain_idx].instructions.size();
  const ir::OnnxOp* write = m.op_at(i, "wgml", "RotaryKvWrite");
  if (!write || write->inputs.size() != 7 || write->outputs.size() != 4 || write->value_attributes.size() != 1)
    return std::nullopt;
  const Tid q_out = *write->outputs[0], k_out = *write->outputs[1], k_cache = *write->outputs[2], v_cache = *write->outputs[3];
  for (size_t j = i + 1; j < std::min(chain_size, i + kAttentionWindow); ++j) {
    const ir::OnnxOp* sdpa = m.op_at(j, "mlx", "Sdpa");
    if (!sdpa) continue;
    const auto reads = [&](size_t input, Tid t) {
      return sdpa->inputs[input] && sdpa->inputs[input]->idx == t.idx && m.writer(j, t) == i;
    };
    if (sdpa->inputs.size() != 3 || !reads(0, q_out) || !reads(1, k_cache) || !reads(2, v_cache)) return std::nullopt;
    const std::vector<size_t> sizes = sizes_read_between(m, q_out, i, j);
    std::set<size_t> q_readers(sizes.begin(), sizes.end());
    q_readers.insert(j);
    Fusion f;
    f.parts = {i, j};
    if (!m.flow().read_only_by_any(i, q_out, q_readers) || !m.flow().read_only_by_any(i, k_out, {}) ||
        m.slot_touched(k_cache, i, j, {}) || m.slot_touched(v_cache, i, j, {}))
      return std::nullopt;
    // The export reuses the slots of k and v for the attention's bound before it: such inputs are
    // copied aside at the write's place, where the op and its parts read them.
    ir::OnnxOp write_part = *write;
    std::vector<Tid> inputs;
    for (auto& t : write_part.inputs) {
      if (m.written_between(*t, i, j, {})) {
        const Tid own = new_temp_slot(p);
        f.copies_at_first.emplace_back(ir::Node(ir::IdCopyNode{*t, own}));
        t = own;
      }
      inputs.push_back(*t);
    }
    // So is the start, where the bound's arithmetic reuses its value slot (start + 0).
    ir::Vid& start = write_part.value_attributes[0].second;
    if (m.value_writer(start, i + 1, j)) {
      const ir::Vid own{p.num_values++};
      f.copies_at_first.emplace_back(ir::Node(ir::AddIntNode{ir::IntOrVid{0, start, true}, ir::IntOrVid{0, {}, false}, own}));
      start = own;
    }
    // The parts write q' and k' into slots of their own: the export may reuse theirs in between.
    ir::OnnxOp sdpa_part = *sdpa;
    write_part.outputs[0] = sdpa_part.inputs[0] = new_temp_slot(p);
    write_part.outputs[1] = new_temp_slot(p);
    f.parts_chain = {ir::Instruction(write_part), ir::Instruction(sdpa_part)};
    f.op = fused_op("wgml", "RotarySdpa", inputs, *sdpa->outputs[0]);
    f.op.outputs = {sdpa->outputs[0], k_cache, v_cache};
    f.op.attributes = write->attributes;
    f.op.attributes.insert(f.op.attributes.end(), sdpa->attributes.begin(), sdpa->attributes.end());
    f.op.value_attributes = write_part.value_attributes;
    f.op.value_attributes.insert(f.op.value_attributes.end(), sdpa->value_attributes.begin(), sdpa->value_attributes.end());
    for (size_t k : sizes) {
      ir::SymSizeNode size = std::get<ir::SymSizeNode>(*ir::as_node(m.at(k)));
      size.a = inputs[0];
      f.rewritten.emplace(k, ir::Instruction(ir::Node(size)));
    }
    return f;
  }
  return std::nullopt;
}

// A temp slot of its own for each of `f`'s relayed outputs; its part writes there too (the parts
// run where the op's kernel does not fit). Returns the IdCopy for each relay, by its part's place.
std::map<size_t, ir::Instruction> relay_outputs(ir::Program& p, Fusion& f, std::vector<ir::Instruction>& parts) {
  std::map<size_t, ir::Instruction> copies;
  for (const Fusion::Relay& r : f.relays) {
    const Tid own = new_temp_slot(p);
    const Tid slot = *f.op.outputs[r.output];
    f.op.outputs[r.output] = own;
    // Relays come from the products' matchers, whose parts are QuantizedMatmul or Addmm nodes.
    std::visit(
        [&](auto& node) {
          if constexpr (std::is_same_v<std::decay_t<decltype(node)>, ir::QuantizedMatmulNode> ||
                        std::is_same_v<std::decay_t<decltype(node)>, ir::AddmmNode>)
            node.out = own;
        },
        std::get<ir::Node>(parts[r.part]));
    copies.emplace(f.parts[r.part], ir::Instruction(ir::Node(ir::IdCopyNode{own, slot})));
  }
  return copies;
}

// The chain with each fusion's parts replaced by its op at the place of its last part (or first);
// the parts become chains of `p`.
void apply(ir::Program& p, std::vector<Fusion>& fusions) {
  const ir::Chain main = std::move(p.chains[p.main_chain_idx]);
  std::map<size_t, Fusion*> by_last;
  std::set<size_t> removed;
  std::map<size_t, ir::Instruction> rewritten_in_place;
  std::map<size_t, Fusion*> copying_at;
  for (Fusion& f : fusions) {
    by_last[f.at_first ? f.parts.front() : f.parts.back()] = &f;
    if (!f.copies_at_first.empty()) copying_at[f.parts.front()] = &f;
    removed.insert(f.parts.begin(), f.parts.end());
    removed.insert(f.dropped.begin(), f.dropped.end());
    rewritten_in_place.merge(f.rewritten);
  }
  std::map<size_t, ir::Instruction> relays;
  ir::Chain rewritten;
  const auto origin = [&](size_t i) { return i < main.origins.size() ? main.origins[i] : std::string(); };
  for (size_t i = 0; i < main.instructions.size(); ++i) {
    if (const auto it = copying_at.find(i); it != copying_at.end())
      for (ir::Instruction& copy : it->second->copies_at_first) {
        rewritten.instructions.push_back(std::move(copy));
        rewritten.origins.push_back(origin(i));
      }
    if (const auto it = by_last.find(i); it != by_last.end()) {
      Fusion& f = *it->second;
      ir::Chain parts;
      if (f.parts_chain.empty()) {
        for (size_t k : f.parts) {
          parts.instructions.push_back(main.instructions[k]);
          parts.origins.push_back(origin(k));
        }
      } else {
        parts.instructions = std::move(f.parts_chain);
        parts.origins.assign(parts.instructions.size(), origin(i));
      }
      relays.merge(relay_outputs(p, f, parts.instructions));
      for (ir::Instruction& made : f.before) {
        rewritten.instructions.push_back(std::move(made));
        rewritten.origins.push_back(origin(i));
      }
      f.op.parts_chain = static_cast<uint32_t>(p.chains.size());
      f.op.name = "fused from instructions " + std::to_string(f.parts.front()) + " to " + std::to_string(f.parts.back());
      p.chains.push_back(std::move(parts));
      rewritten.instructions.emplace_back(std::move(f.op));
      rewritten.origins.push_back(origin(i));
      continue;
    }
    if (const auto relay = relays.find(i); relay != relays.end()) {
      rewritten.instructions.push_back(std::move(relay->second));
      rewritten.origins.push_back(origin(i));
      continue;
    }
    if (removed.count(i)) continue;
    const auto in_place = rewritten_in_place.find(i);
    rewritten.instructions.push_back(in_place != rewritten_in_place.end() ? std::move(in_place->second) : main.instructions[i]);
    rewritten.origins.push_back(origin(i));
  }
  p.chains[p.main_chain_idx] = std::move(rewritten);
}

// A later stage, over the chain the one before made: `match(p, m, i)` at each instruction i.
template <class Match>
size_t fuse_stage(ir::Program& p, Match match) {
  const std::vector<ir::Instruction>& chain = p.chains[p.main_chain_idx].instructions;
  const DefUse flow(p, chain);
  Matcher m(chain, flow);
  std::vector<Fusion> fusions;
  for (size_t j = 0; j < chain.size(); ++j)
    if (std::optional<Fusion> f = match(p, m, j)) {
      m.claim(f->parts);
      fusions.push_back(std::move(*f));
    }
  apply(p, fusions);
  return fusions.size();
}

}  // namespace

FusionCounts fuse_instructions(ir::Program& p) {
  FusionCounts counts;
  if (p.chains.empty()) return counts;
  const std::vector<ir::Instruction>& chain = p.chains[p.main_chain_idx].instructions;
  const DefUse flow(p, chain);
  Matcher m(chain, flow);
  std::vector<Fusion> fusions;
  for (size_t i = 0; i < chain.size(); ++i) {
    std::optional<Fusion> f;
    size_t* count = nullptr;
    if (const auto* sdpa = m.node_at<ir::SdpaNode>(i)) {
      f = match_cache_attention(m, i, *sdpa);
      count = &counts.cache_attention;
    } else if (const auto* product = m.node_at<ir::MultiplyNode>(i)) {
      // Before the down projection's Add, which would otherwise take the Silu and Multiply.
      f = match_swiglu(m, i, *product);
      count = &counts.swiglu;
    } else if (const auto* dq = m.node_at<ir::DequantizeNode>(i)) {
      f = match_gathered_dequantize(m, i, *dq);
      count = &counts.gathered_dequantize;
    } else if (const auto* add = m.node_at<ir::AddNode>(i)) {
      f = match_rope(m, i, *add);
      count = &counts.rotate_half;
      if (!f) {
        f = match_residual(m, i, *add);
        count = &counts.residual_product;
      }
    }
    if (!f || !m.inputs_hold_until_last(f->parts)) continue;
    m.claim(f->parts);
    fusions.push_back(std::move(*f));
    ++*count;
  }
  // Products of one x that nothing above took (q, k and v, quantized or dense).
  for (size_t i = 0; i < chain.size(); ++i) {
    const auto* qmm = m.node_at<ir::QuantizedMatmulNode>(i);
    const auto* mm = m.node_at<ir::AddmmNode>(i);
    std::optional<Fusion> f = qmm  ? match_products(m, i, *qmm, chain.size())
                              : mm ? match_dense_products(p, m, i, *mm, chain.size())
                                   : std::nullopt;
    if (!f) continue;
    m.claim(f->parts);
    m.claim(f->dropped);
    fusions.push_back(std::move(*f));
    ++(qmm ? counts.products : counts.dense_products);
  }
  // Gated products a residual Add did not take (their Add comes after them, hence a second pass).
  for (size_t i = 0; i < chain.size(); ++i) {
    const auto* qmm = m.node_at<ir::QuantizedMatmulNode>(i);
    std::optional<Fusion> f = qmm ? match_gated_product(m, i, *qmm) : std::nullopt;
    if (!f || !m.inputs_hold_until_last(f->parts)) continue;
    m.claim(f->parts);
    fusions.push_back(std::move(*f));
  }
  for (const Fusion& f : fusions) counts.gated_product += f.op.op_type == "QuantizedMatmul" && f.op.inputs.size() > kUpInput;
  apply(p, fusions);
  // The second stage: each layer's RoPEs and cache writes; the third: those with the attention.
  counts.rotary_kv_write = fuse_stage(p, match_rotary_kv_write);
  counts.rotary_sdpa = fuse_stage(p, match_rotary_sdpa);
  return counts;
}

}  // namespace wgml::runtime
