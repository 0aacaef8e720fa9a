#pragma once
// Element types wgml tensors can hold, and their mapping to ExecuTorch's ScalarType codes.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace wgml {

enum class DType : uint8_t {
  UInt8,
  Int8,
  Int16,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64,
  Bool,
  UInt32,
};

size_t dtype_size(DType t);
std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);
bool is_floating(DType t);
bool is_integral(DType t);  // bool excluded
bool is_signed_integral(DType t);

// ExecuTorch ScalarType (runtime/core/portable_type/scalar_type.h) <-> DType, for the ten
// types the MLX delegate runtime accepts. Anything else yields nullopt.
std::optional<DType> dtype_from_scalar_type(int code);
int scalar_type_of(DType t);

}  // namespace wgml
