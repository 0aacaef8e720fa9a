#include "runtime/copy_drops.h"

#include <optional>

#include "core/device_data.h"
#include "ir/slot_visit.h"

namespace wgml::runtime {
namespace {

using ir::Tid;

struct SlotUse {
  bool reads = false;
  bool writes = false;
};

// How an instruction uses slot `t` through its own fields.
SlotUse use_of(const ir::Instruction& instruction, Tid t) {
  SlotUse use;
  ir::visit_slots(
      instruction,
      [&](Tid slot, ir::FieldRole role, std::string_view) {
        if (slot.idx != t.idx) return;
        if (role != ir::FieldRole::Write) use.reads = true;
        if (role != ir::FieldRole::Read) use.writes = true;
      },
      [](ir::Vid, std::string_view) {});
  return use;
}

bool has_bodies(const ir::Instruction& instruction) {
  const ir::Node* node = ir::as_node(instruction);
  return node && (std::holds_alternative<ir::ScanNode>(*node) || std::holds_alternative<ir::IfNode>(*node));
}

// The side every reader of `t` after instruction `i` reads on, up to the next write of it; none
// when they differ, when a body may touch it, or when nothing reads it again.
std::optional<ReadSide> later_side(const std::vector<ir::Instruction>& chain, size_t i, Tid t, const Backend& backend) {
  std::optional<ReadSide> side;
  for (size_t j = i + 1; j < chain.size(); ++j) {
    if (has_bodies(chain[j])) return std::nullopt;
    const SlotUse use = use_of(chain[j], t);
    if (use.reads) {
      const ReadSide here = backend.read_side(chain[j]);
      if (here == ReadSide::Unknown || (side && *side != here)) return std::nullopt;
      side = here;
    }
    if (use.writes) break;
  }
  return side;
}

}  // namespace

std::vector<std::vector<std::vector<CopyDrop>>> plan_copy_drops(const ir::Program& p, const Backend& backend) {
  std::vector<std::vector<std::vector<CopyDrop>>> drops(p.chains.size());
  for (size_t c = 0; c < p.chains.size(); ++c) {
    const auto& chain = p.chains[c].instructions;
    drops[c].resize(chain.size());
    for (size_t i = 0; i < chain.size(); ++i) {
      if (has_bodies(chain[i])) continue;
      ir::visit_slots(
          chain[i],
          [&](Tid t, ir::FieldRole role, std::string_view) {
            if (role != ir::FieldRole::Read || p.tensor_class(t) != ir::TensorClass::Temp) return;
            if (const auto side = later_side(chain, i, t, backend)) drops[c][i].push_back({t, *side});
          },
          [](ir::Vid, std::string_view) {});
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
