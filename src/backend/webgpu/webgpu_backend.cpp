#include "backend/webgpu/webgpu_backend.h"

#include "backend/webgpu/plan_runner.h"
#include "core/device_data.h"
#include "ir/nodes.h"
#include "runtime/native_ops.h"
#include "wgml/error.h"

namespace wgml::backend::webgpu {

WebGpuBackend::WebGpuBackend(const GpuOptions& options)
    : gpu_(std::make_shared<GpuContext>(options)), small_values_on_host_(options.small_values_on_host) {
  table_ = cpu_.kernels();
  register_node_kernels(*gpu_, cpu_.kernels(), table_);
}

void WebGpuBackend::attach(runtime::ExecContext& ctx) const {
  ctx.set_backend_state(std::make_shared<WebGpuState>(WebGpuState{gpu_, &cpu_.kernels(), &placement_, small_values_on_host_}));
}

Tensor WebGpuBackend::greedy_token(const Tensor& logits) const {
  const auto plan = gpu_->own_plan("GreedyToken", "logits", logits.dtype(), logits.shape());
  if (!plan) throw Error(ErrorCode::Unsupported, "greedy_token: the kernels have no wgml.GreedyToken spec");
  if (greedy_.plan != plan) greedy_ = {plan, kernels_of(*gpu_, *plan), {}};
  const Tensor token = run_plan_of_one(gpu_, *plan, greedy_.kernels, greedy_.buffers, logits);
  TensorDeviceAccess::device_data(token)->start_download();
  return token;
}

void WebGpuBackend::end_run(runtime::ExecContext&) const {
  gpu_->recorder().submit();
  gpu_->pool().restart_sequence();
}

void WebGpuBackend::settle_folded(const Tensor& t) const { keep_packed_only(gpu_, t); }

void WebGpuBackend::end_load() const {
  gpu_->recorder().finish();
  gpu_->pool().trim();
}

runtime::DeviceMemory WebGpuBackend::device_memory() const {
  const gpu::BufferPool::Stats& s = gpu_->pool().stats();
  return {s.bytes_allocated, s.bytes_in_use, s.peak_bytes_allocated, s.peak_bytes_in_use, s.buffers_in_use};
}

runtime::ReadSide WebGpuBackend::read_side(const ir::Instruction& instruction) const {
  const ir::Node* node = ir::as_node(instruction);
  if (!node) {
    const auto& op = std::get<ir::OnnxOp>(instruction);
    const kernel::KernelSpec* spec = gpu_->engine().find(op.domain, op.op_type);
    if (!spec) return runtime::ReadSide::Host;
    return spec->view ? runtime::ReadSide::Unknown : runtime::ReadSide::Device;
  }
  const size_t id = node->index() + 1;
  if (runtime::is_native_op(id)) return runtime::ReadSide::Unknown;
  const std::string op(spec_op_name(ir::kNodeNames[id]));
  const kernel::KernelSpec* spec = gpu_->engine().find("mlx", op);
  if (spec) return spec->view ? runtime::ReadSide::Unknown : runtime::ReadSide::Device;
  if (composed_on_gpu(op)) return runtime::ReadSide::Device;
  return gpu_->decomposition("mlx", op) ? runtime::ReadSide::Device : runtime::ReadSide::Host;
}

void WebGpuBackend::reset_device_peaks() const { gpu_->pool().reset_peaks(); }

std::string_view spec_op_name(std::string_view node_name) {
  constexpr std::string_view suffix = "Node";
  if (node_name.size() > suffix.size() && node_name.substr(node_name.size() - suffix.size()) == suffix)
    node_name.remove_suffix(suffix.size());
  return node_name;
}

bool composed_on_gpu(std::string_view op) { return op == "UpdateAndAttend"; }

}  // namespace wgml::backend::webgpu
