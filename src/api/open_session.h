#pragma once
// Opening a Session on the device "auto" stands for: what `wgml run --device auto` and
// wgml.Session(device="auto") do.
#include <string>

#include "wgml/session.h"

namespace wgml::api {

// options.device "auto": the best WebGPU adapter (a GPU, else a CPU implementation such as
// lavapipe), or the CPU reference where the machine has no WebGPU library or device at all; then
// `why_not_webgpu` (when given) receives the reason. Any other device opens as Session does.
Session open_session(const std::string& path, SessionOptions options, std::string* why_not_webgpu = nullptr);

}  // namespace wgml::api
