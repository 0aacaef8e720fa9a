#include "gpu/gpu_error.h"

namespace wgml::gpu {
namespace {

ErrorCode error_code_of(GpuErrorKind kind) {
  switch (kind) {
    case GpuErrorKind::LibraryNotFound:
    case GpuErrorKind::NoAdapter:
    case GpuErrorKind::TooLarge:
    case GpuErrorKind::MissingFeature:
      return ErrorCode::Unsupported;
    case GpuErrorKind::BadSelection:
      return ErrorCode::InvalidArgument;
    case GpuErrorKind::OutOfMemory:
      return ErrorCode::ResourceLimit;
    case GpuErrorKind::Validation:
    case GpuErrorKind::Internal:
    case GpuErrorKind::DeviceLost:
    case GpuErrorKind::Timeout:
      return ErrorCode::Runtime;
  }
  return ErrorCode::Runtime;
}

// Implementations end their messages with blank lines; errors read better without them.
std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::string format_message(GpuErrorKind kind, std::string_view op, std::string_view detail) {
  std::string m = "webgpu ";
  m += gpu_error_kind_name(kind);
  m += " error in ";
  m += op;
  m += ": ";
  m += detail;
  return m;
}

}  // namespace

const char* gpu_error_kind_name(GpuErrorKind kind) {
  switch (kind) {
    case GpuErrorKind::LibraryNotFound:
      return "library-not-found";
    case GpuErrorKind::NoAdapter:
      return "no-adapter";
    case GpuErrorKind::BadSelection:
      return "bad-adapter-selection";
    case GpuErrorKind::TooLarge:
      return "too-large";
    case GpuErrorKind::MissingFeature:
      return "missing-feature";
    case GpuErrorKind::Validation:
      return "validation";
    case GpuErrorKind::OutOfMemory:
      return "out-of-memory";
    case GpuErrorKind::Internal:
      return "internal";
    case GpuErrorKind::DeviceLost:
      return "device-lost";
    case GpuErrorKind::Timeout:
      return "timeout";
  }
  return "?";
}

GpuError::GpuError(GpuErrorKind kind, std::string_view op, std::string_view detail)
    : Error(error_code_of(kind), format_message(kind, op, trimmed(detail))), kind_(kind), op_(op), detail_(trimmed(detail)) {}

}  // namespace wgml::gpu
