#include "runtime/release_plan.h"

#include <algorithm>
#include <map>
#include <optional>

#include "ir/slot_visit.h"

namespace wgml::runtime {
namespace {

using ir::Tid;

std::vector<uint32_t> body_chains(const ir::Instruction& instruction) {
  const ir::Node* node = ir::as_node(instruction);
  if (!node) return {};
  if (const auto* scan = std::get_if<ir::ScanNode>(node)) return {static_cast<uint32_t>(scan->body_chain_idx)};
  if (const auto* branch = std::get_if<ir::IfNode>(node)) return {branch->then_chain_idx, branch->else_chain_idx};
  return {};
}

void sort_unique(std::vector<uint32_t>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

class Planner {
 public:
  explicit Planner(const ir::Program& p) : p_(p), releasable_(p.num_tensors(), false), references_(p.chains.size(), 0) {
    for (uint32_t t = 0; t < p.num_tensors(); ++t) releasable_[t] = p.tensor_class(Tid{t}) == ir::TensorClass::Temp;
    for (const auto* slots : {&p.inputs, &p.outputs})
      for (const ir::Slot& s : *slots)
        if (s.type == ir::SlotType::Tensor && s.idx < releasable_.size()) releasable_[s.idx] = false;
    plan_.after.resize(p.chains.size());
    for (size_t c = 0; c < p.chains.size(); ++c) {
      plan_.after[c].resize(p.chains[c].instructions.size());
      for (const ir::Instruction& instruction : p.chains[c].instructions)
        for (uint32_t body : body_chains(instruction))
          if (body < references_.size()) ++references_[body];
    }
    touched_.resize(p.chains.size());
  }

  ReleasePlan run() {
    plan_chain(p_.main_chain_idx, nullptr);
    if (p_.has_init_chain()) plan_chain(static_cast<uint32_t>(p_.init_chain_idx), nullptr);
    return std::move(plan_);
  }

 private:
  // The releasable temps an instruction names in its own fields.
  std::vector<uint32_t> direct_temps(const ir::Instruction& instruction) const {
    std::vector<uint32_t> out;
    ir::visit_slots(
        instruction,
        [&](Tid t, ir::FieldRole, std::string_view) {
          if (t.idx < releasable_.size() && releasable_[t.idx]) out.push_back(t.idx);
        },
        [](ir::Vid, std::string_view) {});
    sort_unique(out);
    return out;
  }

  // The releasable temps chain `c` and the bodies under it touch (validation keeps bodies acyclic;
  // a cycle would only make this conservative, never wrong, as `visiting` stops it).
  const std::vector<uint32_t>& touched(uint32_t c) {
    if (touched_[c]) return *touched_[c];
    touched_[c] = std::vector<uint32_t>{};
    std::vector<uint32_t> all;
    for (const ir::Instruction& instruction : p_.chains[c].instructions) {
      const std::vector<uint32_t> direct = direct_temps(instruction);
      all.insert(all.end(), direct.begin(), direct.end());
      for (uint32_t body : body_chains(instruction)) {
        if (body >= p_.chains.size()) continue;
        const std::vector<uint32_t>& below = touched(body);
        all.insert(all.end(), below.begin(), below.end());
      }
    }
    sort_unique(all);
    touched_[c] = std::move(all);
    return *touched_[c];
  }

  struct Use {
    size_t last = 0;
    size_t instructions = 0;
    bool direct = false;
  };

  // Plans chain `c` for the temps it is responsible for (all when `mine`, ascending, is null).
  void plan_chain(uint32_t c, const std::vector<uint32_t>* mine) {
    const auto& instructions = p_.chains[c].instructions;
    std::map<uint32_t, Use> uses;
    for (size_t i = 0; i < instructions.size(); ++i) {
      std::vector<uint32_t> through_bodies;
      for (uint32_t body : body_chains(instructions[i]))
        if (body < p_.chains.size()) through_bodies.insert(through_bodies.end(), touched(body).begin(), touched(body).end());
      const std::vector<uint32_t> direct = direct_temps(instructions[i]);
      for (uint32_t t : direct) uses[t].direct = true;
      through_bodies.insert(through_bodies.end(), direct.begin(), direct.end());
      sort_unique(through_bodies);
      for (uint32_t t : through_bodies) {
        Use& u = uses[t];
        u.last = i;
        ++u.instructions;
      }
    }
    std::map<uint32_t, std::vector<uint32_t>> delegated;
    for (const auto& [t, use] : uses) {
      if (mine && !std::binary_search(mine->begin(), mine->end(), t)) continue;
      if (use.direct || use.instructions > 1 || !delegate(instructions[use.last], t, delegated))
        plan_.after[c][use.last].push_back(Tid{t});
    }
    for (const auto& [body, temps] : delegated) plan_chain(body, &temps);
  }

  // Hands temp `t`, which only the bodies of `instruction` touch, to those bodies when each is
  // that instruction's alone; returns false (the parent releases it) otherwise. Temps are offered
  // in ascending order, so each body's list stays sorted (a list, not a flag per slot: Ifs side
  // by side made that quadratic).
  bool delegate(const ir::Instruction& instruction, uint32_t t, std::map<uint32_t, std::vector<uint32_t>>& delegated) {
    std::vector<uint32_t> users;
    for (uint32_t body : body_chains(instruction)) {
      if (body >= p_.chains.size()) return false;
      const std::vector<uint32_t>& below = touched(body);
      if (!std::binary_search(below.begin(), below.end(), t)) continue;
      const bool top_level = body == p_.main_chain_idx || static_cast<int64_t>(body) == p_.init_chain_idx;
      if (references_[body] != 1 || top_level) return false;
      users.push_back(body);
    }
    for (uint32_t body : users) delegated[body].push_back(t);
    return !users.empty();
  }

  const ir::Program& p_;
  std::vector<bool> releasable_;
  std::vector<uint32_t> references_;
  std::vector<std::optional<std::vector<uint32_t>>> touched_;
  ReleasePlan plan_;
};

}  // namespace

ReleasePlan plan_releases(const ir::Program& program) { return Planner(program).run(); }

}  // namespace wgml::runtime
