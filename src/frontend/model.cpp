#include "frontend/model.h"

#include <filesystem>

#include "frontend/onnx/onnx_model.h"
#include "frontend/pte/pte_file.h"
#include "frontend/safetensors.h"
#include "ir/payload.h"
#include "ir/validate.h"
#include "wgml/error.h"

namespace wgml::frontend {
namespace {

NamedData payload_constants(const std::string& path, const LoadOptions& options,
                            const ir::Program& program) {
  std::string constants = options.constants_path;
  if (constants.empty()) {
    constants = std::filesystem::path(path).replace_extension(".safetensors").string();
    if (program.num_constant_tensors == 0 && !std::filesystem::exists(constants)) return {};
  }
  return read_safetensors(io::map_file(constants), constants);
}

}  // namespace

std::vector<io::ByteView> bind_constants(const ir::Program& program, const NamedData& named,
                                         const std::string& source) {
  const std::vector<bool> from_init = ir::constants_written_by_init(program);
  std::vector<io::ByteView> out(program.num_constant_tensors);
  for (uint32_t tid = 0; tid < program.num_constant_tensors; ++tid) {
    const ir::NamedSlot* slot = program.named_slot_of_tensor(tid);
    const std::string where = source + ": constant tensor " + std::to_string(tid);
    auto it = named.find(slot->name);
    if (it == named.end())
      throw Error(ErrorCode::InvalidProgram,
                  where + ": expected named data '" + slot->name + "', found none");
    const ir::TensorMeta& meta = *program.meta(ir::Tid{tid});
    const auto numel = meta.static_numel();
    if (!numel)
      throw Error(ErrorCode::InvalidProgram, where + ": its static shape overflows 64 bits");
    const uint64_t expected = *numel * dtype_size(meta.dtype);
    if (!from_init[tid] && it->second.size != expected)
      throw Error(ErrorCode::InvalidProgram,
                  where + " ('" + slot->name + "'): expected " + std::to_string(expected) +
                      " bytes for its " + std::string(dtype_name(meta.dtype)) +
                      " metadata, found " + std::to_string(it->second.size));
    out[tid] = it->second;
  }
  return out;
}

Model load_model(const std::string& path, const LoadOptions& options) {
  Model model;
  model.path = path;
  const io::ByteView file = io::map_file(path);
  if (file.size == 0) throw Error(ErrorCode::InvalidFormat, path + ": byte 0: expected an ExecuTorch program or an MLX delegate payload, found an empty file");
  // Protobuf has no magic bytes: ONNX models are recognised by their extension.
  if (onnx::has_onnx_extension(path)) return onnx::load_onnx_model(path, file);
  if (ir::looks_like_payload(file)) {
    model.format = ModelFormat::Payload;
    model.program = ir::read_payload(file, path);
    model.named_data = payload_constants(path, options, model.program);
  } else if (looks_like_pte(file)) {
    model.format = ModelFormat::Pte;
    PteContents pte = read_pte(file, path);
    model.program = ir::read_payload(pte.payload, pte.payload_name);
    model.named_data = std::move(pte.named_data);
  } else {
    throw Error(ErrorCode::InvalidFormat,
                path + ": byte 0: expected an ExecuTorch program (\"ET..\" at byte 4), an MLX "
                       "delegate payload (\"MLX0\" at byte 4) or an ONNX model (a .onnx file)");
  }
  model.constants = bind_constants(model.program, model.named_data, path);
  return model;
}

}  // namespace wgml::frontend
