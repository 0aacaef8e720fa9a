#pragma once
// ExecuTorch .pte container: a Program FlatBuffer (identifier "ET12"), an optional extended header
// ("eh00") right after the identifier, and data segments after the FlatBuffer. wgml reads the
// MLXBackend delegate's processed bytes and the program's named data; see docs/pte-format.md.
#include <map>
#include <string>
#include <vector>

#include "io/bytes.h"
#include "ir/named_data.h"
#include "ir/program.h"

namespace wgml::frontend {

inline constexpr const char* kMlxBackendId = "MLXBackend";

// One input of the method that holds the MLX delegate, as ExecutionPlan.inputs declares it.
struct PteMethodInput {
  // Its position among the DelegateCall's arguments (the delegate's inputs come first), or -1
  // when the delegate never reads it.
  int64_t delegate_arg = -1;
  ir::SlotType type = ir::SlotType::Tensor;
  ir::TensorMeta meta;  // tensors: the declared dtype and sizes (upper bounds when dynamic)
};

struct PteContents {
  io::ByteView payload;      // the MLXBackend delegate's processed data (an MLX0 payload)
  std::string payload_name;  // "<path>: plan 'forward', delegate 0 (MLXBackend)"
  ir::NamedData named_data;
  // The method's inputs in its own order; empty when the method has no DelegateCall to the MLX
  // delegate that the reader can follow.
  std::vector<PteMethodInput> method_inputs;
  // Per method output, its position among the DelegateCall's arguments (-1: made outside the
  // delegate); empty like method_inputs.
  std::vector<int64_t> method_outputs;
  // The program's constant methods, by name: methods without inputs that return one int
  // (ExecuTorch's LLM export writes get_max_ctx_len, get_prefill_chunk_size, ...).
  std::map<std::string, int64_t> constant_methods;
};

bool looks_like_pte(const io::ByteView& file);

// Verifies the container and extracts the MLX delegate and named data. Throws wgml::Error.
PteContents read_pte(const io::ByteView& file, const std::string& path);

}  // namespace wgml::frontend
