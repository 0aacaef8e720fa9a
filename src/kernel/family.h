#pragma once
// Kernel families (docs/kernels.md, "Families"): one spec file declares the variants, passes,
// bindings and dispatch of a family once, then a table of ops that differ only in a few values.
// expand_family turns such a file into the plain spec of each op, which the spec parser then
// reads like any other; a file without "family" is a single spec and passes through unchanged.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace wgml::kernel {

struct ExpandedSpec {
  std::string label;  // the file, and "#Op" for an op of a family: names it in messages
  nlohmann::ordered_json body;
};

// Throws wgml::Error(InvalidFormat) naming the file and the JSON path of a malformed family.
std::vector<ExpandedSpec> expand_family(const nlohmann::ordered_json& root, const std::string& file);

}  // namespace wgml::kernel
