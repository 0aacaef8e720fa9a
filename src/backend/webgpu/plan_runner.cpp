#include "backend/webgpu/plan_runner.h"

#include "backend/webgpu/gpu_tensor.h"
#include "wgml/error.h"

namespace wgml::backend::webgpu {
namespace {

using Buffers = GpuBuffers;

[[noreturn]] void fail_plan(const kernel::KernelPlan& plan, const std::string& message) {
  throw Error(ErrorCode::Runtime, plan.op + " (" + plan.variant + "): " + message);
}

std::map<std::string, Tensor> place_outputs(const std::shared_ptr<GpuContext>& context, const kernel::KernelPlan& plan,
                                            Buffers& buffers) {
  std::map<std::string, Tensor> outputs;
  for (const kernel::PlanTensor& t : plan.tensors) {
    if (!t.is_output && !t.is_scratch) continue;
    std::shared_ptr<gpu::PooledBuffer> buffer;
    if (!t.alias_of.empty()) {
      if (!buffers.count(t.alias_of)) fail_plan(plan, "output '" + t.name + "' aliases unknown input '" + t.alias_of + "'");
      buffer = buffers.at(t.alias_of)->buffer();
    } else {
      buffer = new_buffer(*context, t.gpu_bytes, plan.op);
    }
    auto data = std::make_shared<const GpuTensorData>(context, std::move(buffer), t.storage, t.shape);
    buffers[t.name] = data;
    if (t.is_output) outputs[t.name] = TensorDeviceAccess::on_device(t.dtype, t.shape, data);
  }
  return outputs;
}

void record_pass(GpuContext& context, const kernel::KernelPlan& plan, const kernel::PlanPass& pass, const Buffers& buffers) {
  const gpu::Kernel* found = context.find_kernel(pass);
  const gpu::Kernel& kernel = found ? *found : context.add_kernel(pass, kernel_source_of(plan, pass));
  std::vector<gpu::BufferRange> ranges;
  for (const kernel::PlanBinding& b : pass.bindings)
    if (b.role != kernel::BindingRole::Params) ranges.push_back(buffers.at(b.tensor)->binding());
  const gpu::Grid grid{pass.dispatch[0], pass.dispatch[1], pass.dispatch[2]};
  if (grid.workgroups() == 0) return;
  context.recorder().dispatch(
      kernel, ranges, std::span(reinterpret_cast<const std::byte*>(pass.params.data()), pass.params.size()), grid, pass.name);
}

// `t` repacked on the GPU when it lives there only as widened bfloat16 and `storage` packs it: the
// alternative, on_gpu's read back and upload, would wait for the GPU in the middle of recording.
// Null where that does not apply. The packed copy stays with `t` for its later readers.
std::shared_ptr<const GpuTensorData> repacked_on_gpu(const std::shared_ptr<GpuContext>& context, const Tensor& t,
                                                     const kernel::StorageType& storage) {
  if (storage.logical != DType::BFloat16 || storage.kind != kernel::StorageKind::Packed || TensorDeviceAccess::has_host_bytes(t))
    return nullptr;
  auto existing = std::dynamic_pointer_cast<const GpuTensorData>(TensorDeviceAccess::device_data(t));
  if (!existing || existing->context() != context.get() || existing->storage().kind != kernel::StorageKind::Widened)
    return nullptr;
  if (auto copy = existing->in_storage(storage)) return copy;
  const kernel::KernelSpec* spec = context->engine().find("wgml", "PackBfloat16");
  if (!spec) return nullptr;
  kernel::KernelRequest request;
  request.inputs["x"] = kernel::TensorDesc{t.dtype(), t.shape()};
  const std::map<std::string, Tensor> packed = run_plan(context, context->plan(*spec, request), {{"x", t}});
  auto data = std::dynamic_pointer_cast<const GpuTensorData>(TensorDeviceAccess::device_data(packed.at("out")));
  existing->keep_copy(data);
  return data;
}

}  // namespace

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
  return k;
}

GpuBuffers place_inputs(const std::shared_ptr<GpuContext>& context, const kernel::KernelPlan& plan,
                        const std::map<std::string, Tensor>& inputs) {
  Buffers buffers;
  for (const kernel::PlanTensor& t : plan.tensors) {
    if (t.is_output || t.is_scratch) continue;
    auto it = inputs.find(t.name);
    if (it == inputs.end()) fail_plan(plan, "input '" + t.name + "' was planned but not given");
    auto repacked = t.value_range ? nullptr : repacked_on_gpu(context, it->second, t.storage);
    buffers[t.name] = repacked ? repacked : on_gpu(context, it->second, t.storage, t.name, t.value_range);
  }
  return buffers;
}

std::map<std::string, Tensor> run_plan(const std::shared_ptr<GpuContext>& context, const kernel::KernelPlan& plan,
                                       GpuBuffers buffers) {
  std::map<std::string, Tensor> outputs = place_outputs(context, plan, buffers);
  for (const kernel::PlanPass& pass : plan.passes) record_pass(*context, plan, pass, buffers);
  return outputs;
}

std::map<std::string, Tensor> run_plan(const std::shared_ptr<GpuContext>& context, const kernel::KernelPlan& plan,
                                       const std::map<std::string, Tensor>& inputs) {
  return run_plan(context, plan, place_inputs(context, plan, inputs));
}

}  // namespace wgml::backend::webgpu
