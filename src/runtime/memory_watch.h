#pragma once
// What was live when a run's memory peaked: after every instruction the watch adds up the host
// bytes of tensors (host_tensor_memory) and the device bytes in use (Backend::device_memory); when
// that sum is a new high, it notes the largest tensors in the slots then and which instruction wrote
// each. Costs a scan of the slots per new high, so only profiled runs are watched.
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/exec_context.h"

namespace wgml::runtime {

struct LiveTensor {
  uint32_t slot = 0;
  ir::TensorClass slot_class = ir::TensorClass::Temp;
  DType dtype = DType::Float32;
  Shape shape;
  uint64_t host_bytes = 0;    // 0 when only a device holds it
  uint64_t device_bytes = 0;  // its device copies (all storages)
  std::string written_by;     // "chain C, instruction I (NAME, from ORIGIN)"; empty for slots bound before the run
};

struct MemorySnapshot {
  uint64_t host_bytes = 0;    // host_tensor_memory().live() then
  uint64_t device_bytes = 0;  // device bytes in use then
  std::string after;          // the instruction after which it was taken
  std::vector<LiveTensor> largest;
};

class MemoryWatch {
 public:
  static constexpr size_t kLargest = 8;

  void start_run() { peak_ = {}; }
  // Notes the slots `chain`'s `index`-th instruction wrote, and a snapshot when memory is at a new high.
  void after_instruction(const ExecContext& ctx, const Backend& backend, uint32_t chain, size_t index);
  const MemorySnapshot& peak() const { return peak_; }

 private:
  std::string describe(const ir::Program& program, uint32_t chain, size_t index) const;
  MemorySnapshot snapshot(const ExecContext& ctx, uint64_t host, uint64_t device, uint32_t chain, size_t index) const;

  struct Writer {
    uint32_t chain = 0;
    size_t index = 0;
    bool known = false;
  };
  std::vector<Writer> writers_;  // per slot: the last instruction that wrote it
  MemorySnapshot peak_;
};

}  // namespace wgml::runtime
