#pragma once
// Dispatch sizes. WebGPU limits each dimension of a dispatch to maxComputeWorkgroupsPerDimension
// (65535 everywhere wgml runs), so a 1-D count above it is folded into a 2-D or 3-D grid with at
// least as many workgroups. The kernel recovers its linear index with wgml_linear_workgroup_id
// (kLinearWorkgroupIdWgsl) and returns early when that index is past the real count.
#include <cstdint>
#include <string_view>

namespace wgml::gpu {

struct Grid {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t workgroups() const { return uint64_t(x) * y * z; }
  bool operator==(const Grid&) const = default;
};

// A grid that holds `count` workgroups with every dimension at most `max_per_dimension`: exactly
// {count, 1, 1} when that fits; otherwise y (then z) as small as possible and x the shortest row
// that holds the count, so fewer than y * z workgroups are extra. Throws GpuError(TooLarge) for a count above
// max_per_dimension^3 or a zero limit; a count of 0 gives an empty grid {0, 1, 1}.
Grid fold_workgroups(uint64_t count, uint32_t max_per_dimension);

// WGSL for kernels dispatched with a folded grid: pass the workgroup_id and num_workgroups
// builtins, get the linear workgroup index.
inline constexpr std::string_view kLinearWorkgroupIdWgsl = R"(
fn wgml_linear_workgroup_id(workgroup_id : vec3<u32>, num_workgroups : vec3<u32>) -> u32 {
  return workgroup_id.x + num_workgroups.x * (workgroup_id.y + num_workgroups.y * workgroup_id.z);
}
)";

}  // namespace wgml::gpu
