#include "backend/webgpu/roofline.h"

#include <cmath>
#include <span>

#include "gpu/grid.h"

namespace wgml::backend::webgpu {

namespace {

const gpu::Kernel& roofline_kernel(GpuContext& gpu, const char* label, const char* wgsl, std::vector<gpu::Access> bindings,
                                   uint32_t params_size) {
  gpu::KernelSource k;
  k.label = label;
  k.wgsl = wgsl;
  k.bindings = std::move(bindings);
  k.params_size = params_size;
  return gpu.pipelines().get(k);
}

}  // namespace

CopyKernel::CopyKernel(GpuContext& gpu, uint64_t bytes) : gpu_(gpu), bytes_(bytes) {
  kernel_ = &roofline_kernel(gpu, "roofline copy", kCopyWgsl, {gpu::Access::Read, gpu::Access::ReadWrite}, 0);
  src_ = gpu.pool().acquire(bytes, gpu::BufferKind::Storage, "roofline src");
  dst_ = gpu.pool().acquire(bytes, gpu::BufferKind::Storage, "roofline dst");
  ranges_ = {src_.range(), dst_.range()};
}

void CopyKernel::record() const { gpu_.recorder().dispatch(*kernel_, ranges_, {}, (bytes_ / 16 + 255) / 256, "roofline copy"); }

FmaKernel::FmaKernel(GpuContext& gpu, uint32_t workgroups, uint32_t iters) : gpu_(gpu), workgroups_(workgroups), iters_(iters) {
  kernel_ = &roofline_kernel(gpu, "roofline fma", kFmaWgsl, {gpu::Access::ReadWrite}, sizeof(uint32_t));
  out_ = gpu.pool().acquire(uint64_t{workgroups} * 256 * 16, gpu::BufferKind::Storage, "roofline fma");
  ranges_ = {out_.range()};
}

double FmaKernel::flop() const { return double(workgroups_) * 256.0 * iters_ * kFmaFlopPerTrip; }

void FmaKernel::record() const {
  gpu_.recorder().dispatch(*kernel_, ranges_, std::as_bytes(std::span(&iters_, 1)),
                           gpu::fold_workgroups(workgroups_, gpu_.device().limits().maxComputeWorkgroupsPerDimension),
                           "roofline fma");
}

uint64_t copy_bytes_within_limits(GpuContext& gpu, uint64_t bytes) {
  return std::min<uint64_t>(bytes, gpu.device().limits().maxStorageBufferBindingSize) / 16 * 16;
}

void keep_busy(const CopyKernel& copy, GpuContext& gpu, int reps, double seconds) {
  const auto start = std::chrono::steady_clock::now();
  do {
    for (int k = 0; k < reps; ++k) copy.record();
    gpu.recorder().finish();
  } while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds);
}

double copy_bandwidth(const CopyKernel& copy, GpuContext& gpu, int reps, int runs, double warm_seconds) {
  keep_busy(copy, gpu, reps, warm_seconds);
  return 2.0 * static_cast<double>(copy.bytes()) / best_seconds_per_call(gpu, reps, runs, [&] { copy.record(); });
}

double fma_rate(const FmaKernel& fma, GpuContext& gpu, int reps, int runs) {
  return fma.flop() / best_seconds_per_call(gpu, reps, runs, [&] { fma.record(); });
}

DeviceCeilings measure_ceilings(GpuContext& gpu) {
  DeviceCeilings c;
  const CopyKernel copy(gpu, copy_bytes_within_limits(gpu, uint64_t{256} << 20));
  // Ten copies a batch (as the benchmarks time them), fewer where a copy takes more than 2 ms (a
  // CPU implementation: one).
  const double one_copy = best_seconds_per_call(gpu, 1, 1, [&] { copy.record(); });
  const int reps = std::clamp(static_cast<int>(0.02 / std::max(one_copy, 1e-9)), 1, 10);  // 20 ms / copy
  c.copy_bytes = copy.bytes();
  c.copy_bytes_per_s = copy_bandwidth(copy, gpu, reps, 3, 1.0);
  // FMA runs of about 50 ms, sized from a first run of 64 trips.
  const double probe = fma_rate(FmaKernel(gpu, kFmaWorkgroups, 64), gpu, 1, 1);
  const double trips = 0.05 * probe / (kFmaWorkgroups * 256.0 * kFmaFlopPerTrip);
  const FmaKernel fma(gpu, kFmaWorkgroups, static_cast<uint32_t>(std::clamp(trips, 64.0, 65536.0)));
  c.fma_flop_per_s = fma_rate(fma, gpu, 1, 3);
  return c;
}

}  // namespace wgml::backend::webgpu
