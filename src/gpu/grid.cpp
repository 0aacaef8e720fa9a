#include "gpu/grid.h"

#include <string>

#include "gpu/gpu_error.h"

namespace wgml::gpu {
namespace {

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

}  // namespace

Grid fold_workgroups(uint64_t count, uint32_t max_per_dimension) {
  const uint64_t max = max_per_dimension;
  if (max == 0 || count > max * max * max)
    throw GpuError(GpuErrorKind::TooLarge, "sizing a dispatch",
                   std::to_string(count) + " workgroups do not fit a grid of at most " +
                       std::to_string(max) + " per dimension");
  if (count <= max) return {uint32_t(count), 1, 1};
  // Rows (then planes) as few as possible, and x as short as they allow: fewer than y * z extra
  // workgroups. Rows of the maximum would add up to a whole row: 65536 workgroups would become
  // 65535 x 2, almost twice the work of launching them, which cost a 1-D kernel 20% of its
  // bandwidth on the H200 (docs/performance.md).
  const uint64_t rows = ceil_div(count, max);
  const uint64_t planes = ceil_div(rows, max);
  const uint64_t rows_per_plane = ceil_div(rows, planes);
  const uint64_t x = ceil_div(count, rows_per_plane * planes);
  return {uint32_t(x), uint32_t(rows_per_plane), uint32_t(planes)};
}

}  // namespace wgml::gpu
