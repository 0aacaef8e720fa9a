#pragma once
// Finding and opening the WebGPU implementation (wgpu-native) at run time with dlopen, so that
// wgml builds and runs without it and uses whichever build the user points it at.
#include <memory>
#include <string>
#include <vector>

#include "gpu/webgpu_api.h"

namespace wgml::gpu {

struct WebGpuLibrary {
  std::string path;      // the file that was opened
  uint32_t version = 0;  // wgpuGetVersion(): four bytes, major first
  api::Functions fn;

  std::string version_string() const;  // "29.0.1.1"
};

// Where wgml looks, in order:
//  1. $WGML_WEBGPU_LIBRARY, when set (and then nowhere else: an explicit choice must not be
//     silently replaced by another library);
//  2. the library found under .cache/webgpu when wgml was configured (tools/setup.sh puts it
//     there), if that file still exists;
//  3. libwgpu_native.so, then libwgpu_native-release.so, in the running executable's directory.
std::vector<std::string> webgpu_library_candidates();

// Opens the first candidate that loads and exports every function wgml uses. Throws
// GpuError(LibraryNotFound) listing each candidate with the reason it was not used. A library
// that was opened stays loaded for the rest of the process (wgpu-native keeps global state).
std::unique_ptr<const WebGpuLibrary> open_webgpu_library(const std::vector<std::string>& candidates);

// The process-wide library, opened on first use from webgpu_library_candidates(). A failure is
// not remembered: a later call looks again.
const WebGpuLibrary& webgpu_library();

}  // namespace wgml::gpu
