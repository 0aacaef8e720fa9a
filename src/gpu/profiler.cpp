#include "gpu/profiler.h"

#include <algorithm>
#include <cstring>

#include "gpu/gpu_error.h"
#include "gpu/webgpu_strings.h"

namespace wgml::gpu {
Profiler::Profiler(Device& device, BufferPool& pool) : device_(device), pool_(pool) {
  const std::string op = "creating the GPU profiler";
  if (!device.features().timestamp_query)
    throw GpuError(GpuErrorKind::MissingFeature, op, device.adapter().name + " offers no timestamp queries");
  Device::ErrorScope scope(device, op);
  WGPUQuerySetDescriptor desc{};
  desc.label = view("wgml timestamps");
  desc.type = WGPUQueryType_Timestamp;
  desc.count = kQueryCount;
  queries_ = device.fn().DeviceCreateQuerySet(device.handle(), &desc);
  scope.close();
}

Profiler::~Profiler() {
  if (!queries_) return;
  device_.drain();
  // Release only: wgpu-native's QuerySetDestroy already frees the set, and a release after it
  // aborts the process.
  device_.fn().QuerySetRelease(queries_);
}

uint32_t Profiler::reserve(std::string name, TimingKind kind) {
  const uint32_t first = used_;
  used_ += 2;
  slices_.push_back({std::move(name), kind, first});
  return first;
}

WGPUPassTimestampWrites Profiler::begin_pass(std::string name, TimingKind kind) {
  const uint32_t first = reserve(std::move(name), kind);
  return {nullptr, queries_, first, first + 1};
}

void Profiler::write_op_start(WGPUComputePassEncoder pass, std::string name) {
  device_.fn().ComputePassEncoderWriteTimestamp(pass, queries_, reserve(std::move(name), TimingKind::Op));
}

void Profiler::write_op_end(WGPUComputePassEncoder pass) {
  device_.fn().ComputePassEncoderWriteTimestamp(pass, queries_, slices_.back().first_query + 1);
}

void Profiler::resolve(WGPUCommandEncoder encoder) {
  if (used_ == 0) return;
  const uint64_t bytes = uint64_t(used_) * sizeof(uint64_t);
  const std::string op = "resolving timestamps";
  // The resolve buffer goes back to the pool at once: its fence covers this submission.
  PooledBuffer resolved = pool_.acquire(bytes, BufferKind::QueryResolve, op);
  PooledBuffer readback = pool_.acquire(bytes, BufferKind::Readback, op);
  const api::Functions& fn = device_.fn();
  fn.CommandEncoderResolveQuerySet(encoder, queries_, 0, used_, resolved.handle(), 0);
  fn.CommandEncoderCopyBufferToBuffer(encoder, resolved.handle(), 0, readback.handle(), 0, bytes);
  pending_.push_back({std::move(readback), std::move(slices_)});
  slices_.clear();
  used_ = 0;
}

std::vector<GpuTiming> Profiler::collect() {
  const std::string op = "reading GPU timestamps";
  device_.wait_idle(op);
  const double period = device_.timestamp_period_ns();
  std::vector<GpuTiming> timings;
  for (Resolved& r : pending_) {
    const api::Functions& fn = device_.fn();
    const uint64_t bytes = r.readback.size();
    map_for_reading(device_, r.readback.handle(), bytes, op);
    std::vector<uint64_t> ticks(bytes / sizeof(uint64_t));
    std::memcpy(ticks.data(), fn.BufferGetConstMappedRange(r.readback.handle(), 0, bytes), bytes);
    fn.BufferUnmap(r.readback.handle());
    if (!has_origin_ && !ticks.empty()) {
      origin_ticks_ = ticks[r.slices.front().first_query];
      has_origin_ = true;
    }
    for (Slice& s : r.slices) {
      const uint64_t start = ticks[s.first_query], end = ticks[s.first_query + 1];
      // Ticks before the origin (passes begun earlier on another queue timeline) clamp to 0.
      const double start_ns = start > origin_ticks_ ? double(start - origin_ticks_) * period : 0.0;
      const double duration_ns = end > start ? double(end - start) * period : 0.0;
      timings.push_back({std::move(s.name), s.kind, start_ns, duration_ns});
    }
  }
  pending_.clear();
  return timings;
}

}  // namespace wgml::gpu
