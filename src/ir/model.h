#pragma once
// A loaded model: the verified program, its constants bound to tensor slots, and where it came from.
// The frontend builds one from a file (frontend/load_model.h); the runtime executes it.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/named_data.h"
#include "ir/program.h"

namespace wgml::ir {

enum class ModelFormat { Pte, Payload, Onnx };

// One input of an ExecuTorch method. ExecuTorch keeps inputs the delegate never reads in the
// method's signature, so callers pass them; they are checked against their declaration and dropped.
struct MethodInput {
  std::optional<size_t> program_input;  // its index in Program::inputs; none when unused
  SlotType type = SlotType::Tensor;
  TensorMeta meta;  // an unused tensor input's declared dtype and sizes
};

struct Model {
  std::string path;
  ModelFormat format = ModelFormat::Pte;
  Program program;
  NamedData named_data;
  // Constant bytes by Tid (index < num_constant_tensors), sizes checked against tensor_meta except
  // for constants the init chain writes.
  std::vector<io::ByteView> constants;
  // The .pte method's inputs in its own order; empty when Program::inputs is the signature.
  std::vector<MethodInput> method_inputs;
  // Per .pte method output, its index in Program::outputs; empty when Program::outputs is the
  // signature.
  std::vector<size_t> method_outputs;
  // A .pte's constant methods (get_max_ctx_len, ...): methods without inputs returning one int.
  std::map<std::string, int64_t> constant_methods;
  // What a source format says about itself beyond the program (ONNX: producer, IR version,
  // opsets) and how many of each source op it had before lowering.
  std::map<std::string, std::string> source_info;
  std::map<std::string, size_t> source_op_histogram;
};

// Binds program constants to named data; `source` names the model in errors. Throws
// wgml::Error(InvalidProgram) on a missing name or a size that contradicts the metadata.
std::vector<io::ByteView> bind_constants(const Program& program, const NamedData& named, const std::string& source);

}  // namespace wgml::ir
