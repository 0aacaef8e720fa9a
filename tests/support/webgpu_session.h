#pragma once
// Test helper: a Session on the WebGPU backend (lavapipe in CI), or nullopt with the reason where
// the machine has no WebGPU library or device, so that a test can skip rather than fail there.
#include <optional>
#include <string>

#include "gpu/gpu_error.h"
#include "wgml/session.h"

namespace wgml::testing {

inline std::optional<Session> open_webgpu_session(const std::string& model_path, std::string& why_not,
                                                  SessionOptions options = {}) {
  options.device = "webgpu";
  try {
    return Session(model_path, options);
  } catch (const gpu::GpuError& e) {
    if (e.kind() != gpu::GpuErrorKind::LibraryNotFound && e.kind() != gpu::GpuErrorKind::NoAdapter) throw;
    why_not = e.what();
    return std::nullopt;
  }
}

}  // namespace wgml::testing
