#pragma once
// Everything the WebGPU backend keeps for one device: the device and its buffer pool, compiled
// pipelines, the recorder all kernels append to, the kernel-spec engine and tunables, and the
// profiler when profiling. Device tensors hold a shared_ptr to it, so it lives as long as any of
// its buffers does.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpu/buffer_pool.h"
#include "gpu/device.h"
#include "gpu/pipeline_cache.h"
#include "gpu/profiler.h"
#include "gpu/recorder.h"
#include "kernel/decomposition.h"
#include "kernel/engine.h"
#include "wgml/error.h"

namespace wgml::backend::webgpu {

struct GpuOptions {
  std::string adapter;                // gpu::DeviceOptions::adapter: empty for the best one
  std::string kernels_dir;            // holds specs/ and wgsl/; empty for the built-in default
  std::vector<std::string> tunables;  // "Op.NAME=VALUE"
  std::string tunables_file;          // per-adapter JSON; empty: kernels/tunables/<adapter>.json if present
  bool profile = false;               // time every dispatch (needs timestamp queries)
  // Nodes that compute a few integers from values the host holds (positions, shape arithmetic) run
  // on the CPU where those values are: a GPU kernel would cost a dispatch, and whatever reads its
  // result back (an ItemInt) a round trip. Kernel tests turn it off.
  bool small_values_on_host = true;
  uint32_t dispatches_per_submit = 0;  // SessionOptions::dispatches_per_submit; 0: the recorder's default
};

// Where kernels/ is when GpuOptions::kernels_dir is empty: $WGML_KERNELS_DIR, else the source tree's.
std::string default_kernels_dir();

class GpuContext {
 public:
  explicit GpuContext(const GpuOptions& options);
  ~GpuContext();
  GpuContext(const GpuContext&) = delete;
  GpuContext& operator=(const GpuContext&) = delete;

  gpu::Device& device() { return device_; }
  gpu::BufferPool& pool() { return pool_; }
  gpu::PipelineCache& pipelines() { return pipelines_; }
  gpu::Recorder& recorder() { return *recorder_; }
  gpu::Profiler* profiler() { return profiler_.get(); }
  const kernel::Engine& engine() const { return engine_; }
  // The same-device decomposition of (domain, op), or null (kernels/decompositions).
  const kernel::Decomposition* decomposition(const std::string& domain, const std::string& op) const;
  const kernel::DeviceCaps& caps() const { return caps_; }
  const kernel::TunableOverrides& tunables() const { return tunables_; }

  // The plan of `request` with `spec` on this device, made once per distinct request (dtypes,
  // shapes, attributes, aliasing) and then reused: planning costs about 0.3 ms, and a decode step
  // runs the same few hundred requests every token. A request the spec rejects throws the same
  // wgml::Error every time.
  const kernel::KernelPlan& plan(const kernel::KernelSpec& spec, const kernel::KernelRequest& request) {
    return *shared_plan(spec, request);
  }
  // The same plan, shared: it outlives the cache's entry (bound calls keep theirs).
  std::shared_ptr<const kernel::KernelPlan> shared_plan(const kernel::KernelSpec& spec, const kernel::KernelRequest& request);
  size_t cached_plans() const { return plans_.size(); }
  // The plan of the backend's own one-input op wgml.`op` (PackBfloat16, GreedyToken) for its input
  // `input` of `dtype` and `shape`, null when the kernels have no such spec: found by dtype and
  // shape alone, without a plan key, because a decode step runs them every token (a few small
  // tensors made widened repacked, plan_runner.cpp's converted_on_gpu; the sampled token).
  std::shared_ptr<const kernel::KernelPlan> own_plan(std::string_view op, std::string_view input, DType dtype,
                                                     const Shape& shape);
  // What an upload of a host tensor encodes into, kept for every upload (a decode step makes a
  // few: positions, RoPE's rows): after the first steps it allocates nothing.
  struct UploadScratch {
    std::vector<uint8_t> bytes;
    std::string label;
  };
  UploadScratch& upload_scratch() { return upload_scratch_; }

  // The compiled pipeline of a pass, found by the identity of its rendered WGSL (shared through
  // the render cache), so a dispatch neither copies nor hashes the source.
  const gpu::Kernel* find_kernel(const kernel::PlanPass& pass) const;
  // Compiles (or finds in the pipeline cache) `kernel`, the interface of `pass`, and remembers it.
  const gpu::Kernel& add_kernel(const kernel::PlanPass& pass, const gpu::KernelSource& kernel);

  // Work done besides running kernels, since the context was made: what a steady decode step
  // must not do (each a counter that only grows).
  struct Counters {
    uint64_t plans_made = 0;           // requests planned (not found in the plan cache)
    uint64_t plan_keys_built = 0;      // plan-cache keys built (a string holding the request), found or not
    uint64_t kernels_rendered = 0;     // WGSL rendered from a template (a new shape class)
    uint64_t pipelines_compiled = 0;   // compute pipelines created
    uint64_t buffers_created = 0;      // GPU buffers made (not served from the pool)
    uint64_t bind_groups_created = 0;  // bind groups made (not found in the recorder's cache)
    uint64_t submits = 0;
    uint64_t dispatches = 0;
    uint64_t bytes_uploaded = 0;
    uint64_t bytes_read = 0;
  };
  Counters counters() const;

 private:
  void check_tunables() const;

  gpu::Device device_;
  gpu::BufferPool pool_;
  gpu::PipelineCache pipelines_;
  std::unique_ptr<gpu::Profiler> profiler_;
  std::unique_ptr<gpu::Recorder> recorder_;
  kernel::Engine engine_;
  std::map<std::pair<std::string, std::string>, kernel::Decomposition> decompositions_;
  kernel::DeviceCaps caps_;
  kernel::TunableOverrides tunables_;
  struct CachedPlan {
    std::shared_ptr<const kernel::KernelPlan> plan;
    ErrorCode error_code = ErrorCode::Runtime;  // when there is no plan
    std::string error;
  };
  std::unordered_map<std::string, CachedPlan> plans_;
  struct OwnPlan {
    std::string op;
    DType dtype;
    Shape shape;
    std::shared_ptr<const kernel::KernelPlan> plan;
  };
  std::vector<OwnPlan> own_plans_;
  UploadScratch upload_scratch_;
  uint64_t plans_made_ = 0;
  uint64_t plan_keys_built_ = 0;
  kernel::RenderCache renders_;
  std::unordered_map<std::shared_ptr<const std::string>, const gpu::Kernel*> kernels_;
};

}  // namespace wgml::backend::webgpu
