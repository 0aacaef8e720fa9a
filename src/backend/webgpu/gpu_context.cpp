#include "backend/webgpu/gpu_context.h"

#include <cstdlib>

namespace wgml::backend::webgpu {
namespace {

gpu::DeviceOptions device_options(const GpuOptions& options) {
  gpu::DeviceOptions d;
  d.adapter = options.adapter;
  d.timestamps = options.profile;
  return d;
}

std::string kernels_dir(const GpuOptions& options) {
  return options.kernels_dir.empty() ? default_kernels_dir() : options.kernels_dir;
}

}  // namespace

std::string default_kernels_dir() {
  if (const char* env = std::getenv("WGML_KERNELS_DIR"); env && *env) return env;
  return WGML_KERNELS_DIR;
}

GpuContext::GpuContext(const GpuOptions& options)
    : device_(device_options(options)),
      pool_(device_),
      pipelines_(device_),
      engine_(kernels_dir(options) + "/wgsl") {
  if (options.profile) profiler_ = std::make_unique<gpu::Profiler>(device_, pool_);
  recorder_ = std::make_unique<gpu::Recorder>(device_, pool_, gpu::RecorderOptions{}, profiler_.get());
  engine_.load_directory(kernels_dir(options) + "/specs");
  caps_.shader_f16 = device_.features().shader_f16;
  caps_.max_workgroups_per_dimension = device_.limits().maxComputeWorkgroupsPerDimension;
  caps_.max_storage_binding_bytes = device_.limits().maxStorageBufferBindingSize;
  for (const std::string& setting : options.tunables) tunables_.add_run_override(setting);
  if (!options.tunables_file.empty()) tunables_.load_adapter_file(options.tunables_file);
}

GpuContext::~GpuContext() {
  recorder_.reset();
  profiler_.reset();
  device_.drain();
}

}  // namespace wgml::backend::webgpu
