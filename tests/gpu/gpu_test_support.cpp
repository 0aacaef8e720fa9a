#include "gpu_test_support.h"

namespace wgml::gpu::testing {

GpuContext& GpuContext::get() {
  static GpuContext context = [] {
    GpuContext c;
    try {
      c.device = std::make_unique<Device>();
    } catch (const GpuError& e) {
      // Only a machine without any WebGPU library or device skips; every other failure of
      // device creation is a failure of the test that asked for the device.
      if (e.kind() != GpuErrorKind::LibraryNotFound && e.kind() != GpuErrorKind::NoAdapter) throw;
      c.skip_reason = std::string("no WebGPU library or device on this machine: ") + e.what();
      return c;
    }
    c.pool = std::make_unique<BufferPool>(*c.device);
    c.pipelines = std::make_unique<PipelineCache>(*c.device);
    return c;
  }();
  return context;
}

}  // namespace wgml::gpu::testing
