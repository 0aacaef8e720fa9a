#include "runtime/copy_drops.h"

#include <algorithm>
#include <optional>

#include "core/device_data.h"
#include "ir/slot_visit.h"

namespace wgml::runtime {
namespace {

using ir::Tid;

bool has_bodies(const ir::Instruction& instruction) {
  const ir::Node* node = ir::as_node(instruction);
  return node && (std::holds_alternative<ir::ScanNode>(*node) || std::holds_alternative<ir::IfNode>(*node));
}

// What the readers of a slot after some instruction, up to the next write of it, have in common:
// nothing read it (None), all read on one side (Side), or no copy may be dropped (Mixed: sides
// differ, a side is unknown, or a body may touch the slot first).
struct Later {
  enum Kind { None, Side, Mixed } kind = None;
  ReadSide side = ReadSide::Unknown;
};

struct SlotUse {
  uint32_t slot;
  bool reads = false;
  bool writes = false;
};

// The slots an instruction uses, each once, with how.
std::vector<SlotUse> uses_of(const ir::Instruction& instruction) {
  std::vector<SlotUse> uses;
  ir::visit_slots(
      instruction,
      [&](Tid t, ir::FieldRole role, std::string_view) {
        auto it = std::find_if(uses.begin(), uses.end(), [&](const SlotUse& u) { return u.slot == t.idx; });
        if (it == uses.end()) it = uses.insert(uses.end(), SlotUse{t.idx});
        it->reads |= role != ir::FieldRole::Write;
        it->writes |= role != ir::FieldRole::Read;
      },
      [](ir::Vid, std::string_view) {});
  return uses;
}

// Later of every slot at one place in a chain, walked from its end to its start. A body makes
// every slot Mixed: rather than touch them all, a generation count marks which entries predate it.
class LaterReads {
 public:
  explicit LaterReads(size_t slots) : later_(slots), generation_(slots, 0) {}

  // At the end of a chain nothing reads any slot later. One LaterReads serves every chain:
  // tables per chain cost the number of slots for each If branch and Loop body.
  void start_chain() {
    ++generation_now_;
    fallback_ = Later{};
  }

  Later at(uint32_t slot) const {
    if (slot >= later_.size() || generation_[slot] != generation_now_) return fallback_;
    return later_[slot];
  }
  // Steps back over `instruction`: what follows it becomes what follows the one before it.
  void step_back(const ir::Instruction& instruction, const Backend& backend) {
    if (has_bodies(instruction)) {
      ++generation_now_;
      fallback_ = Later{Later::Mixed};
      return;
    }
    std::optional<ReadSide> side;  // read once, for instructions that read something
    for (const SlotUse& use : uses_of(instruction)) {
      if (use.slot >= later_.size()) continue;
      Later next = use.writes ? Later{} : at(use.slot);
      if (use.reads) {
        if (!side) side = backend.read_side(instruction);
        next = combine(*side, next);
      }
      later_[use.slot] = next;
      generation_[use.slot] = generation_now_;
    }
  }

 private:
  // A read on `here` followed by the reads `after`.
  static Later combine(ReadSide here, Later after) {
    if (here == ReadSide::Unknown || after.kind == Later::Mixed) return Later{Later::Mixed};
    if (after.kind == Later::Side && after.side != here) return Later{Later::Mixed};
    return Later{Later::Side, here};
  }

  std::vector<Later> later_;
  std::vector<uint32_t> generation_;
  uint32_t generation_now_ = 0;
  Later fallback_;
};

}  // namespace

// One backward walk per chain: linear in its length (a forward scan from each read to the slot's
// next write made opening a session quadratic in the model's size).
std::vector<std::vector<std::vector<CopyDrop>>> plan_copy_drops(const ir::Program& p, const Backend& backend) {
  std::vector<std::vector<std::vector<CopyDrop>>> drops(p.chains.size());
  LaterReads later(p.num_tensors());
  for (size_t c = 0; c < p.chains.size(); ++c) {
    const auto& chain = p.chains[c].instructions;
    drops[c].resize(chain.size());
    later.start_chain();
    for (size_t i = chain.size(); i-- > 0;) {
      if (!has_bodies(chain[i]))
        ir::visit_slots(
            chain[i],
            [&](Tid t, ir::FieldRole role, std::string_view) {
              if (role != ir::FieldRole::Read || p.tensor_class(t) != ir::TensorClass::Temp) return;
              const Later after = later.at(t.idx);
              if (after.kind == Later::Side) drops[c][i].push_back({t, after.side});
            },
            [](ir::Vid, std::string_view) {});
      later.step_back(chain[i], backend);
    }
  }
  return drops;
}
void drop_dead_copy(const Tensor& t, ReadSide keep, size_t min_bytes) {
  if (t.nbytes() < min_bytes || TensorDeviceAccess::storage_users(t) != 1) return;
  if (!TensorDeviceAccess::has_host_bytes(t) || !TensorDeviceAccess::device_data(t)) return;
  if (keep == ReadSide::Host)
    TensorDeviceAccess::drop_device_copy(t);
  else if (keep == ReadSide::Device)
    TensorDeviceAccess::drop_host_copy(t);
}

}  // namespace wgml::runtime
