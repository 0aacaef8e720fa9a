#pragma once
// Working memory of CPU kernels whose size the model decides (an output extent from attributes,
// a table from shape inputs): counted against the session's memory budget like a tensor of the
// same bytes, so that no such size can bypass SessionOptions::max_memory_bytes.
#include <vector>

#include "core/memory_budget.h"

namespace wgml::backend::cpu {

// Working doubles of a float64 `shape`, filled with `fill`.
struct WorkingDoubles {
  MemoryCharge charge;
  std::vector<double> values;
};
// Refuses (ResourceLimit) before allocating when the limit would be passed.
WorkingDoubles working_doubles(const Shape& shape, double fill = 0);

}  // namespace wgml::backend::cpu
