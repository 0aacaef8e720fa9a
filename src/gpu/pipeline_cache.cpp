#include "gpu/pipeline_cache.h"

#include <chrono>
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

// Storage bytes behind each binding of a warm-up dispatch: above the fixed part of any struct a
// kernel binds (validation compares them), small enough to cost nothing.
constexpr uint64_t kWarmUpStorageBytes = 4096;

// Buffers made for one warm-up, released however it ends (the implementation keeps them alive
// until the GPU is done with them).
struct ScratchBuffers {
  const api::Functions& fn;
  std::vector<WGPUBuffer> buffers;
  ~ScratchBuffers() {
    for (WGPUBuffer b : buffers) fn.BufferRelease(b);
  }
};

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

PipelineCache::PipelineCache(Device& device) : device_(device), warm_up_driver_(device.adapter().kind == AdapterKind::Cpu) {}

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
  // The warm-up waits for the queue, which runs work in order: earlier work is waited for first,
  // so that the time measured is the compile's.
  if (warm_up_driver_) device_.drain();
  const auto start = std::chrono::steady_clock::now();
  auto kernel = std::make_unique<Kernel>();
  kernel->spec = spec;
  kernel->hash = hash;
  create_pipeline(*kernel);
  if (warm_up_driver_) warm_up(*kernel);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ++compiles_;
  compile_ms_ += ms;
  CompileTime& time = compile_times_[spec.label];
  ++time.compiles;
  time.ms += ms;
  return kernel;
}

void PipelineCache::create_pipeline(Kernel& kernel) {
  const api::Functions& fn = device_.fn();
  const WGPUDevice device = device_.handle();
  const KernelSource& spec = kernel.spec;
  const std::string what = "compiling kernel '" + spec.label + "'";
  Device::ErrorScope scope(device_, what);

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
  kernel.bind_group_layout = fn.DeviceCreateBindGroupLayout(device, &layout_desc);

  WGPUPipelineLayoutDescriptor pipeline_layout_desc{};
  pipeline_layout_desc.label = view(spec.label);
  pipeline_layout_desc.bindGroupLayoutCount = 1;
  pipeline_layout_desc.bindGroupLayouts = &kernel.bind_group_layout;
  kernel.pipeline_layout = fn.DeviceCreatePipelineLayout(device, &pipeline_layout_desc);

  std::vector<WGPUConstantEntry> constants;
  for (const auto& [name, value] : spec.overrides) constants.push_back({nullptr, view(name), value});
  WGPUComputePipelineDescriptor pipeline_desc{};
  pipeline_desc.label = view(spec.label);
  pipeline_desc.layout = kernel.pipeline_layout;
  pipeline_desc.compute.module = module;
  pipeline_desc.compute.entryPoint = view(spec.entry_point);
  pipeline_desc.compute.constantCount = constants.size();
  pipeline_desc.compute.constants = constants.data();
  kernel.pipeline = fn.DeviceCreateComputePipeline(device, &pipeline_desc);
  if (module) fn.ShaderModuleRelease(module);

  try {
    scope.close();
  } catch (...) {
    release(kernel);
    throw;
  }
}

// A dispatch of no workgroups through `kernel`, waited for: llvmpipe generates a compute shader's
// machine code when a dispatch first runs it, whatever the grid, and nothing runs on the
// scratch buffers. Submitted outside the device's serials, since the recorder may hold commands
// not yet submitted that work_fence() counts as the next serial. A warm-up that fails costs only
// its purpose (the compile then lands in the kernel's first dispatch), so its errors are dropped;
// the commands are checked before submitting, since wgpu-native aborts on invalid ones.
void PipelineCache::warm_up(const Kernel& kernel) {
  const api::Functions& fn = device_.fn();
  const KernelSource& spec = kernel.spec;
  const std::string op = "warming up kernel '" + spec.label + "'";
  ScratchBuffers scratch{fn, {}};
  try {
    for (size_t i = 0; i < spec.bindings.size(); ++i)
      scratch.buffers.push_back(device_.create_buffer(kWarmUpStorageBytes, WGPUBufferUsage_Storage, "wgml warm-up", op));
    const uint64_t params_bytes = (uint64_t(spec.params_size) + 15) / 16 * 16;
    if (spec.params_size)
      scratch.buffers.push_back(device_.create_buffer(params_bytes, WGPUBufferUsage_Uniform, "wgml warm-up", op));
    std::vector<WGPUBindGroupEntry> entries;
    for (size_t i = 0; i < scratch.buffers.size(); ++i)
      entries.push_back({nullptr, uint32_t(i), scratch.buffers[i], 0, WGPU_WHOLE_SIZE, nullptr, nullptr});

    Device::ErrorScope scope(device_, op);
    WGPUBindGroupDescriptor group_desc{};
    group_desc.layout = kernel.bind_group_layout;
    group_desc.entryCount = entries.size();
    group_desc.entries = entries.data();
    WGPUBindGroup group = fn.DeviceCreateBindGroup(device_.handle(), &group_desc);
    WGPUCommandEncoder encoder = fn.DeviceCreateCommandEncoder(device_.handle(), nullptr);
    WGPUComputePassEncoder pass = fn.CommandEncoderBeginComputePass(encoder, nullptr);
    const uint32_t params_offset = 0;
    fn.ComputePassEncoderSetPipeline(pass, kernel.pipeline);
    fn.ComputePassEncoderSetBindGroup(pass, 0, group, spec.params_size ? 1 : 0, &params_offset);
    fn.ComputePassEncoderDispatchWorkgroups(pass, 0, 0, 0);
    fn.ComputePassEncoderEnd(pass);
    fn.ComputePassEncoderRelease(pass);
    WGPUCommandBuffer commands = fn.CommandEncoderFinish(encoder, nullptr);
    fn.CommandEncoderRelease(encoder);
    if (group) fn.BindGroupRelease(group);
    try {
      scope.close();
    } catch (...) {
      if (commands) fn.CommandBufferRelease(commands);
      throw;
    }
    const WGPUSubmissionIndex index = fn.QueueSubmitForIndex(device_.queue(), 1, &commands);
    fn.CommandBufferRelease(commands);
    fn.DevicePoll(device_.handle(), 1, &index);
  } catch (const GpuError&) {
  }
}

void PipelineCache::release(Kernel& kernel) {
  const api::Functions& fn = device_.fn();
  if (kernel.pipeline) fn.ComputePipelineRelease(kernel.pipeline);
  if (kernel.pipeline_layout) fn.PipelineLayoutRelease(kernel.pipeline_layout);
  if (kernel.bind_group_layout) fn.BindGroupLayoutRelease(kernel.bind_group_layout);
  kernel = Kernel{};
}

}  // namespace wgml::gpu
