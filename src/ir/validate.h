#pragma once
// Load-time checks of a decoded program: everything that can be decided without running it.
#include <string>

#include "ir/program.h"

namespace wgml::ir {

// Throws wgml::Error(InvalidProgram) naming `source` and the place of the first violation.
void validate_program(const Program& program, const std::string& source);

// Tids of constants that the init chain writes (their stored data may be a placeholder).
std::vector<bool> constants_written_by_init(const Program& program);

}  // namespace wgml::ir
