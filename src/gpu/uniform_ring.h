#pragma once
// Small per-dispatch parameter structs, packed into one uniform buffer and bound with dynamic
// offsets, so a dispatch needs neither a buffer nor a bind group of its own for its parameters.
//
// The slots filled for one submission are written with a single queue write just before that
// submission. The queue runs writes and submissions in order, so the next submission may reuse
// the same bytes at once: the write lands after the earlier submission's dispatches have read them.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "gpu/buffer_pool.h"
#include "gpu/device.h"

namespace wgml::gpu {

class UniformRing {
 public:
  UniformRing(Device& device, uint64_t capacity);
  ~UniformRing();
  UniformRing(const UniformRing&) = delete;
  UniformRing& operator=(const UniformRing&) = delete;

  // Copies `params` into the next slot (aligned to minUniformBufferOffsetAlignment) and returns
  // its offset, or nothing when the ring is full for this submission. Throws GpuError(TooLarge)
  // for a struct larger than the ring or than maxUniformBufferBindingSize.
  std::optional<uint32_t> push(std::span<const std::byte> params, std::string_view op);

  // Queues the write of the slots filled since the last call and starts over.
  void upload();

  // The binding of a `size`-byte struct; the dispatch adds its slot's offset.
  BufferRange binding(uint32_t size) const { return {buffer_, id_, 0, size}; }

 private:
  Device& device_;
  WGPUBuffer buffer_ = nullptr;
  uint64_t id_;
  uint32_t alignment_;
  std::vector<std::byte> staged_;  // the ring's contents for the submission being recorded
  uint64_t used_ = 0;
};

}  // namespace wgml::gpu
