#include "frontend/load_model.h"

#include <filesystem>

#include "frontend/onnx/onnx_model.h"
#include "frontend/pte/pte_file.h"
#include "frontend/safetensors.h"
#include "ir/payload.h"
#include "wgml/error.h"

namespace wgml::frontend {
namespace {

ir::NamedData payload_constants(const std::string& path, const LoadOptions& options, const ir::Program& program) {
  std::string constants = options.constants_path;
  if (constants.empty()) {
    constants = std::filesystem::path(path).replace_extension(".safetensors").string();
    if (program.num_constant_tensors == 0 && !std::filesystem::exists(constants)) return {};
  }
  return read_safetensors(io::map_file(constants), constants);
}

// The method's inputs as the program's: used only when each program input is one method input,
// else (a method with other work around its delegate) the program's own inputs stay the signature.
std::vector<ir::MethodInput> method_inputs(const std::vector<PteMethodInput>& declared, const ir::Program& program) {
  std::vector<ir::MethodInput> out;
  std::vector<int> uses(program.inputs.size(), 0);
  for (const PteMethodInput& d : declared) {
    ir::MethodInput in{std::nullopt, d.type, d.meta};
    if (d.delegate_arg >= 0) {
      if (static_cast<size_t>(d.delegate_arg) >= program.inputs.size()) return {};
      in.program_input = static_cast<size_t>(d.delegate_arg);
      ++uses[*in.program_input];
    }
    out.push_back(std::move(in));
  }
  for (int n : uses)
    if (n != 1) return {};
  return out;
}

// The method's outputs as program outputs: used only when each is one the delegate returns.
std::vector<size_t> method_outputs(const std::vector<int64_t>& arguments, const ir::Program& program) {
  std::vector<size_t> out;
  const size_t first = program.inputs.size();
  for (int64_t argument : arguments) {
    if (argument < static_cast<int64_t>(first) || argument >= static_cast<int64_t>(first + program.outputs.size())) return {};
    out.push_back(static_cast<size_t>(argument) - first);
  }
  return out;
}

}  // namespace

ir::Model load_model(const std::string& path, const LoadOptions& options) {
  return load_model(path, io::map_file(path), options);
}

ir::Model load_model(const std::string& path, const io::ByteView& file, const LoadOptions& options) {
  ir::Model model;
  model.path = path;
  // Protobuf has no magic bytes: ONNX models are recognised by their extension.
  const bool onnx_file = onnx::has_onnx_extension(path);
  if (file.size == 0)
    throw Error(ErrorCode::InvalidFormat,
                path + ": the file is empty: expected " +
                    (onnx_file ? "an ONNX model (a ModelProto)" : "an ExecuTorch program or an MLX delegate payload"));
  if (onnx_file) return onnx::load_onnx_model(path, file);
  if (ir::looks_like_payload(file)) {
    model.format = ir::ModelFormat::Payload;
    model.program = ir::read_payload(file, path);
    model.named_data = payload_constants(path, options, model.program);
  } else if (looks_like_pte(file)) {
    model.format = ir::ModelFormat::Pte;
    PteContents pte = read_pte(file, path);
    model.program = ir::read_payload(pte.payload, pte.payload_name);
    model.named_data = std::move(pte.named_data);
    model.method_inputs = method_inputs(pte.method_inputs, model.program);
    model.method_outputs = method_outputs(pte.method_outputs, model.program);
    model.constant_methods = std::move(pte.constant_methods);
  } else {
    throw Error(ErrorCode::InvalidFormat, path +
                                              ": byte 0: expected an ExecuTorch program (\"ET..\" at byte 4), an MLX "
                                              "delegate payload (\"MLX0\" at byte 4) or an ONNX model (a .onnx file)");
  }
  model.constants = ir::bind_constants(model.program, model.named_data, path);
  return model;
}

}  // namespace wgml::frontend
