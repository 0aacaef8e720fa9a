#pragma once
// Every failure wgml reports is a wgml::Error: a category a program can branch on, and a message
// that names the file, the place (chain, instruction, node, field or byte offset) and what was
// expected. Names from a file in the message are escaped: every control character but the
// newline, and every byte that is not UTF-8, is written as \xNN (src/core/printable.h).
#include <stdexcept>
#include <string>

namespace wgml {

enum class ErrorCode {
  Io,               // the file cannot be opened or read
  InvalidFormat,    // bytes that are not what the container or FlatBuffer format requires
  InvalidProgram,   // a well-formed file whose program breaks the IR's rules
  Unsupported,      // valid, but outside what this build executes (dtype, node, version)
  InvalidArgument,  // a caller's input does not match the program
  Runtime,          // a failure while executing (shape mismatch, bad index value, ...)
  ResourceLimit,    // a tensor would exceed the memory limit (SessionOptions::max_memory_bytes), the
                    // device ran out of memory, or loading a file would take work out of proportion
                    // to its size (docs/reliability.md, "Load time")
};

const char* error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace wgml
