#include "gpu/webgpu_library.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "gpu/gpu_error.h"

#ifndef WGML_WEBGPU_CONFIGURED_LIBRARY
#define WGML_WEBGPU_CONFIGURED_LIBRARY ""
#endif

namespace wgml::gpu {
namespace {

namespace fs = std::filesystem;

const char* const kLibraryNames[] = {"libwgpu_native.so", "libwgpu_native-release.so"};

fs::path executable_directory() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

// Opens `path` and resolves every entry point; returns an explanation instead when it cannot.
std::unique_ptr<WebGpuLibrary> try_open(const std::string& path, std::string& why_not) {
  // A bare file name is left to the dynamic loader's search path.
  if (path.find('/') != std::string::npos && !fs::exists(path)) {
    why_not = "no such file";
    return nullptr;
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* message = dlerror();
    why_not = message ? message : "dlopen failed";
    return nullptr;
  }
  auto lib = std::make_unique<WebGpuLibrary>();
  lib->path = path;
  std::string missing;
#define WGML_RESOLVE_WEBGPU_FUNCTION(name)                                              \
  lib->fn.name = reinterpret_cast<decltype(lib->fn.name)>(dlsym(handle, "wgpu" #name)); \
  if (!lib->fn.name) missing += (missing.empty() ? "wgpu" : ", wgpu") + std::string(#name);
  WGML_WEBGPU_FUNCTIONS(WGML_RESOLVE_WEBGPU_FUNCTION)
#undef WGML_RESOLVE_WEBGPU_FUNCTION
  if (!missing.empty()) {
    why_not = "not wgpu-native's WebGPU API (missing " + missing + ")";
    dlclose(handle);
    return nullptr;
  }
  lib->version = lib->fn.GetVersion();
  return lib;
}

}  // namespace

std::string WebGpuLibrary::version_string() const {
  return std::to_string(version >> 24) + "." + std::to_string((version >> 16) & 0xFF) + "." +
         std::to_string((version >> 8) & 0xFF) + "." + std::to_string(version & 0xFF);
}

std::vector<std::string> webgpu_library_candidates() {
  if (const char* chosen = std::getenv("WGML_WEBGPU_LIBRARY"); chosen && *chosen) return {chosen};
  std::vector<std::string> candidates;
  if (std::string configured = WGML_WEBGPU_CONFIGURED_LIBRARY; !configured.empty()) candidates.push_back(configured);
  const fs::path dir = executable_directory();
  if (!dir.empty())
    for (const char* name : kLibraryNames) candidates.push_back((dir / name).string());
  return candidates;
}

std::unique_ptr<const WebGpuLibrary> open_webgpu_library(const std::vector<std::string>& candidates) {
  std::string tried;
  for (const std::string& path : candidates) {
    std::string why_not;
    if (auto lib = try_open(path, why_not)) return lib;
    tried += "\n  " + path + ": " + why_not;
  }
  if (candidates.empty()) tried = " (no candidate paths)";
  throw GpuError(GpuErrorKind::LibraryNotFound, "loading the WebGPU library",
                 "no usable wgpu-native library; looked in:" + tried +
                     "\nrun tools/setup.sh to fetch it, or set WGML_WEBGPU_LIBRARY to its path");
}

const WebGpuLibrary& webgpu_library() {
  static std::mutex mutex;
  static std::unique_ptr<const WebGpuLibrary> library;
  std::lock_guard<std::mutex> lock(mutex);
  if (!library) library = open_webgpu_library(webgpu_library_candidates());
  return *library;
}

}  // namespace wgml::gpu
