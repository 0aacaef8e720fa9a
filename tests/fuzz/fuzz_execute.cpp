// libFuzzer target: arbitrary bytes as a model (.pte or .mlxg, told apart by their magic bytes as
// `wgml` does; an ONNX model otherwise), loaded as `wgml run` loads it and then run twice on the
// CPU reference with small inputs (fuzz_common.h), under a memory limit of kFuzzMemoryLimit. Any
// input must end in outputs or a wgml::Error; an allocation the limit does not cover shows up as
// libFuzzer's out-of-memory finding, work without end as a timeout.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/memory_budget.h"
#include "frontend/load_model.h"
#include "frontend/pte/pte_file.h"
#include "fuzz_common.h"
#include "ir/payload.h"
#include "runtime/executor.h"
#include "runtime/memory_limit.h"
#include "wgml/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace w = wgml;
  const w::MemoryBudget::Scope limited(std::make_shared<w::MemoryBudget>(w::fuzz::kFuzzMemoryLimit));
  try {
    const w::io::ByteView file = w::io::own_bytes(std::vector<uint8_t>(data, data + size));
    // The folder does not exist: constants or external data beside the model fail as I/O errors.
    const bool flatbuffer = w::ir::looks_like_payload(file) || w::frontend::looks_like_pte(file);
    auto model = std::make_shared<w::ir::Model>(
        w::frontend::load_model(flatbuffer ? "/nonexistent/fuzz.pte" : "/nonexistent/fuzz.onnx", file));
    w::runtime::check_declared_tensor_sizes(*model, w::fuzz::kFuzzMemoryLimit);
    const std::vector<w::Value> inputs = w::fuzz::small_inputs(*model);
    const w::backend::cpu::CpuBackend cpu;
    w::runtime::Executor executor(model, cpu);
    executor.run(inputs);
    executor.run(inputs);  // mutable buffers carry over, as in a decode loop
  } catch (const w::Error&) {
  }
  return 0;
}
