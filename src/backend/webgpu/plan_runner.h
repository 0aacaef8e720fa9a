#pragma once
// Runs a kernel::KernelPlan on the GPU (the steps of spec/plan.h): inputs uploaded or found on the
// GPU, outputs in new buffers or, where the plan aliases them, in their input's buffer; each
// pass's pipeline from the cache and its dispatch appended to the context's recorder. Nothing is
// waited for: the outputs are device tensors, read back only when the host reads them.
#include <array>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/webgpu/gpu_context.h"
#include "kernel/plan.h"
#include "wgml/tensor.h"

namespace wgml::backend::webgpu {

class GpuTensorData;
// The GPU memory of a plan's tensors, by their index in KernelPlan::tensors.
using GpuBuffers = std::vector<std::shared_ptr<const GpuTensorData>>;

// The pipeline interface of a pass (its WGSL, entry point, storage bindings in index order, then
// at most one params uniform, as gpu::Recorder binds them). Throws wgml::Error(Runtime) when the
// plan binds out of that order.
gpu::KernelSource kernel_source_of(const kernel::KernelPlan& plan, const kernel::PlanPass& pass);

// The compiled pipeline of each of the plan's passes, compiled now where the context has none.
std::vector<const gpu::Kernel*> kernels_of(GpuContext& context, const kernel::KernelPlan& plan);

// Plan tensor `index` (an input) in GPU memory: `t` found there or uploaded (recorded, not yet
// run). Throws wgml::Error(Runtime) naming the input, element and value when it does not fit its
// storage (int64 narrowed to i32) or the spec's valueRange; nothing has been dispatched then.
std::shared_ptr<const GpuTensorData> place_input(const std::shared_ptr<GpuContext>& context, const kernel::KernelPlan& plan,
                                                 size_t index, const Tensor& t);

// The plan's inputs in GPU memory by the spec's input names (absent optional inputs left out).
GpuBuffers place_inputs(const std::shared_ptr<GpuContext>& context, const kernel::KernelPlan& plan,
                        const std::map<std::string, Tensor>& inputs);

// Gives the plan's outputs and scratch their buffers in `buffers` (whose inputs are placed) and
// records the passes with `kernels` (kernels_of the plan), and with `params` and `dispatch` per
// pass in place of the plan's where given (a bound call's, kernel/dynamic_plan.h).
void record_plan(const std::shared_ptr<GpuContext>& context, const kernel::KernelPlan& plan,
                 std::span<const gpu::Kernel* const> kernels, GpuBuffers& buffers,
                 std::span<const std::vector<uint8_t>> params = {}, std::span<const std::array<uint32_t, 3>> dispatch = {});

// Output `index` of a recorded plan as a device tensor.
Tensor output_tensor(const kernel::KernelPlan& plan, const GpuBuffers& buffers, size_t index);

// A plan of one input and one output (a GpuContext::own_plan) recorded on `input` with `kernels`
// (kernels_of the plan) and `buffers` the caller keeps: a call that repeats makes no vector or map.
Tensor run_plan_of_one(const std::shared_ptr<GpuContext>& context, const kernel::KernelPlan& plan,
                       std::span<const gpu::Kernel* const> kernels, GpuBuffers& buffers, const Tensor& input);

// `t` (bfloat16, only on the GPU, written widened: one value a word) repacked two values to a word
// and kept as its only device copy, the widened buffer let go; no-op for any other tensor. For
// constants folded at load (a weight's transpose), whose GPU readers (the matrix products) read
// them packed; a kernel that reads one widened gets a copy widened on the GPU (WidenBfloat16),
// kept beside it from then on.
void keep_packed_only(const std::shared_ptr<GpuContext>& context, const Tensor& t);

// Records the plan's passes on placed inputs; returns the outputs by name.
std::map<std::string, Tensor> run_plan(const std::shared_ptr<GpuContext>& context, const kernel::KernelPlan& plan,
                                       GpuBuffers inputs);

// Both steps: `inputs` by the spec's input names (absent optional inputs left out).
std::map<std::string, Tensor> run_plan(const std::shared_ptr<GpuContext>& context, const kernel::KernelPlan& plan,
                                       const std::map<std::string, Tensor>& inputs);

}  // namespace wgml::backend::webgpu
