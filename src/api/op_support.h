#pragma once
// Which ops wgml runs, and where: what `wgml ops --json` prints and wgml.ops() returns in Python.
#include <nlohmann/json.hpp>

namespace wgml::api {

// {"backends": ["cpu", "webgpu"], "ops": [{"domain", "op", ["id",] "support": {"cpu": bool, "webgpu": how}}]}:
// every IR node (domain "mlx") and every ONNX op a backend keeps in its own domain. A node runs on
// the CPU when the CPU backend has a kernel for it or the executor runs it itself (control flow,
// value arithmetic, copies); on WebGPU with a GPU kernel when kernels/specs has its spec, as a
// sequence of GPU kernels when kernels/decompositions decomposes it, else through the CPU fallback.
nlohmann::json op_support();

}  // namespace wgml::api
