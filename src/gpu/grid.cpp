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
  const uint64_t rows = ceil_div(count, max);  // rows of `max` workgroups
  if (rows <= max) return {uint32_t(max), uint32_t(rows), 1};
  const uint64_t planes = ceil_div(rows, max);
  return {uint32_t(max), uint32_t(ceil_div(rows, planes)), uint32_t(planes)};
}

}  // namespace wgml::gpu
