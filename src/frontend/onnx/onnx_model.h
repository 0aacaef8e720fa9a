#pragma once
// Loading ONNX models (.onnx) into an ir::Program, and reading ONNX TensorProto files (.pb), the
// format of the ONNX backend tests' inputs and outputs. No protobuf type leaks out of here.
#include <string>

#include "io/bytes.h"
#include "ir/model.h"
#include "wgml/tensor.h"

namespace wgml::frontend::onnx {

// The newest ai.onnx opset this frontend knows the op versions of.
constexpr int64_t kMaxOpset = 28;

bool has_onnx_extension(const std::string& path);

// Parses, lowers and validates; every unsupported (op, opset, dtype) is listed in one error.
// Throws wgml::Error naming the file, the node and its op type.
ir::Model load_onnx_model(const std::string& path, const io::ByteView& file);

// A serialized TensorProto (.pb). Throws wgml::Error.
Tensor read_tensor_file(const std::string& path);
// The same for a file's bytes; `path` names it in errors and its folder holds any external data.
Tensor parse_tensor_file(const io::ByteView& file, const std::string& path);

}  // namespace wgml::frontend::onnx
