#pragma once
// Load-time constant folding: the instructions of the main chain that compute only from constants
// (an exported nn.Linear's weight transpose, a cast of a constant mask) run once when the model
// is loaded; each call then binds their results to the slots they wrote (exporters reuse temp
// slots, so a folded result is rebound at its place in the chain rather than kept in its slot).
#include <cstdint>
#include <vector>

#include "ir/program.h"

namespace wgml::runtime {

struct FoldingPlan {
  std::vector<bool> folded;              // per main-chain instruction: runs once, at load
  std::vector<uint32_t> dead_constants;  // constants nothing reads once the folded instructions ran
};

// An instruction folds when it is a node without body chains or value slots (and not RandomBits)
// whose every input, where it runs, holds a constant or a folded result.
FoldingPlan plan_constant_folding(const ir::Program& program);

// The tensor slots an instruction writes.
std::vector<ir::Tid> tensors_written(const ir::Instruction& instruction);

}  // namespace wgml::runtime
