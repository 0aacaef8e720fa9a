#pragma once
// A loaded model: the verified program, its constants bound to tensor slots, and where it came from.
#include <map>
#include <string>
#include <vector>

#include "frontend/named_data.h"
#include "ir/program.h"

namespace wgml::frontend {

enum class ModelFormat { Pte, Payload, Onnx };

struct LoadOptions {
  // Constants for a standalone payload; default: the payload's path with ".safetensors".
  std::string constants_path;
};

struct Model {
  std::string path;
  ModelFormat format = ModelFormat::Pte;
  ir::Program program;
  NamedData named_data;
  // Constant bytes by Tid (index < num_constant_tensors), sizes checked against tensor_meta except
  // for constants the init chain writes.
  std::vector<io::ByteView> constants;
  // What a source format says about itself beyond the program (ONNX: producer, IR version,
  // opsets) and how many of each source op it had before lowering.
  std::map<std::string, std::string> source_info;
  std::map<std::string, size_t> source_op_histogram;
};

// Detects the format from the file's bytes, verifies and validates everything. Throws wgml::Error.
Model load_model(const std::string& path, const LoadOptions& options = {});

// Binds program constants to named data; exposed for tests of the rules it enforces.
std::vector<io::ByteView> bind_constants(const ir::Program& program, const NamedData& named,
                                         const std::string& source);

}  // namespace wgml::frontend
