#include "wgml/error.h"

namespace wgml {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::Io:
      return "io";
    case ErrorCode::InvalidFormat:
      return "invalid-format";
    case ErrorCode::InvalidProgram:
      return "invalid-program";
    case ErrorCode::Unsupported:
      return "unsupported";
    case ErrorCode::InvalidArgument:
      return "invalid-argument";
    case ErrorCode::Runtime:
      return "runtime";
    case ErrorCode::ResourceLimit:
      return "resource-limit";
  }
  return "?";
}

Error::Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}

}  // namespace wgml
