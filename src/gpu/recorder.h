#pragma once
// Recording GPU work: many dispatches per compute pass and per submission, parameters through the
// uniform ring, bind groups made once per distinct set of buffers, uploads and readbacks ordered
// with the recorded work, and per-dispatch timestamps when a Profiler is attached.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpu/buffer_pool.h"
#include "gpu/device.h"
#include "gpu/grid.h"
#include "gpu/pipeline_cache.h"
#include "gpu/profiler.h"
#include "gpu/uniform_ring.h"

namespace wgml::gpu {

enum class SubmitPolicy {
  EveryNDispatches,  // submit whenever dispatches_per_submit are recorded: the GPU starts early
  OncePerRun,        // submit only in submit(), which the executor calls at the end of run()
};

struct RecorderOptions {
  SubmitPolicy policy = SubmitPolicy::EveryNDispatches;
  // Small enough that the GPU starts on a decode step while the host records the rest of it, large
  // enough that submits stay few (each costs wgpu tens of microseconds): docs/performance.md,
  // "Submitting while recording".
  uint32_t dispatches_per_submit = 64;
  uint64_t uniform_ring_bytes = 1 << 20;
  uint64_t readback_chunk_bytes = 64 << 20;  // staging used per step of a readback
};

class Recorder {
 public:
  // `profiler` may be null. Device, pool and profiler must outlive the recorder.
  Recorder(Device& device, BufferPool& pool, const RecorderOptions& options = {}, Profiler* profiler = nullptr);
  ~Recorder();  // drops commands not yet submitted
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Records one dispatch of `kernel`: `buffers` for its storage bindings in order, `params` (the
  // kernel's params_size bytes) for its uniform struct. A workgroup count above the device's
  // per-dimension limit is folded (see grid.h). `op` names the dispatch in errors and profiles.
  // Bindings are checked first (count, alignment to minStorageBufferOffsetAlignment, size
  // limits, one buffer bound both read-only and writable); a failed check throws
  // GpuError(Validation or TooLarge) and records nothing.
  void dispatch(const Kernel& kernel, std::span<const BufferRange> buffers, std::span<const std::byte> params,
                uint64_t workgroups, std::string_view op);
  void dispatch(const Kernel& kernel, std::span<const BufferRange> buffers, std::span<const std::byte> params, Grid grid,
                std::string_view op);

  // Copies `bytes` into `destination`, ordered after the work recorded so far. The offset must be
  // a multiple of 4; a length that is not is padded with zeros to the next multiple of 4, which
  // must still lie inside `destination`.
  void upload(const BufferRange& destination, std::span<const std::byte> bytes, std::string_view op);
  void copy(const BufferRange& source, const BufferRange& destination, std::string_view op);

  // Submits everything recorded, waits for it, and returns the bytes of `source` (offset and size
  // multiples of 4), read in steps of at most readback_chunk_bytes.
  std::vector<std::byte> read(const BufferRange& source, std::string_view op);
  // The same into `out` (source.size bytes).
  void read(const BufferRange& source, std::span<std::byte> out, std::string_view op);

  // A readback in two halves, for small results the host needs a little later (a sampled token):
  // start_read() records the copy of `source` after the work recorded so far and submits it;
  // finish_read() waits for that submission only, not for what was recorded after it, so the GPU
  // keeps working on later work while the host reads.
  struct PendingRead {
    PooledBuffer staging;  // as large as the source
    uint64_t serial = 0;   // the submission that holds the copy
  };
  PendingRead start_read(const BufferRange& source, std::string_view op);
  std::vector<std::byte> finish_read(PendingRead& read, std::string_view op);
  // The same into `out` (the read's size): a read that repeats allocates nothing.
  void finish_read(PendingRead& read, std::span<std::byte> out, std::string_view op);

  // Submits what has been recorded (nothing happens when nothing was). Validation errors found
  // while recording are thrown here, and the commands are dropped rather than submitted.
  void submit();
  // submit(), then wait until the GPU has finished everything submitted.
  void finish();

  const RecorderOptions& options() const { return options_; }
  uint64_t submissions() const { return submissions_; }
  uint64_t bind_groups_created() const { return bind_groups_created_; }
  // Totals since the recorder was made: what a decode step costs besides its kernels' work.
  struct Traffic {
    uint64_t dispatches = 0;
    uint64_t bytes_uploaded = 0;
    uint64_t bytes_read = 0;
  };
  const Traffic& traffic() const { return traffic_; }

 private:
  struct KeyHash {
    size_t operator()(const std::vector<uint64_t>& key) const;
  };

  void check_bindings(const Kernel& kernel, std::span<const BufferRange> buffers, std::span<const std::byte> params,
                      std::string_view op) const;
  Grid check_grid(Grid grid, std::string_view op) const;
  uint32_t push_params(std::span<const std::byte> params, std::string_view op);
  WGPUBindGroup bind_group(const Kernel& kernel, std::span<const BufferRange> buffers, std::string_view op);
  void note_op(std::string_view op);
  void begin_encoding();
  void begin_pass(std::string_view name, TimingKind kind);
  void end_pass();
  void drop_recording();
  void start_next_submission();
  void read_chunk(const BufferRange& source, std::byte* out, std::string_view op);

  Device& device_;
  BufferPool& pool_;
  RecorderOptions options_;
  Profiler* profiler_;
  UniformRing ring_;

  WGPUCommandEncoder encoder_ = nullptr;
  WGPUComputePassEncoder pass_ = nullptr;
  std::string submit_label_;                 // what a submission is called in its errors
  std::optional<Device::ErrorScope> scope_;  // collects the errors of the open recording
  const Kernel* pipeline_in_pass_ = nullptr;
  WGPUBindGroup group_in_pass_ = nullptr;
  uint32_t dispatches_recorded_ = 0;
  uint64_t passes_begun_ = 0;
  std::string first_op_, last_op_;
  uint64_t submissions_ = 0;

  std::unordered_map<std::vector<uint64_t>, WGPUBindGroup, KeyHash> bind_groups_;
  std::vector<uint64_t> key_;  // scratch for bind group lookups
  uint64_t bind_groups_created_ = 0;
  Traffic traffic_;
};

}  // namespace wgml::gpu
