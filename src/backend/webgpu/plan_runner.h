#pragma once
// Runs a kernel::KernelPlan on the GPU (the steps of spec/plan.h): inputs uploaded or found on the
// GPU, outputs in new buffers or, where the plan aliases them, in their input's buffer; each
// pass's pipeline from the cache and its dispatch appended to the context's recorder. Nothing is
// waited for: the outputs are device tensors, read back only when the host reads them.
#include <map>
#include <memory>
#include <string>

#include "backend/webgpu/gpu_context.h"
#include "kernel/plan.h"
#include "wgml/tensor.h"

namespace wgml::backend::webgpu {

class GpuTensorData;
using GpuBuffers = std::map<std::string, std::shared_ptr<const GpuTensorData>>;

// The pipeline interface of a pass (its WGSL, entry point, storage bindings in index order, then
// at most one params uniform, as gpu::Recorder binds them). Throws wgml::Error(Runtime) when the
// plan binds out of that order.
gpu::KernelSource kernel_source_of(const kernel::KernelPlan& plan, const kernel::PlanPass& pass);

// The plan's inputs in GPU memory, found there or uploaded (recorded, not yet run), by the spec's
// input names. Throws wgml::Error(Runtime) naming the input, element and value when one does not
// fit its storage (int64 narrowed to i32) or the spec's valueRange; nothing has been dispatched then.
GpuBuffers place_inputs(const std::shared_ptr<GpuContext>& context, const kernel::KernelPlan& plan,
                        const std::map<std::string, Tensor>& inputs);

// Records the plan's passes on placed inputs; returns the outputs by name.
std::map<std::string, Tensor> run_plan(const std::shared_ptr<GpuContext>& context, const kernel::KernelPlan& plan,
                                       GpuBuffers inputs);

// Both steps: `inputs` by the spec's input names (absent optional inputs left out).
std::map<std::string, Tensor> run_plan(const std::shared_ptr<GpuContext>& context, const kernel::KernelPlan& plan,
                                       const std::map<std::string, Tensor>& inputs);

}  // namespace wgml::backend::webgpu
