#pragma once
// The vec4<f32> copy the benchmark programs measure the memory roofline with: what a memory-bound
// kernel can reach on the device, measured in the same run (kernel_bench interleaves it with each
// op; llm_decode measures it beside the decode loop).
#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "backend/webgpu/gpu_context.h"

namespace wgml::bench {

inline constexpr const char* kCopyWgsl = R"(@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let i = id.x + id.y * n.x * 256u;
  if (i < arrayLength(&dst)) { dst[i] = src[i]; }
})";

// A vec4 copy of `bytes` (a multiple of 16) between two buffers of the context's pool.
class CopyKernel {
 public:
  CopyKernel(backend::webgpu::GpuContext& gpu, uint64_t bytes) : gpu_(gpu), bytes_(bytes) {
    gpu::KernelSource k;
    k.label = "roofline copy";
    k.wgsl = kCopyWgsl;
    k.bindings = {gpu::Access::Read, gpu::Access::ReadWrite};
    kernel_ = &gpu.pipelines().get(k);
    src_ = gpu.pool().acquire(bytes, gpu::BufferKind::Storage, "roofline src");
    dst_ = gpu.pool().acquire(bytes, gpu::BufferKind::Storage, "roofline dst");
    ranges_ = {src_.range(), dst_.range()};
  }

  uint64_t bytes() const { return bytes_; }

  // Records one copy (submitted with the recorder's next finish()).
  void record() const { gpu_.recorder().dispatch(*kernel_, ranges_, {}, (bytes_ / 16 + 255) / 256, "roofline copy"); }

 private:
  backend::webgpu::GpuContext& gpu_;
  uint64_t bytes_;
  const gpu::Kernel* kernel_ = nullptr;
  gpu::PooledBuffer src_, dst_;
  std::vector<gpu::BufferRange> ranges_;
};

// The largest copy up to `bytes` that one binding of the device can hold, a multiple of 16.
inline uint64_t copy_bytes_within_limits(backend::webgpu::GpuContext& gpu, uint64_t bytes) {
  return std::min<uint64_t>(bytes, gpu.device().limits().maxStorageBufferBindingSize) / 16 * 16;
}

// Records and submits batches of `reps` copies until `seconds` have passed: an idle NVIDIA GPU
// runs at a low clock until it has been busy for a good part of a second.
inline void keep_busy(const CopyKernel& copy, backend::webgpu::GpuContext& gpu, int reps, double seconds) {
  const auto start = std::chrono::steady_clock::now();
  do {
    for (int k = 0; k < reps; ++k) copy.record();
    gpu.recorder().finish();
  } while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds);
}

// Copy bandwidth (read + write bytes per second): `warm_seconds` of copies first, then the best of
// `runs` batches of `reps` copies, each timed from its first record to the end of its GPU work.
inline double copy_bandwidth(const CopyKernel& copy, backend::webgpu::GpuContext& gpu, int reps, int runs, double warm_seconds) {
  keep_busy(copy, gpu, reps, warm_seconds);
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < reps; ++k) copy.record();
    gpu.recorder().finish();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / reps);
  }
  return 2.0 * static_cast<double>(copy.bytes()) / best;
}

}  // namespace wgml::bench
