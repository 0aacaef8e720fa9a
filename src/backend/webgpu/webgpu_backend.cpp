#include "backend/webgpu/webgpu_backend.h"

namespace wgml::backend::webgpu {

WebGpuBackend::WebGpuBackend(const GpuOptions& options)
    : gpu_(std::make_shared<GpuContext>(options)), small_values_on_host_(options.small_values_on_host) {
  table_ = cpu_.kernels();
  register_node_kernels(*gpu_, cpu_.kernels(), table_);
}

void WebGpuBackend::attach(runtime::ExecContext& ctx) const {
  ctx.set_backend_state(std::make_shared<WebGpuState>(WebGpuState{gpu_, &cpu_.kernels(), &placement_, small_values_on_host_}));
}

void WebGpuBackend::end_run(runtime::ExecContext&) const { gpu_->recorder().submit(); }

std::string_view spec_op_name(std::string_view node_name) {
  constexpr std::string_view suffix = "Node";
  if (node_name.size() > suffix.size() && node_name.substr(node_name.size() - suffix.size()) == suffix)
    node_name.remove_suffix(suffix.size());
  return node_name;
}

}  // namespace wgml::backend::webgpu
