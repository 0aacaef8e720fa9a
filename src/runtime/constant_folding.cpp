#include "runtime/constant_folding.h"

#include <map>

#include "ir/slot_visit.h"

namespace wgml::runtime {
namespace {

using ir::FieldRole;
using ir::Tid;
using ir::Vid;

bool has_body_chains(const ir::Instruction& instruction) {
  const ir::Node* node = ir::as_node(instruction);
  return node && (std::holds_alternative<ir::ScanNode>(*node) || std::holds_alternative<ir::IfNode>(*node));
}

bool is_random(const ir::Instruction& instruction) {
  const ir::Node* node = ir::as_node(instruction);
  return node && std::holds_alternative<ir::RandomBitsNode>(*node);
}

// Whether each slot, at the current place in the chain, holds a constant or a folded result. A
// body may write any temp: forget_all_but_constants() makes every slot but the constants unknown
// at once, by an epoch rather than by touching each slot (that cost the number of slots per If
// or Loop).
class KnownSlots {
 public:
  explicit KnownSlots(const ir::Program& p) : constants_(p.num_constant_tensors), epoch_of_(p.num_tensors(), 0) {
    for (uint32_t t = 0; t < constants_; ++t) epoch_of_[t] = kAlways;
  }
  bool operator[](uint32_t t) const { return epoch_of_[t] == kAlways || epoch_of_[t] == epoch_; }
  void set(uint32_t t, bool known) {
    // A constant slot overwritten stays what it was made: known or not across bodies.
    epoch_of_[t] = known ? (t < constants_ ? kAlways : epoch_) : 0;
  }
  void forget_all_but_constants() { ++epoch_; }

 private:
  static constexpr uint64_t kAlways = UINT64_MAX;
  uint32_t constants_;
  std::vector<uint64_t> epoch_of_;  // kAlways, the epoch it became known in, or 0: unknown
  uint64_t epoch_ = 1;
};

// Whether the instruction reads only `known` tensors, updates none in place and touches no value slot.
bool computes_from_known(const ir::Instruction& instruction, const KnownSlots& known) {
  bool foldable = true;
  ir::visit_slots(
      instruction,
      [&](Tid t, FieldRole role, std::string_view) {
        if (role == FieldRole::ReadWrite || (role == FieldRole::Read && !known[t.idx])) foldable = false;
      },
      [&](Vid, std::string_view) { foldable = false; });
  return foldable;
}

}  // namespace

std::vector<Tid> tensors_written(const ir::Instruction& instruction) {
  std::vector<Tid> out;
  ir::visit_slots(
      instruction,
      [&](Tid t, FieldRole role, std::string_view) {
        if (role != FieldRole::Read) out.push_back(t);
      },
      [](Vid, std::string_view) {});
  return out;
}

namespace {

// FoldingPlan::dead_after and settle_after, in one walk of the main chain: the last folded reader
// of each dead constant, and of each folded result until its slot is written again (exporters
// reuse temp slots; the main chain never writes a constant).
void plan_fold_lifetimes(const ir::Program& p, FoldingPlan& plan) {
  const auto& main = p.chains[p.main_chain_idx].instructions;
  plan.dead_after.resize(main.size());
  plan.settle_after.resize(main.size());
  std::vector<size_t> constant_reader(p.num_constant_tensors, main.size());
  struct Pending {
    size_t writer = 0, last_reader = 0;
  };
  std::map<uint32_t, Pending> live;  // by slot: a folded result not settled yet
  const auto settle = [&](uint32_t slot) {
    const auto it = live.find(slot);
    if (it == live.end()) return;
    plan.settle_after[it->second.last_reader].emplace_back(it->second.writer, Tid{slot});
    live.erase(it);
  };
  for (size_t i = 0; i < main.size(); ++i) {
    if (plan.folded[i])
      ir::visit_slots(
          main[i],
          [&](Tid t, FieldRole role, std::string_view) {
            if (role == FieldRole::Write) return;
            if (t.idx < p.num_constant_tensors) constant_reader[t.idx] = i;
            if (const auto it = live.find(t.idx); it != live.end()) it->second.last_reader = i;
          },
          [](Vid, std::string_view) {});
    for (Tid t : tensors_written(main[i])) {
      settle(t.idx);
      if (plan.folded[i]) live[t.idx] = {i, i};
    }
  }
  while (!live.empty()) settle(live.begin()->first);
  for (uint32_t t : plan.dead_constants)
    if (constant_reader[t] < main.size()) plan.dead_after[constant_reader[t]].push_back(t);
}

}  // namespace

FoldingPlan plan_constant_folding(const ir::Program& p) {
  FoldingPlan plan;
  const auto& main = p.chains[p.main_chain_idx].instructions;
  plan.folded.assign(main.size(), false);
  KnownSlots known(p);
  for (size_t i = 0; i < main.size(); ++i) {
    if (has_body_chains(main[i])) {
      known.forget_all_but_constants();
      continue;
    }
    const std::vector<Tid> writes = tensors_written(main[i]);
    plan.folded[i] = !writes.empty() && !is_random(main[i]) && computes_from_known(main[i], known);
    for (Tid t : writes) known.set(t.idx, plan.folded[i]);
  }
  // A constant is dead when only folded instructions read it.
  std::vector<bool> still_read(p.num_constant_tensors, false);
  for (uint32_t c = 0; c < p.chains.size(); ++c)
    for (size_t i = 0; i < p.chains[c].instructions.size(); ++i) {
      if (c == p.main_chain_idx && plan.folded[i]) continue;
      ir::visit_slots(
          p.chains[c].instructions[i],
          [&](Tid t, FieldRole, std::string_view) {
            if (t.idx < p.num_constant_tensors) still_read[t.idx] = true;
          },
          [](Vid, std::string_view) {});
    }
  for (const ir::Slot& s : p.outputs)
    if (s.type == ir::SlotType::Tensor && s.idx < p.num_constant_tensors) still_read[s.idx] = true;
  for (uint32_t t = 0; t < p.num_constant_tensors; ++t)
    if (!still_read[t]) plan.dead_constants.push_back(t);
  plan_fold_lifetimes(p, plan);
  return plan;
}

}  // namespace wgml::runtime
