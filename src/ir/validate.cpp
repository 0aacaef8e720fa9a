#include "ir/validate.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <unordered_set>

#include "ir/slot_visit.h"
#include "wgml/error.h"

namespace wgml::ir {
namespace {

std::vector<uint32_t> child_chains(const Instruction& instruction) {
  const Node* node = as_node(instruction);
  if (!node) return {};
  if (const auto* scan = std::get_if<ScanNode>(node)) return {static_cast<uint32_t>(scan->body_chain_idx)};
  if (const auto* branch = std::get_if<IfNode>(node)) return {branch->then_chain_idx, branch->else_chain_idx};
  return {};
}

class Validator {
 public:
  Validator(const Program& p, const std::string& source) : p_(p), source_(source) {}

  void run() {
    check_chain_roots();
    check_io_maps();
    check_named_slots();
    check_tensor_meta();
    for (uint32_t c = 0; c < p_.chains.size(); ++c) check_chain_slots(c);
    check_chain_refs();
    effects_.resize(p_.chains.size());
    check_liveness(p_.main_chain_idx);
    if (p_.has_init_chain()) check_liveness(static_cast<uint32_t>(p_.init_chain_idx));
  }

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& expected) const {
    throw Error(ErrorCode::InvalidProgram, source_ + ": " + where + ": expected " + expected);
  }

  static std::string at(uint32_t chain, size_t instruction, const Instruction& node, std::string_view field) {
    return "chain " + std::to_string(chain) + ", instruction " + std::to_string(instruction) + " (" + instruction_name(node) +
           "), field '" + std::string(field) + "'";
  }

  void check_chain_roots() const {
    if (p_.main_chain_idx >= p_.chains.size())
      fail("main_chain_idx",
           "a chain index below " + std::to_string(p_.chains.size()) + ", found " + std::to_string(p_.main_chain_idx));
    if (p_.init_chain_idx < -1 || p_.init_chain_idx >= static_cast<int64_t>(p_.chains.size()))
      fail("init_chain_idx",
           "-1 or a chain index below " + std::to_string(p_.chains.size()) + ", found " + std::to_string(p_.init_chain_idx));
    if (p_.init_chain_idx == static_cast<int64_t>(p_.main_chain_idx)) fail("init_chain_idx", "a chain other than the main chain");
  }

  void check_slot(const Slot& s, const std::string& where) const {
    if (s.type == SlotType::Tensor) {
      if (s.idx >= p_.num_tensors())
        fail(where, "a tensor slot below " + std::to_string(p_.num_tensors()) + ", found " + std::to_string(s.idx));
    } else if (s.idx >= p_.num_values) {
      fail(where, "a value slot below " + std::to_string(p_.num_values) + ", found " + std::to_string(s.idx));
    }
  }

  void check_io_maps() const {
    auto check_map = [&](const std::vector<Slot>& map, const char* name) {
      for (size_t i = 0; i < map.size(); ++i) check_slot(map[i], std::string(name) + "[" + std::to_string(i) + "]");
    };
    check_map(p_.inputs, "input_map");
    check_map(p_.outputs, "output_map");
    check_map(p_.mutable_buffers, "mutable_buffer_map");
    for (size_t i = 0; i < p_.mutable_buffers.size(); ++i) {
      const Slot& s = p_.mutable_buffers[i];
      const std::string where = "mutable_buffer_map[" + std::to_string(i) + "]";
      if (s.type != SlotType::Tensor || p_.tensor_class(Tid{s.idx}) != TensorClass::MutableBuffer)
        fail(where, "a tensor slot in the mutable-buffer range");
    }
  }

  void check_named_slots() const {
    std::set<std::string> seen;
    for (size_t i = 0; i < p_.named_slots.size(); ++i) {
      const std::string where = "named_slots[" + std::to_string(i) + "]";
      check_slot(p_.named_slots[i].slot, where);
      if (!seen.insert(p_.named_slots[i].name).second) fail(where, "a unique name, found '" + p_.named_slots[i].name + "' twice");
    }
  }

  void check_tensor_meta() const {
    if (p_.tensor_meta.size() > p_.num_tensors())
      fail("tensor_meta",
           "at most " + std::to_string(p_.num_tensors()) + " entries, found " + std::to_string(p_.tensor_meta.size()));
    const uint64_t persistent = uint64_t{p_.num_constant_tensors};
    const auto names = p_.named_slots_by_tensor();
    for (uint64_t t = 0; t < persistent; ++t) {
      const TensorMeta* m = p_.meta(Tid{static_cast<uint32_t>(t)});
      if (!m) fail("tensor_meta[" + std::to_string(t) + "]", "metadata for constant tensor");
      if (!m->is_static()) fail("tensor_meta[" + std::to_string(t) + "]", "a static shape for a constant");
      if (!names.count(static_cast<uint32_t>(t))) fail("named_slots", "a name for constant tensor " + std::to_string(t));
    }
    for (const Slot& s : p_.mutable_buffers) {
      const TensorMeta* m = p_.meta(Tid{s.idx});
      if (!m || !m->is_static()) fail("tensor_meta[" + std::to_string(s.idx) + "]", "static metadata for mutable buffer tensor");
    }
  }

  // MetalKernelNode carries raw Metal source: it has no portable meaning, and no backend runs it.
  void reject_metal_kernel(uint32_t c, size_t i, const Instruction& instruction) const {
    const Node* node = as_node(instruction);
    const auto* kernel = node ? std::get_if<MetalKernelNode>(node) : nullptr;
    if (!kernel) return;
    throw Error(ErrorCode::Unsupported, source_ + ": chain " + std::to_string(c) + ", instruction " + std::to_string(i) +
                                            ": MetalKernelNode '" + kernel->name +
                                            "' runs raw Metal source, which wgml cannot execute; expected a program "
                                            "without custom Metal kernels");
  }

  void check_chain_slots(uint32_t c) const {
    const bool is_init = static_cast<int64_t>(c) == p_.init_chain_idx;
    const auto& instructions = p_.chains[c].instructions;
    for (size_t i = 0; i < instructions.size(); ++i) {
      const Instruction& node = instructions[i];
      reject_metal_kernel(c, i, node);
      visit_slots(
          node,
          [&](Tid t, FieldRole role, std::string_view field) {
            if (t.idx >= p_.num_tensors())
              fail(at(c, i, node, field),
                   "a tensor slot below " + std::to_string(p_.num_tensors()) + ", found " + std::to_string(t.idx));
            if (role != FieldRole::Read && !is_init && p_.tensor_class(t) == TensorClass::Constant)
              fail(at(c, i, node, field), "no write to constant tensor " + std::to_string(t.idx) + " outside the init chain");
          },
          [&](Vid v, std::string_view field) {
            if (v.idx >= p_.num_values)
              fail(at(c, i, node, field),
                   "a value slot below " + std::to_string(p_.num_values) + ", found " + std::to_string(v.idx));
          });
      for (uint32_t child : child_chains(node)) {
        if (child >= p_.chains.size() || child == p_.main_chain_idx || static_cast<int64_t>(child) == p_.init_chain_idx)
          fail(at(c, i, node, "chain index"), "a body chain index below " + std::to_string(p_.chains.size()) +
                                                  " other than the main and init chains, found " + std::to_string(child));
      }
    }
  }

  // Body chains must not (directly or indirectly) contain themselves.
  void check_chain_refs() const {
    std::vector<int> state(p_.chains.size(), 0);  // 0 new, 1 on stack, 2 done
    for (uint32_t c = 0; c < p_.chains.size(); ++c) visit_refs(c, state, 0);
  }

  // Nesting is capped so that neither this walk nor execution can exhaust the stack.
  static constexpr int kMaxChainNesting = 256;

  void visit_refs(uint32_t c, std::vector<int>& state, int depth) const {
    if (state[c] == 2) return;
    if (state[c] == 1) fail("chain " + std::to_string(c), "no chain that runs itself");
    if (depth > kMaxChainNesting)
      fail("chain " + std::to_string(c), "body chains nested at most " + std::to_string(kMaxChainNesting) + " deep");
    state[c] = 1;
    for (const Instruction& node : p_.chains[c].instructions)
      for (uint32_t child : child_chains(node)) visit_refs(child, state, depth + 1);
    state[c] = 2;
  }

  bool is_temp(Tid t) const { return p_.tensor_class(t) == TensorClass::Temp; }
  size_t temp_index(Tid t) const { return t.idx - (p_.num_tensors() - p_.num_temp_tensors); }

  // What running a chain does to temps, whatever ran before it: the temps it reads before it
  // writes them (with the place of the first such read), and the temps it surely writes.
  // Computed once per chain, so nested If/Scan bodies cost linear time; sets rather than a flag
  // per temp, so that a chain costs its own size (not the program's: Ifs side by side).
  struct ChainEffect {
    std::map<size_t, std::string> reads_before_write;
    std::unordered_set<size_t> writes;
  };

  void check_liveness(uint32_t chain) const {
    const ChainEffect& effect = effect_of(chain);
    if (!effect.reads_before_write.empty()) {
      const auto& [temp, where] = *effect.reads_before_write.begin();
      fail(where, "temp tensor " + std::to_string(temp + p_.num_tensors() - p_.num_temp_tensors) +
                      " to be written by an earlier instruction");
    }
  }

  const ChainEffect& effect_of(uint32_t c) const {
    if (effects_[c]) return *effects_[c];
    ChainEffect effect;
    auto note_read = [&](size_t temp, const std::string& where) {
      if (!effect.writes.count(temp)) effect.reads_before_write.emplace(temp, where);
    };
    const auto& instructions = p_.chains[c].instructions;
    for (size_t i = 0; i < instructions.size(); ++i) {
      const Instruction& node = instructions[i];
      std::vector<Tid> writes;
      visit_slots(
          node,
          [&](Tid t, FieldRole role, std::string_view field) {
            if (!is_temp(t)) return;
            if (role == FieldRole::Write)
              writes.push_back(t);
            else
              note_read(temp_index(t), at(c, i, node, field));
          },
          [](Vid, std::string_view) {});
      apply_children(node, effect.writes, note_read);
      for (Tid t : writes) effect.writes.insert(temp_index(t));
    }
    effects_[c] = std::move(effect);
    return *effects_[c];
  }

  template <class NoteRead>
  void apply_children(const Instruction& instruction, std::unordered_set<size_t>& written, NoteRead& note_read) const {
    const Node* node = as_node(instruction);
    if (!node) return;
    if (const auto* scan = std::get_if<ScanNode>(node)) {
      // The body may run zero times: its writes count for nothing after the Scan.
      std::unordered_set<size_t> sliced;
      for (Tid t : scan->sliced)
        if (is_temp(t)) sliced.insert(temp_index(t));
      for (const auto& [temp, where] : effect_of(static_cast<uint32_t>(scan->body_chain_idx)).reads_before_write)
        if (!sliced.count(temp)) note_read(temp, where);
    } else if (const auto* branch = std::get_if<IfNode>(node)) {
      const ChainEffect& then_effect = effect_of(branch->then_chain_idx);
      const ChainEffect& else_effect = effect_of(branch->else_chain_idx);
      for (const auto* branch_effect : {&then_effect, &else_effect})
        for (const auto& [temp, where] : branch_effect->reads_before_write) note_read(temp, where);
      const bool then_fewer = then_effect.writes.size() <= else_effect.writes.size();
      const auto& fewer = then_fewer ? then_effect.writes : else_effect.writes;
      const auto& more = then_fewer ? else_effect.writes : then_effect.writes;
      for (size_t k : fewer)
        if (more.count(k)) written.insert(k);
    }
  }

  const Program& p_;
  mutable std::vector<std::optional<ChainEffect>> effects_;
  const std::string& source_;
};

}  // namespace

void validate_program(const Program& program, const std::string& source) { Validator(program, source).run(); }

std::vector<bool> constants_written_by_init(const Program& program) {
  std::vector<bool> out(program.num_constant_tensors, false);
  if (!program.has_init_chain()) return out;
  for (const Instruction& node : program.chains[program.init_chain_idx].instructions)
    visit_slots(
        node,
        [&](Tid t, FieldRole role, std::string_view) {
          if (role != FieldRole::Read && t.idx < program.num_constant_tensors) out[t.idx] = true;
        },
        [](Vid, std::string_view) {});
  return out;
}

}  // namespace wgml::ir
