#include "api/op_support.h"

#include "backend/cpu/cpu_backend.h"
#include "backend/webgpu/gpu_context.h"
#include "backend/webgpu/webgpu_backend.h"
#include "kernel/decomposition.h"
#include "kernel/engine.h"
#include "runtime/executor.h"

namespace wgml::api {

nlohmann::json op_support() {
  const backend::cpu::CpuBackend cpu;
  const std::string kernels = backend::webgpu::default_kernels_dir();
  kernel::Engine engine(kernels + "/wgsl");
  engine.load_directory(kernels + "/specs");
  const auto decompositions = kernel::load_decomposition_directory(kernels + "/decompositions");
  nlohmann::json ops = nlohmann::json::array();
  for (size_t id = 1; id < ir::kNodeNames.size(); ++id) {
    const bool native = runtime::Executor::handles_natively(id);
    const bool on_cpu = cpu.kernels().find(id) || native;
    const std::string op(backend::webgpu::spec_op_name(ir::kNodeNames[id]));
    const kernel::KernelSpec* spec = engine.find("mlx", op);
    const char* webgpu = spec && spec->view                  ? "view"
                         : spec                              ? "kernel"
                         : native                            ? "executor"
                         : decompositions.count({"mlx", op}) ? "decomposed"
                         : on_cpu                            ? "cpu fallback"
                                                             : "no";
    ops.push_back(
        {{"domain", "mlx"}, {"op", ir::kNodeNames[id]}, {"id", id}, {"support", {{"cpu", on_cpu}, {"webgpu", webgpu}}}});
  }
  for (const auto& [key, kernel] : cpu.kernels().onnx_kernels()) {
    const char* webgpu = engine.find(key.first, key.second) ? "kernel" : "cpu fallback";
    ops.push_back({{"domain", key.first}, {"op", key.second}, {"support", {{"cpu", true}, {"webgpu", webgpu}}}});
  }
  return {{"backends", {"cpu", "webgpu"}}, {"ops", ops}};
}

}  // namespace wgml::api
