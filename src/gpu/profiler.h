#pragma once
// GPU time per dispatch and per compute pass from timestamp queries. A Recorder given a Profiler
// writes a timestamp pair around every pass and every dispatch; collect() turns them into times.
// Where the device cannot write timestamps inside a pass (only at pass boundaries), the recorder
// gives each dispatch its own pass while profiling, which costs time but still measures each op.
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/buffer_pool.h"
#include "gpu/device.h"

namespace wgml::gpu {

enum class TimingKind { Pass, Op };

struct GpuTiming {
  std::string name;
  TimingKind kind = TimingKind::Op;
  double start_ns = 0;  // since the first timestamp this profiler collected
  double duration_ns = 0;
};

class Profiler {
 public:
  // Throws GpuError(MissingFeature) when the device has no timestamp queries.
  Profiler(Device& device, BufferPool& pool);
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  bool timestamps_inside_passes() const { return device_.features().timestamps_inside_passes; }

  // Recorder side. Each slice takes two queries; has_room() says whether `slices` more fit
  // before resolve() must run (the recorder then submits).
  bool has_room(uint32_t slices) const { return used_ + 2 * slices <= kQueryCount; }
  WGPUPassTimestampWrites begin_pass(std::string name, TimingKind kind);
  void write_op_start(WGPUComputePassEncoder pass, std::string name);
  void write_op_end(WGPUComputePassEncoder pass);
  // Records the copy of this submission's timestamps; the recorder calls it before Finish.
  void resolve(WGPUCommandEncoder encoder);

  // Waits for the submitted work and returns the times of every slice recorded since the last
  // collect(), in recording order.
  std::vector<GpuTiming> collect();

 private:
  static constexpr uint32_t kQueryCount = 4096;  // wgpu's largest query set
  struct Slice {
    std::string name;
    TimingKind kind;
    uint32_t first_query;  // start; the end is the next query
  };
  struct Resolved {
    PooledBuffer readback;
    std::vector<Slice> slices;
  };
  uint32_t reserve(std::string name, TimingKind kind);

  Device& device_;
  BufferPool& pool_;
  WGPUQuerySet queries_ = nullptr;
  uint32_t used_ = 0;
  std::vector<Slice> slices_;      // in the commands being recorded
  std::vector<Resolved> pending_;  // submitted or about to be
  bool has_origin_ = false;
  uint64_t origin_ticks_ = 0;
};

}  // namespace wgml::gpu
