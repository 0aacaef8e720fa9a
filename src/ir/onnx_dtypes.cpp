#include "ir/onnx_dtypes.h"

#include <array>
#include <utility>

namespace wgml::ir {
namespace {

// onnx-ml.proto, TensorProto.DataType.
constexpr std::array<std::pair<int32_t, DType>, 11> kTypes = {{
    {1, DType::Float32},
    {2, DType::UInt8},
    {3, DType::Int8},
    {5, DType::Int16},
    {6, DType::Int32},
    {7, DType::Int64},
    {9, DType::Bool},
    {10, DType::Float16},
    {11, DType::Float64},
    {12, DType::UInt32},
    {16, DType::BFloat16},
}};

}  // namespace

std::optional<DType> dtype_from_onnx(int32_t elem_type) {
  for (const auto& [code, dtype] : kTypes)
    if (code == elem_type) return dtype;
  return std::nullopt;
}

int32_t onnx_elem_type(DType t) {
  for (const auto& [code, dtype] : kTypes)
    if (dtype == t) return code;
  return 0;
}

}  // namespace wgml::ir
