#pragma once
// Compute pipelines compiled once per device and found again by a hash of what determines the
// compiled code: the WGSL source, the entry point, the override constants and the bindings.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpu/device.h"

namespace wgml::gpu {

// How a kernel accesses the storage buffer at one binding.
enum class Access { Read, ReadWrite };

// A compute kernel's source and binding interface. Storage buffers are @group(0) @binding(0..n-1)
// in the order of `bindings`; when params_size > 0 a uniform struct of that many bytes follows
// at @binding(n), fed from the recorder's uniform ring (a dynamic offset, no buffer per dispatch).
struct KernelSource {
  std::string label;  // names the kernel in errors
  std::string wgsl;
  std::string entry_point = "main";
  std::vector<std::pair<std::string, double>> overrides;  // `override` constants by name
  std::vector<Access> bindings;
  uint32_t params_size = 0;
  // Compile without the checks wgpu-native injects (every array index clamped into the binding,
  // every loop bounded). Only for kernels whose own guards keep every index and loop in range.
  bool skip_runtime_checks = false;

  bool same_code(const KernelSource& other) const;  // equal in everything but the label
};

// 64-bit FNV-1a over everything same_code() compares.
uint64_t kernel_hash(const KernelSource& spec);

// A compiled kernel. Owned by the PipelineCache; valid as long as it is.
struct Kernel {
  KernelSource spec;
  uint64_t hash = 0;
  WGPUComputePipeline pipeline = nullptr;
  WGPUBindGroupLayout bind_group_layout = nullptr;
  WGPUPipelineLayout pipeline_layout = nullptr;
};

// Host time spent compiling the pipelines of one kernel label.
struct CompileTime {
  uint64_t compiles = 0;
  double ms = 0;
};

class PipelineCache {
 public:
  explicit PipelineCache(Device& device);
  ~PipelineCache();
  PipelineCache(const PipelineCache&) = delete;
  PipelineCache& operator=(const PipelineCache&) = delete;

  // The compiled kernel, compiling it on first use. Invalid WGSL or bindings that do not match
  // the shader throw GpuError(Validation) with the implementation's message.
  const Kernel& get(const KernelSource& spec);

  size_t size() const { return count_; }
  uint64_t compiles() const { return compiles_; }
  // Host time of every compile so far, in total and by kernel label. On a driver that compiles
  // at the first dispatch (warms_up_driver()) it includes that compile.
  double compile_ms() const { return compile_ms_; }
  const std::map<std::string, CompileTime>& compile_times() const { return compile_times_; }
  // Whether each new pipeline is dispatched once, over no workgroups, right after its creation:
  // done on CPU adapters, whose driver (Mesa's llvmpipe) compiles a compute shader to machine code
  // at its first dispatch rather than at pipeline creation (docs/performance.md measures it), so
  // that the compile is timed here and not inside the kernel's first GPU time.
  bool warms_up_driver() const { return warm_up_driver_; }

 private:
  std::unique_ptr<Kernel> compile(const KernelSource& spec, uint64_t hash);
  void create_pipeline(Kernel& kernel);
  void warm_up(const Kernel& kernel);
  void release(Kernel& kernel);

  Device& device_;
  bool warm_up_driver_ = false;
  double compile_ms_ = 0;
  std::map<std::string, CompileTime> compile_times_;
  std::unordered_map<uint64_t, std::vector<std::unique_ptr<Kernel>>> kernels_;
  size_t count_ = 0;
  uint64_t compiles_ = 0;
};

}  // namespace wgml::gpu
