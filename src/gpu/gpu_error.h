#pragma once
// Failures of the WebGPU device layer. Each is a wgml::Error (so callers that only know the
// general category keep working) that also says which kind of GPU failure it was and which
// operation was running, and carries the implementation's own message.
#include <string>
#include <string_view>

#include "wgml/error.h"

namespace wgml::gpu {

enum class GpuErrorKind {
  LibraryNotFound,  // no loadable WebGPU library (the message lists every place looked in)
  NoAdapter,        // the library found no usable GPU or CPU device
  BadSelection,     // an adapter selector that names no adapter
  TooLarge,         // a buffer or binding above the device's limits
  MissingFeature,   // the device lacks an optional feature the caller asked for
  Validation,       // the implementation rejected a call (invalid shader, bad binding, ...)
  OutOfMemory,      // the implementation could not allocate
  Internal,         // the implementation failed internally
  DeviceLost,       // the device stopped working; it cannot be used any more
  Timeout,          // the GPU did not finish in time
};

const char* gpu_error_kind_name(GpuErrorKind kind);

class GpuError : public Error {
 public:
  // `op` names what wgml was doing ("create pipeline 'softmax'", "submit"); `detail` is the
  // explanation, usually the implementation's message.
  GpuError(GpuErrorKind kind, std::string_view op, std::string_view detail);
  GpuErrorKind kind() const { return kind_; }
  const std::string& op() const { return op_; }
  const std::string& detail() const { return detail_; }

 private:
  GpuErrorKind kind_;
  std::string op_;
  std::string detail_;
};

}  // namespace wgml::gpu
