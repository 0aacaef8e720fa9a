#pragma once
// What a WebGPU device can reach, measured with two kernels put beside what is being timed: a
// vec4<f32> copy (the memory roofline: what a memory-bound kernel can reach) and independent f32
// FMA chains (the arithmetic roofline: what a compute-bound one can). `wgml bench --roofline`,
// bench/llm_decode, bench/kernel_bench and bench/gpu_micro measure against them, in the same run as
// the work they compare, because an idle NVIDIA GPU's clock and the spread between machines of one
// kind move both by more than most changes.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "backend/webgpu/gpu_context.h"
#include "backend/webgpu/roofline_wgsl.h"

namespace wgml::backend::webgpu {

// Flop per thread per loop trip of kFmaWgsl (16 vec4 FMAs).
inline constexpr double kFmaFlopPerTrip = 128.0;
// The FMA kernel's grid where it measures a roofline: 2M threads keep every SM of a large GPU busy.
inline constexpr uint32_t kFmaWorkgroups = 8192;

// A vec4 copy of `bytes` (a multiple of 16) between two buffers of the context's pool.
class CopyKernel {
 public:
  CopyKernel(GpuContext& gpu, uint64_t bytes);
  uint64_t bytes() const { return bytes_; }
  // Records one copy (submitted with the recorder's next finish()).
  void record() const;

 private:
  GpuContext& gpu_;
  uint64_t bytes_;
  const gpu::Kernel* kernel_ = nullptr;
  gpu::PooledBuffer src_, dst_;
  std::vector<gpu::BufferRange> ranges_;
};

// The FMA kernel over `workgroups` workgroups of 256 threads, `iters` loop trips each.
class FmaKernel {
 public:
  FmaKernel(GpuContext& gpu, uint32_t workgroups, uint32_t iters);
  // The kernel's flop per run.
  double flop() const;
  void record() const;

 private:
  GpuContext& gpu_;
  uint32_t workgroups_, iters_;
  const gpu::Kernel* kernel_ = nullptr;
  gpu::PooledBuffer out_;
  std::vector<gpu::BufferRange> ranges_;
};

// The largest copy up to `bytes` that one binding of the device can hold, a multiple of 16.
uint64_t copy_bytes_within_limits(GpuContext& gpu, uint64_t bytes);

// Records and submits batches of `reps` copies until `seconds` have passed: an idle NVIDIA GPU
// runs at a low clock until it has been busy for a good part of a second.
void keep_busy(const CopyKernel& copy, GpuContext& gpu, int reps, double seconds);

// Seconds one of `reps` calls of `record` takes, timed over a batch from its first record to the
// end of its GPU work; the best of `runs` batches.
template <class Record>
double best_seconds_per_call(GpuContext& gpu, int reps, int runs, Record record) {
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < reps; ++k) record();
    gpu.recorder().finish();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / reps);
  }
  return best;
}

// Copy bandwidth (read + write bytes per second): `warm_seconds` of copies first, then the best of
// `runs` batches of `reps` copies.
double copy_bandwidth(const CopyKernel& copy, GpuContext& gpu, int reps, int runs, double warm_seconds);

// Flop per second of the FMA kernel: the best of `runs` batches of `reps` runs (after warm-up: run
// copy_bandwidth or keep_busy first).
double fma_rate(const FmaKernel& fma, GpuContext& gpu, int reps, int runs);

// Both rooflines of the context's device, measured now: a second of copies to bring the clock up,
// then a copy of up to 256 MiB and FMA runs of about 50 ms each (sized by a first short run, so a
// CPU implementation such as lavapipe is not kept for minutes), each the best of 3 batches.
struct DeviceCeilings {
  double copy_bytes_per_s = 0;  // read + write
  double fma_flop_per_s = 0;
  uint64_t copy_bytes = 0;  // the copy measured
};
DeviceCeilings measure_ceilings(GpuContext& gpu);

}  // namespace wgml::backend::webgpu
