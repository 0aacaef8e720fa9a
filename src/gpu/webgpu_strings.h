#pragma once
// Conversions between C++ strings and the API's {data, length} string views.
#include <string>
#include <string_view>

#include "gpu/webgpu_api.h"

namespace wgml::gpu {

inline WGPUStringView view(std::string_view s) { return {s.data(), s.size()}; }

inline std::string to_string(WGPUStringView v) {
  if (!v.data) return {};
  if (v.length == WGPU_STRLEN) return std::string(v.data);
  return std::string(v.data, v.length);
}

}  // namespace wgml::gpu
