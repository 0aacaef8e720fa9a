#pragma once
// Folding a 1-D workgroup count over a dispatch's x, y and z, each at most `max` (WebGPU's
// maxComputeWorkgroupsPerDimension); kernels linearise the workgroup id again.
#include <array>
#include <cstdint>

namespace wgml {

// x * y * z >= count with each at most `max` (when count <= max^3), as few rows (then planes) as
// possible and x as short as they allow: fewer than y * z extra workgroups. Rows of the maximum
// would add a whole row: 65536 workgroups would become 65535 x 2, almost twice the launches,
// which cost a 1-D kernel 20% of its bandwidth on the H200 (docs/performance.md). 0 gives {0, 1, 1}.
inline std::array<uint64_t, 3> fold_workgroup_count(uint64_t count, uint64_t max) {
  const auto ceil_div = [](uint64_t a, uint64_t b) { return (a + b - 1) / b; };
  if (count <= max) return {count, 1, 1};
  const uint64_t rows = ceil_div(count, max);
  const uint64_t planes = ceil_div(rows, max);
  const uint64_t rows_per_plane = ceil_div(rows, planes);
  return {ceil_div(count, rows_per_plane * planes), rows_per_plane, planes};
}

}  // namespace wgml
