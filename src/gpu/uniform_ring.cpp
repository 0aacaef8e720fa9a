#include "gpu/uniform_ring.h"

#include <cstring>
#include <string>

#include "gpu/gpu_error.h"

namespace wgml::gpu {

UniformRing::UniformRing(Device& device, uint64_t capacity)
    : device_(device), id_(next_buffer_id()), alignment_(device.limits().minUniformBufferOffsetAlignment), staged_(capacity) {
  buffer_ = device.create_buffer(capacity, WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst, "wgml uniform ring",
                                 "creating the uniform ring");
}

UniformRing::~UniformRing() {
  device_.drain();
  device_.fn().BufferDestroy(buffer_);
  device_.fn().BufferRelease(buffer_);
}

std::optional<uint32_t> UniformRing::push(std::span<const std::byte> params, std::string_view op) {
  const uint64_t limit = std::min<uint64_t>(staged_.size(), device_.limits().maxUniformBufferBindingSize);
  if (params.size() > limit)
    throw GpuError(GpuErrorKind::TooLarge, op,
                   "a parameter struct of " + std::to_string(params.size()) + " bytes is above the uniform limit of " +
                       std::to_string(limit) + " bytes");
  const uint64_t offset = align_up(used_, alignment_);
  if (offset + params.size() > staged_.size()) return std::nullopt;
  std::memcpy(staged_.data() + offset, params.data(), params.size());
  used_ = offset + params.size();
  return uint32_t(offset);
}

void UniformRing::upload() {
  if (used_ == 0) return;
  // Queue writes need a multiple of 4 bytes; the staged copy is that large (alignment >= 4).
  device_.fn().QueueWriteBuffer(device_.queue(), buffer_, 0, staged_.data(), align_up(used_, 4));
  used_ = 0;
}

}  // namespace wgml::gpu
