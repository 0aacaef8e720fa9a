#include "runtime/memory_limit.h"

#include <optional>

#include "core/memory_budget.h"
#include "runtime/constant_folding.h"
#include "runtime/exec_context.h"
#include "wgml/error.h"

namespace wgml::runtime {
namespace {

// Bytes of a static shape, or nullopt when the product overflows 64 bits.
std::optional<uint64_t> declared_bytes(const ir::TensorMeta& meta) {
  uint64_t bytes = dtype_size(meta.dtype);
  for (const ir::Dim& d : meta.shape)
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d.value), &bytes)) return std::nullopt;
  return bytes;
}

// "chain 0, instruction 3 (FullNode, from ONNX node 'x')" for the first instruction writing `t`.
std::string writer_of(const ir::Program& p, ir::Tid t) {
  for (size_t c = 0; c < p.chains.size(); ++c) {
    const ir::Chain& chain = p.chains[c];
    for (size_t i = 0; i < chain.instructions.size(); ++i) {
      for (ir::Tid written : tensors_written(chain.instructions[i])) {
        if (written.idx != t.idx) continue;
        std::string place = "written by chain " + std::to_string(c) + ", instruction " + std::to_string(i) + " (" +
                            ir::instruction_name(chain.instructions[i]);
        if (i < chain.origins.size() && !chain.origins[i].empty()) place += ", from " + chain.origins[i];
        return place + ")";
      }
    }
  }
  return "written by no instruction";
}

Shape shape_of(const ir::TensorMeta& meta) {
  Shape shape;
  for (const ir::Dim& d : meta.shape) shape.push_back(d.value);
  return shape;
}

}  // namespace

void check_declared_tensor_sizes(const ir::Model& model, uint64_t limit_bytes) {
  const ir::Program& p = model.program;
  // The executor holds a Tensor per tensor slot and a value per value slot whatever the program
  // uses (the payload caps each count at 2^24): a few hundred bytes of file can declare tables
  // of hundreds of megabytes, which count like a tensor.
  const uint64_t tables = p.num_tensors() * sizeof(Tensor) + uint64_t{p.num_values} * sizeof(ScalarValue);
  if (tables > limit_bytes)
    throw Error(ErrorCode::ResourceLimit, model.path + ": " + std::to_string(p.num_tensors()) + " tensor slots and " +
                                              std::to_string(p.num_values) + " value slots take " + describe_bytes(tables) +
                                              " of slot tables, above the memory limit of " + describe_bytes(limit_bytes) +
                                              " (SessionOptions::max_memory_bytes, --max-memory)");
  for (uint64_t t = p.num_constant_tensors; t < p.num_tensors(); ++t) {
    const ir::Tid tid{static_cast<uint32_t>(t)};
    const ir::TensorMeta* meta = p.meta(tid);
    if (!meta || !meta->is_static()) continue;
    const std::optional<uint64_t> bytes = declared_bytes(*meta);
    if (bytes && *bytes <= limit_bytes) continue;
    throw Error(ErrorCode::ResourceLimit, model.path + ": tensor " + std::to_string(t) + " (" + writer_of(p, tid) +
                                              ") is declared " + describe_tensor(meta->dtype, shape_of(*meta)) + ": " +
                                              (bytes ? describe_bytes(*bytes) : std::string("more than 2^64 bytes")) +
                                              ", above the memory limit of " + describe_bytes(limit_bytes) +
                                              " (SessionOptions::max_memory_bytes, --max-memory)");
  }
}

}  // namespace wgml::runtime
