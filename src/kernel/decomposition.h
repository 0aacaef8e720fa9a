#pragma once
// Same-device decompositions (kernels/decompositions/<domain>.json, docs/kernels.md section 11):
// a node with no kernel of its own may run as a short sequence of ops that have one, so a block
// stays on the GPU instead of bouncing to the CPU reference (MLX's `fast` ops fall back the same
// way). Each step names an op of the same domain, takes its inputs from the node's tensor fields
// or the previous step's output, and computes its attributes with spec expressions over the
// node's fields (`attrs.X`, `shapes.X`, `ranks.X`) and the step's loop variable.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernel/expr.h"

namespace wgml::kernel {

struct DecompositionStep {
  std::string op;
  std::string loop_variable;  // with `for`: the step runs once per element of loop_list
  std::optional<Expr> loop_list;
  std::map<std::string, std::string> inputs;  // the step op's input -> a tensor field of the node, or "previous"
  std::map<std::string, Expr> attributes;     // the step op's attribute -> its value
  std::string path;
};

struct Decomposition {
  std::string file;
  std::string domain, op;
  std::string input;   // the node's tensor field that the first step reads as "previous" (and
                       // the output when no step runs)
  std::string output;  // the node's tensor field the last step's output goes to
  std::vector<DecompositionStep> steps;
};

// Parses kernels/decompositions/<domain>.json. Throws wgml::Error(InvalidFormat) naming the file
// and the JSON path.
// Errors and Decomposition::file name the file `display_name` when given.
std::vector<Decomposition> load_decompositions(const std::string& path, const std::string& display_name = "");

// Every <dir>/*.json, keyed by (domain, op).
std::map<std::pair<std::string, std::string>, Decomposition> load_decomposition_directory(const std::string& dir);

}  // namespace wgml::kernel
