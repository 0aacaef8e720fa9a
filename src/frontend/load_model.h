#pragma once
// Reading a model file (.pte, MLX delegate payload, .onnx) into an ir::Model.
#include <string>

#include "ir/model.h"

namespace wgml::frontend {

struct LoadOptions {
  // Constants for a standalone payload; default: the payload's path with ".safetensors".
  std::string constants_path;
};

// Detects the format from the file's bytes, verifies and validates everything. Throws wgml::Error.
ir::Model load_model(const std::string& path, const LoadOptions& options = {});
// The same for a file's bytes already in memory; `path` names it in errors, and its extension and
// folder are used as for a file (.onnx; a payload's constants and external data beside it).
ir::Model load_model(const std::string& path, const io::ByteView& file, const LoadOptions& options = {});

}  // namespace wgml::frontend
