#pragma once
// Everything the WebGPU backend keeps for one device: the device and its buffer pool, compiled
// pipelines, the recorder all kernels append to, the kernel-spec engine and tunables, and the
// profiler when profiling. Device tensors hold a shared_ptr to it, so it lives as long as any of
// its buffers does.
#include <memory>
#include <optional>
#include <unordered_map>
#include <string>
#include <vector>

#include "gpu/buffer_pool.h"
#include "gpu/device.h"
#include "gpu/pipeline_cache.h"
#include "gpu/profiler.h"
#include "gpu/recorder.h"
#include "spec/engine.h"
#include "wgml/error.h"

namespace wgml::backend::webgpu {

struct GpuOptions {
  std::string adapter;          // gpu::DeviceOptions::adapter: empty for the best one
  std::string kernels_dir;      // holds specs/ and wgsl/; empty for the built-in default
  std::vector<std::string> tunables;  // "Op.NAME=VALUE"
  std::string tunables_file;    // per-adapter JSON; empty: kernels/tunables/<adapter>.json if present
  bool profile = false;         // time every dispatch (needs timestamp queries)
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
  const spec::Engine& engine() const { return engine_; }
  const spec::DeviceCaps& caps() const { return caps_; }
  const spec::TunableOverrides& tunables() const { return tunables_; }

  // The plan of `request` with `spec` on this device, made once per distinct request (dtypes,
  // shapes, attributes, aliasing) and then reused: planning costs about 0.3 ms, and a decode step
  // runs the same few hundred requests every token. A request the spec rejects throws the same
  // wgml::Error every time.
  const spec::KernelPlan& plan(const spec::KernelSpec& spec, const spec::KernelRequest& request);
  size_t cached_plans() const { return plans_.size(); }

 private:
  void check_tunables() const;

  gpu::Device device_;
  gpu::BufferPool pool_;
  gpu::PipelineCache pipelines_;
  std::unique_ptr<gpu::Profiler> profiler_;
  std::unique_ptr<gpu::Recorder> recorder_;
  spec::Engine engine_;
  spec::DeviceCaps caps_;
  spec::TunableOverrides tunables_;
  struct CachedPlan {
    std::optional<spec::KernelPlan> plan;
    ErrorCode error_code = ErrorCode::Runtime;  // when there is no plan
    std::string error;
  };
  std::unordered_map<std::string, CachedPlan> plans_;
};

}  // namespace wgml::backend::webgpu
