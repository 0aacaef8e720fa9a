#include "runtime/memory_watch.h"

#include <algorithm>
#include <unordered_set>

#include "core/device_data.h"
#include "core/host_memory.h"
#include "runtime/constant_folding.h"

namespace wgml::runtime {

void MemoryWatch::after_instruction(const ExecContext& ctx, const Backend& backend, uint32_t chain, size_t index) {
  const ir::Program& p = ctx.program();
  writers_.resize(p.num_tensors());
  for (ir::Tid t : tensors_written(p.chains[chain].instructions[index])) writers_[t.idx] = {chain, index, true};
  const uint64_t host = host_tensor_memory().live();
  const uint64_t device = backend.device_memory().in_use;
  if (host + device > peak_.host_bytes + peak_.device_bytes || peak_.after.empty())
    peak_ = snapshot(ctx, host, device, chain, index);
}

std::string MemoryWatch::describe(const ir::Program& program, uint32_t chain, size_t index) const {
  const ir::Chain& c = program.chains[chain];
  std::string out = "chain " + std::to_string(chain) + ", instruction " + std::to_string(index) + " (" +
                    ir::instruction_name(c.instructions[index]);
  if (index < c.origins.size() && !c.origins[index].empty()) out += ", from " + c.origins[index];
  return out + ")";
}

MemorySnapshot MemoryWatch::snapshot(const ExecContext& ctx, uint64_t host, uint64_t device, uint32_t chain, size_t index) const {
  const ir::Program& p = ctx.program();
  MemorySnapshot s{host, device, describe(p, chain, index), {}};
  std::unordered_set<const void*> seen;  // views share their storage: count it once
  for (uint32_t t = 0; t < p.num_tensors(); ++t) {
    const ir::Tid tid{t};
    if (!ctx.has_tensor(tid)) continue;
    const Tensor& x = ctx.tensor(tid);
    if (!seen.insert(TensorDeviceAccess::storage_identity(x)).second) continue;
    const auto device_copy = TensorDeviceAccess::device_data(x);
    LiveTensor live{t,
                    p.tensor_class(tid),
                    x.dtype(),
                    x.shape(),
                    TensorDeviceAccess::has_host_bytes(x) ? x.nbytes() : 0,
                    device_copy ? device_copy->device_bytes() : 0,
                    writers_[t].known ? describe(p, writers_[t].chain, writers_[t].index) : ""};
    s.largest.push_back(std::move(live));
  }
  const auto bytes = [](const LiveTensor& l) { return l.host_bytes + l.device_bytes; };
  const size_t kept = std::min(kLargest, s.largest.size());
  std::partial_sort(s.largest.begin(), s.largest.begin() + static_cast<std::ptrdiff_t>(kept), s.largest.end(),
                    [&](const LiveTensor& a, const LiveTensor& b) { return bytes(a) > bytes(b); });
  s.largest.resize(kept);
  return s;
}

}  // namespace wgml::runtime
