#include "api/open_session.h"

#include "gpu/gpu_error.h"

namespace wgml::api {

Session open_session(const std::string& path, SessionOptions options, std::string* why_not_webgpu) {
  if (options.device != "auto") return Session(path, options);
  options.device = "webgpu";
  try {
    return Session(path, options);
  } catch (const gpu::GpuError& e) {
    if (e.kind() != gpu::GpuErrorKind::LibraryNotFound && e.kind() != gpu::GpuErrorKind::NoAdapter) throw;
    if (why_not_webgpu) *why_not_webgpu = e.what();
    options.device = "cpu";
    return Session(path, options);
  }
}

}  // namespace wgml::api
