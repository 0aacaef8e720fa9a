#pragma once
// Freeing temps at their last use: computed once per program from the slots every instruction
// touches, so a run holds only the temps still to be read (onnxruntime and ExecuTorch plan memory
// the same way). Outputs, inputs, mutable buffers and constants are never released; folded
// results live on in the executor's own table, so releasing their slot frees nothing early.
#include <cstdint>
#include <vector>

#include "ir/program.h"

namespace wgml::runtime {

struct ReleasePlan {
  // after[chain][instruction]: the temps that instruction of that chain touches last.
  std::vector<std::vector<std::vector<ir::Tid>>> after;
};

// A temp is released in the chain whose run covers all its uses: the main or init chain, or the
// body of an If or Scan when no instruction outside that body touches it (a body referenced by
// more than one control-flow node releases nothing itself: its parent does, after the node).
// A body runs whole each iteration, so a temp it alone touches is dead at the end of each run of it.
ReleasePlan plan_releases(const ir::Program& program);

}  // namespace wgml::runtime
