#include "backend/webgpu/plan_runner.h"

#include <array>

#include "backend/webgpu/gpu_tensor.h"
#include "core/recycled.h"
#include "wgml/error.h"

namespace wgml::backend::webgpu {
namespace {

// More storage bindings than any device lets a shader have (WebGPU guarantees 8 per stage).
constexpr size_t kMaxBindings = 32;

[[noreturn]] void fail_plan(const kernel::KernelPlan& plan, const std::string& message) {
  throw Error(ErrorCode::Runtime, plan.op + " (" + plan.variant + "): " + message);
}

void place_outputs(const std::shared_ptr<GpuContext>& context, const kernel::KernelPlan& plan, GpuBuffers& buffers) {
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const kernel::PlanTensor& t = plan.tensors[i];
    if (!t.is_output && !t.is_scratch) continue;
    std::shared_ptr<gpu::PooledBuffer> buffer;
    if (t.alias_index >= 0) {
      const auto& input = buffers[static_cast<size_t>(t.alias_index)];
      if (!input) fail_plan(plan, "output '" + t.name + "' aliases input '" + t.alias_of + "', which was not placed");
      buffer = input->buffer();
    } else {
      buffer = new_buffer(*context, t.gpu_bytes, plan.op);
    }
    buffers[i] =
        make_recycled<GpuTensorData>(context, std::move(buffer), t.storage, t.shape, t.is_output ? t.value_range : std::nullopt);
  }
}

void record_pass(GpuContext& context, const kernel::PlanPass& pass, const gpu::Kernel& kernel, const GpuBuffers& buffers,
                 const std::vector<uint8_t>& params, const std::array<uint32_t, 3>& dispatch) {
  const gpu::Grid grid{dispatch[0], dispatch[1], dispatch[2]};
  if (grid.workgroups() == 0) return;
  std::array<gpu::BufferRange, kMaxBindings> ranges;
  size_t count = 0;
  for (const kernel::PlanBinding& b : pass.bindings)
    if (b.role != kernel::BindingRole::Params) ranges[count++] = buffers[static_cast<size_t>(b.tensor_index)]->binding();
  context.recorder().dispatch(kernel, std::span(ranges.data(), count),
                              std::span(reinterpret_cast<const std::byte*>(params.data()), params.size()), grid, pass.name);
}

// `t` converted on the GPU between the two bfloat16 storages where it lives there only in the
// other one (widened, one value a word, as kernels write it; packed, two a word, as the products
// and the quantized kernels read it): the alternative, on_gpu's read back and upload, would wait
// for the GPU in the middle of recording. Null where that does not apply. The copy stays with `t`
// for its later readers.
std::shared_ptr<const GpuTensorData> converted_on_gpu(const std::shared_ptr<GpuContext>& context, const Tensor& t,
                                                      const kernel::StorageType& storage) {
  using kernel::StorageKind;
  const bool to_packed = storage.kind == StorageKind::Packed;
  if (storage.logical != DType::BFloat16 || (!to_packed && storage.kind != StorageKind::Widened) ||
      TensorDeviceAccess::has_host_bytes(t))
    return nullptr;
  auto existing = std::dynamic_pointer_cast<const GpuTensorData>(TensorDeviceAccess::device_data(t));
  if (!existing || existing->context() != context.get() ||
      existing->storage().kind != (to_packed ? StorageKind::Widened : StorageKind::Packed))
    return nullptr;
  if (auto copy = existing->in_storage(storage)) return copy;
  const auto plan = context->own_plan(to_packed ? "PackBfloat16" : "WidenBfloat16", "x", DType::BFloat16, t.shape());
  if (!plan) return nullptr;
  const std::map<std::string, Tensor> converted = run_plan(context, *plan, {{"x", t}});
  auto data = std::dynamic_pointer_cast<const GpuTensorData>(TensorDeviceAccess::device_data(converted.at("out")));
  existing->keep_copy(data);
  return data;
}

}  // namespace

void keep_packed_only(const std::shared_ptr<GpuContext>& context, const Tensor& t) {
  static const kernel::StorageType packed = kernel::declared_storage(DType::BFloat16, "packed", "", "a folded constant");
  if (t.dtype() != DType::BFloat16) return;
  if (auto data = converted_on_gpu(context, t, packed)) TensorDeviceAccess::attach(t, data);
}

gpu::KernelSource kernel_source_of(const kernel::KernelPlan& plan, const kernel::PlanPass& pass) {
  gpu::KernelSource k;
  k.label = pass.name;
  k.wgsl = *pass.wgsl;
  k.entry_point = pass.entry_point;
  k.skip_runtime_checks = !pass.runtime_checks;
  for (size_t i = 0; i < pass.bindings.size(); ++i) {
    const kernel::PlanBinding& b = pass.bindings[i];
    if (b.index != i) fail_plan(plan, "pass '" + pass.id + "' binds out of order at " + b.name);
    if (b.role == kernel::BindingRole::Params) {
      if (i + 1 != pass.bindings.size()) fail_plan(plan, "pass '" + pass.id + "': params must be the last binding");
      k.params_size = static_cast<uint32_t>(pass.params.size());
      continue;
    }
    k.bindings.push_back(b.access == kernel::BindingAccess::Read ? gpu::Access::Read : gpu::Access::ReadWrite);
  }
  if (k.bindings.size() > kMaxBindings) fail_plan(plan, "pass '" + pass.id + "' has more storage bindings than any device");
  return k;
}

std::vector<const gpu::Kernel*> kernels_of(GpuContext& context, const kernel::KernelPlan& plan) {
  std::vector<const gpu::Kernel*> kernels;
  for (const kernel::PlanPass& pass : plan.passes) {
    const gpu::Kernel* found = context.find_kernel(pass);
    kernels.push_back(found ? found : &context.add_kernel(pass, kernel_source_of(plan, pass)));
  }
  return kernels;
}

std::shared_ptr<const GpuTensorData> place_input(const std::shared_ptr<GpuContext>& context, const kernel::KernelPlan& plan,
                                                 size_t index, const Tensor& t) {
  const kernel::PlanTensor& planned = plan.tensors[index];
  auto converted = planned.value_range ? nullptr : converted_on_gpu(context, t, planned.storage);
  return converted ? converted : on_gpu(context, t, planned.storage, planned.name, planned.value_range);
}

GpuBuffers place_inputs(const std::shared_ptr<GpuContext>& context, const kernel::KernelPlan& plan,
                        const std::map<std::string, Tensor>& inputs) {
  GpuBuffers buffers(plan.tensors.size());
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const kernel::PlanTensor& t = plan.tensors[i];
    if (t.is_output || t.is_scratch) continue;
    auto it = inputs.find(t.name);
    if (it == inputs.end()) fail_plan(plan, "input '" + t.name + "' was planned but not given");
    buffers[i] = place_input(context, plan, i, it->second);
  }
  return buffers;
}

void record_plan(const std::shared_ptr<GpuContext>& context, const kernel::KernelPlan& plan,
                 std::span<const gpu::Kernel* const> kernels, GpuBuffers& buffers, std::span<const std::vector<uint8_t>> params,
                 std::span<const std::array<uint32_t, 3>> dispatch) {
  place_outputs(context, plan, buffers);
  for (size_t p = 0; p < plan.passes.size(); ++p) {
    const kernel::PlanPass& pass = plan.passes[p];
    record_pass(*context, pass, *kernels[p], buffers, params.empty() ? pass.params : params[p],
                dispatch.empty() ? pass.dispatch : dispatch[p]);
  }
}

Tensor output_tensor(const kernel::KernelPlan& plan, const GpuBuffers& buffers, size_t index) {
  const kernel::PlanTensor& t = plan.tensors[index];
  return TensorDeviceAccess::on_device(t.dtype, t.shape, buffers[index]);
}

Tensor run_plan_of_one(const std::shared_ptr<GpuContext>& context, const kernel::KernelPlan& plan,
                       std::span<const gpu::Kernel* const> kernels, GpuBuffers& buffers, const Tensor& input) {
  buffers.assign(plan.tensors.size(), nullptr);
  size_t output = plan.tensors.size();
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const kernel::PlanTensor& t = plan.tensors[i];
    if (t.is_output) output = i;
    if (!t.is_output && !t.is_scratch) buffers[i] = place_input(context, plan, i, input);
  }
  if (output == plan.tensors.size()) fail_plan(plan, "a plan of one output has none");
  record_plan(context, plan, kernels, buffers);
  Tensor out = output_tensor(plan, buffers, output);
  buffers.assign(plan.tensors.size(), nullptr);
  return out;
}

std::map<std::string, Tensor> run_plan(const std::shared_ptr<GpuContext>& context, const kernel::KernelPlan& plan,
                                       GpuBuffers buffers) {
  const std::vector<const gpu::Kernel*> kernels = kernels_of(*context, plan);
  record_plan(context, plan, kernels, buffers);
  std::map<std::string, Tensor> outputs;
  for (size_t i = 0; i < plan.tensors.size(); ++i)
    if (plan.tensors[i].is_output) outputs[plan.tensors[i].name] = output_tensor(plan, buffers, i);
  return outputs;
}

std::map<std::string, Tensor> run_plan(const std::shared_ptr<GpuContext>& context, const kernel::KernelPlan& plan,
                                       const std::map<std::string, Tensor>& inputs) {
  return run_plan(context, plan, place_inputs(context, plan, inputs));
}

}  // namespace wgml::backend::webgpu
