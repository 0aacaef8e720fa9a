#include "gpu/pipeline_cache.h"

#include <cstring>

#include "gpu/gpu_error.h"
#include "gpu/webgpu_strings.h"

namespace wgml::gpu {
namespace {

class Fnv1a {
 public:
  void bytes(const void* data, size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) hash_ = (hash_ ^ p[i]) * 0x100000001b3ull;
  }
  // Strings end with a separator so that ("ab", "c") and ("a", "bc") differ.
  void text(const std::string& s) { bytes(s.c_str(), s.size() + 1); }
  template <class T>
  void value(const T& v) {
    bytes(&v, sizeof v);
  }
  uint64_t result() const { return hash_; }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ull;
};

std::vector<WGPUBindGroupLayoutEntry> layout_entries(const KernelSource& spec) {
  std::vector<WGPUBindGroupLayoutEntry> entries(spec.bindings.size() + (spec.params_size ? 1 : 0));
  for (size_t i = 0; i < entries.size(); ++i) {
    entries[i].binding = uint32_t(i);
    entries[i].visibility = WGPUShaderStage_Compute;
    if (i < spec.bindings.size()) {
      entries[i].buffer.type =
          spec.bindings[i] == Access::Read ? WGPUBufferBindingType_ReadOnlyStorage : WGPUBufferBindingType_Storage;
    } else {
      entries[i].buffer.type = WGPUBufferBindingType_Uniform;
      entries[i].buffer.hasDynamicOffset = 1;
      entries[i].buffer.minBindingSize = spec.params_size;
    }
  }
  return entries;
}

}  // namespace

bool KernelSource::same_code(const KernelSource& other) const {
  return wgsl == other.wgsl && entry_point == other.entry_point && overrides == other.overrides && bindings == other.bindings &&
         params_size == other.params_size && skip_runtime_checks == other.skip_runtime_checks;
}

uint64_t kernel_hash(const KernelSource& spec) {
  Fnv1a h;
  h.text(spec.wgsl);
  h.text(spec.entry_point);
  for (const auto& [name, value] : spec.overrides) {
    h.text(name);
    h.value(value);
  }
  h.value(spec.bindings.size());
  for (Access a : spec.bindings) h.value(a);
  h.value(spec.params_size);
  h.value(spec.skip_runtime_checks);
  return h.result();
}

PipelineCache::~PipelineCache() {
  for (auto& [hash, kernels] : kernels_)
    for (auto& kernel : kernels) release(*kernel);
}

const Kernel& PipelineCache::get(const KernelSource& spec) {
  const uint64_t hash = kernel_hash(spec);
  std::vector<std::unique_ptr<Kernel>>& same_hash = kernels_[hash];
  for (const auto& kernel : same_hash)
    if (kernel->spec.same_code(spec)) return *kernel;
  same_hash.push_back(compile(spec, hash));
  ++count_;
  return *same_hash.back();
}

std::unique_ptr<Kernel> PipelineCache::compile(const KernelSource& spec, uint64_t hash) {
  const api::Functions& fn = device_.fn();
  const WGPUDevice device = device_.handle();
  auto kernel = std::make_unique<Kernel>();
  kernel->spec = spec;
  kernel->hash = hash;
  Device::ErrorScope scope(device_, "compiling kernel '" + spec.label + "'");

  WGPUShaderSourceWGSL source{};
  source.chain.sType = WGPUSType_ShaderSourceWGSL;
  source.code = view(spec.wgsl);
  WGPUShaderModuleDescriptor module_desc{};
  module_desc.nextInChain = &source.chain;
  module_desc.label = view(spec.label);
  WGPUShaderModule module = spec.skip_runtime_checks
                                ? fn.DeviceCreateShaderModuleTrusted(device, &module_desc, WGPUShaderRuntimeChecks_None)
                                : fn.DeviceCreateShaderModule(device, &module_desc);

  const std::vector<WGPUBindGroupLayoutEntry> entries = layout_entries(spec);
  WGPUBindGroupLayoutDescriptor layout_desc{};
  layout_desc.label = view(spec.label);
  layout_desc.entryCount = entries.size();
  layout_desc.entries = entries.data();
  kernel->bind_group_layout = fn.DeviceCreateBindGroupLayout(device, &layout_desc);

  WGPUPipelineLayoutDescriptor pipeline_layout_desc{};
  pipeline_layout_desc.label = view(spec.label);
  pipeline_layout_desc.bindGroupLayoutCount = 1;
  pipeline_layout_desc.bindGroupLayouts = &kernel->bind_group_layout;
  kernel->pipeline_layout = fn.DeviceCreatePipelineLayout(device, &pipeline_layout_desc);

  std::vector<WGPUConstantEntry> constants;
  for (const auto& [name, value] : spec.overrides) constants.push_back({nullptr, view(name), value});
  WGPUComputePipelineDescriptor pipeline_desc{};
  pipeline_desc.label = view(spec.label);
  pipeline_desc.layout = kernel->pipeline_layout;
  pipeline_desc.compute.module = module;
  pipeline_desc.compute.entryPoint = view(spec.entry_point);
  pipeline_desc.compute.constantCount = constants.size();
  pipeline_desc.compute.constants = constants.data();
  kernel->pipeline = fn.DeviceCreateComputePipeline(device, &pipeline_desc);
  if (module) fn.ShaderModuleRelease(module);

  try {
    scope.close();
  } catch (...) {
    release(*kernel);
    throw;
  }
  ++compiles_;
  return kernel;
}

void PipelineCache::release(Kernel& kernel) {
  const api::Functions& fn = device_.fn();
  if (kernel.pipeline) fn.ComputePipelineRelease(kernel.pipeline);
  if (kernel.pipeline_layout) fn.PipelineLayoutRelease(kernel.pipeline_layout);
  if (kernel.bind_group_layout) fn.BindGroupLayoutRelease(kernel.bind_group_layout);
  kernel = Kernel{};
}

}  // namespace wgml::gpu
