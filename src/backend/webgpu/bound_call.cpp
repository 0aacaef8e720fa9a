#include "backend/webgpu/bound_call.h"

#include <algorithm>

#include "backend/webgpu/gpu_tensor.h"
#include "core/device_data.h"
#include "kernel/dynamic_plan.h"
#include "wgml/error.h"

namespace wgml::backend::webgpu {

size_t call_signature(const runtime::ExecContext& ctx, const CallOperands& ops, std::vector<int64_t>& out) {
  out.clear();
  for (const ir::Tid& t : ops.inputs) {
    const Tensor& x = ctx.tensor(t);
    out.push_back(static_cast<int64_t>(x.dtype()));
    out.push_back(x.rank());
    out.insert(out.end(), x.shape().begin(), x.shape().end());
  }
  const size_t values_begin = out.size();
  out.insert(out.end(), ops.values.begin(), ops.values.end());
  for (const ir::Tid& in : ops.inputs)
    for (const ir::Tid& o : ops.outputs)
      if (in.idx == o.idx) out.push_back(TensorDeviceAccess::storage_users(ctx.tensor(in)) == 1);
  return values_begin;
}

bool BoundCalls::follow_values(BoundCall& call, const CallOperands& ops, uint32_t max_workgroups_per_dimension) {
  const kernel::DynamicPlan* dynamic = call.plan->dynamic.get();
  const size_t values_end = call.values_begin + ops.values.size();
  if (!dynamic || call.signature.size() != signature_.size() || values_end > signature_.size() ||
      !std::equal(signature_.begin(), signature_.begin() + static_cast<std::ptrdiff_t>(call.values_begin),
                  call.signature.begin()) ||
      !std::equal(signature_.begin() + static_cast<std::ptrdiff_t>(values_end), signature_.end(),
                  call.signature.begin() + static_cast<std::ptrdiff_t>(values_end)))
    return false;
  for (size_t k = 0; k < ops.values.size(); ++k) {
    const int attribute = call.value_attribute[k];
    if (attribute < 0 && ops.values[k] != call.signature[call.values_begin + k]) return false;
    if (attribute >= 0) call.dynamic_values[static_cast<size_t>(attribute)] = ops.values[k];
  }
  if (!dynamic->apply(call.dynamic_values, max_workgroups_per_dimension, call.params, call.dispatch)) return false;
  std::copy(signature_.begin(), signature_.end(), call.signature.begin());
  return true;
}

bool BoundCalls::launch(runtime::ExecContext& ctx, const std::shared_ptr<GpuContext>& gpu, const void* instruction,
                        const CallOperands& ops) {
  values_begin_ = call_signature(ctx, ops, signature_);
  const auto found = calls_.find(instruction);
  if (found == calls_.end()) return false;
  BoundCall& call = found->second;
  if (call.signature != signature_ && !follow_values(call, ops, gpu->caps().max_workgroups_per_dimension)) return false;
  const kernel::KernelPlan& plan = *call.plan;
  call.buffers.assign(plan.tensors.size(), nullptr);
  try {
    for (size_t i = 0; i < plan.tensors.size(); ++i)
      if (!plan.tensors[i].is_output && !plan.tensors[i].is_scratch)
        call.buffers[i] = place_input(gpu, plan, i, ctx.tensor(ops.inputs[static_cast<size_t>(call.operand[i])]));
  } catch (const Error& e) {
    // An input outside its storage's range: the unbound path decides (the CPU may take it).
    if (e.code() != ErrorCode::Runtime) throw;
    call.buffers.clear();
    return false;
  }
  record_plan(gpu, plan, call.kernels, call.buffers, call.params, call.dispatch);
  for (size_t i = 0; i < plan.tensors.size(); ++i)
    if (plan.tensors[i].is_output)
      ctx.set_tensor(ops.outputs[static_cast<size_t>(call.operand[i])], output_tensor(plan, call.buffers, i));
  call.buffers.assign(plan.tensors.size(), nullptr);
  ++*call.calls;
  return true;
}

}  // namespace wgml::backend::webgpu
