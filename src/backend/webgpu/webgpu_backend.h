#pragma once
// The WebGPU backend. A node runs on the GPU when kernels/specs/mlx/<Op>.json exists and plans
// for its operands (dtypes in typeConstraints, the spec's `when`); otherwise the CPU reference
// kernel runs it, reading device tensors back as it needs them. Nodes whose spec says "view"
// (Reshape, Squeeze, ExpandDims, Contiguous) need no kernel: their CPU kernels only relabel the
// shape of the same buffer.
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "backend/webgpu/bound_call.h"
#include "backend/webgpu/gpu_context.h"
#include "runtime/backend.h"

namespace wgml::backend::webgpu {

// Where each op ran, for profiles and tests: kernels on the GPU, fallbacks with their reason.
struct Placement {
  std::map<std::string, uint64_t> on_gpu;
  std::map<std::string, uint64_t> views;    // shape changes of a GPU buffer: nothing runs
  std::map<std::string, uint64_t> on_host;  // small host-held values computed where they are
  std::map<std::string, double> host_ms;    // wall time of those
  std::map<std::string, uint64_t> on_cpu;
  std::map<std::string, double> cpu_ms;                // wall time of the fallbacks, reads of GPU results included
  std::map<std::string, std::string> fallback_reason;  // the last one per op
};

// What kernels find in ExecContext::backend_state.
struct WebGpuState {
  std::shared_ptr<GpuContext> gpu;
  const runtime::KernelTable* cpu = nullptr;
  Placement* placement = nullptr;
  bool small_values_on_host = true;  // GpuOptions::small_values_on_host
  std::shared_ptr<BoundCalls> bound = std::make_shared<BoundCalls>();
};

class WebGpuBackend final : public runtime::Backend {
 public:
  explicit WebGpuBackend(const GpuOptions& options = {});
  std::string_view name() const override { return "webgpu"; }
  const runtime::KernelTable& kernels() const override { return table_; }
  void attach(runtime::ExecContext& ctx) const override;
  void end_run(runtime::ExecContext& ctx) const override;
  // A folded bfloat16 result a kernel wrote widened (a weight's transpose: twice its packed bytes)
  // is kept packed only (keep_packed_only).
  void settle_folded(const Tensor& t) const override;
  // Waits for the load's GPU work and destroys the pool's free buffers: the constants' uploads and
  // widened transposes that folding made and let go.
  void end_load() const override;
  runtime::DeviceMemory device_memory() const override;
  // Device for ops with a GPU kernel or decomposition, host for those the CPU runs, unknown for
  // views and what the executor runs itself.
  runtime::ReadSide read_side(const ir::Instruction& instruction) const override;
  void reset_device_peaks() const override;

  const std::shared_ptr<GpuContext>& context() const { return gpu_; }
  // Greedy decoding's pick from the last row of `logits` (wgml.GreedyToken) as an int64 [1, 1]
  // tensor that stays on the GPU, its read back recorded behind it: fed to the next run as token
  // ids it is used where it lies, and reading it waits only for the work recorded before it.
  Tensor greedy_token(const Tensor& logits) const;
  const Placement& placement() const { return placement_; }

 private:
  std::shared_ptr<GpuContext> gpu_;
  bool small_values_on_host_;
  cpu::CpuBackend cpu_;
  runtime::KernelTable table_;
  mutable Placement placement_;
  // GreedyToken's plan as last run, with its kernels and buffers (kept: a pick every token).
  struct KeptPlan {
    std::shared_ptr<const kernel::KernelPlan> plan;
    std::vector<const gpu::Kernel*> kernels;
    GpuBuffers buffers;
  };
  mutable KeptPlan greedy_;
};

// Registers the GPU path for every node type with a spec or a decomposition in `gpu`, the CPU
// kernel for the rest. Throws wgml::Error(InvalidFormat) where a spec or decomposition does not
// fit the node's fields.
void register_node_kernels(const GpuContext& gpu, const runtime::KernelTable& cpu, runtime::KernelTable& table);

// "AddNode" -> "Add": the spec name of a node type.
std::string_view spec_op_name(std::string_view node_name);

// Whether the backend runs node type `op` (a spec name) on the GPU by C++ of its own that runs
// other ops' specs: UpdateAndAttend, whose KV cache is state no spec can hold.
bool composed_on_gpu(std::string_view op);

}  // namespace wgml::backend::webgpu
