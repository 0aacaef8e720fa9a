#pragma once
// ONNX element types (TensorProto.DataType codes) <-> wgml dtypes, without protobuf: the CPU
// kernels of kept ONNX ops read these codes from attributes such as Cast's `to`.
#include <cstdint>
#include <optional>

#include "wgml/dtype.h"

namespace wgml::ir {

// None for element types wgml has no dtype for (strings, uint16/uint64, 8-, 4- and 2-bit types).
std::optional<DType> dtype_from_onnx(int32_t elem_type);
int32_t onnx_elem_type(DType t);

}  // namespace wgml::ir
