#include "wgml/error.h"

#include "core/printable.h"

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

// Messages quote names from model files: escaped here, once for every frontend and every printer
// of what(), so that a message is valid UTF-8 (a Python str) and cannot drive a terminal.
Error::Error(ErrorCode code, const std::string& message) : std::runtime_error(printable(message, Newlines::Keep)), code_(code) {}

}  // namespace wgml
