#include "gpu/grid.h"

#include <string>

#include "core/workgroups.h"
#include "gpu/gpu_error.h"

namespace wgml::gpu {

Grid fold_workgroups(uint64_t count, uint32_t max_per_dimension) {
  const uint64_t max = max_per_dimension;
  if (max == 0 || count > max * max * max)
    throw GpuError(GpuErrorKind::TooLarge, "sizing a dispatch",
                   std::to_string(count) + " workgroups do not fit a grid of at most " + std::to_string(max) + " per dimension");
  const auto [x, y, z] = fold_workgroup_count(count, max);
  return {uint32_t(x), uint32_t(y), uint32_t(z)};
}

}  // namespace wgml::gpu
