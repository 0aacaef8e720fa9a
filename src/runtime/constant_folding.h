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
  // Per main-chain instruction: the dead constants it is the last folded reader of, which can be
  // let go as soon as it has run (a weight whose transpose the products read).
  std::vector<std::vector<uint32_t>> dead_after;
  // Per main-chain instruction: the folded results to settle after it (Backend::settle_folded),
  // as (the folded instruction that wrote it, its slot): a result no later folded instruction
  // reads right after it is written, else after its last folded reader, which reads it as made.
  std::vector<std::vector<std::pair<size_t, ir::Tid>>> settle_after;
};

// An instruction folds when it is a node without body chains or value slots (and not RandomBits)
// whose every input, where it runs, holds a constant or a folded result.
FoldingPlan plan_constant_folding(const ir::Program& program);

// The tensor slots an instruction writes.
std::vector<ir::Tid> tensors_written(const ir::Instruction& instruction);

}  // namespace wgml::runtime
