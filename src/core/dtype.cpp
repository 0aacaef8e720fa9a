#include "wgml/dtype.h"

#include <array>

namespace wgml {
namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  size_t size;
  int scalar_type;  // ExecuTorch ScalarType code; -1 where ExecuTorch's MLX runtime has none
};

constexpr std::array<DTypeInfo, 11> kInfo = {{
    {DType::UInt8, "uint8", 1, 0},
    {DType::Int8, "int8", 1, 1},
    {DType::Int16, "int16", 2, 2},
    {DType::Int32, "int32", 4, 3},
    {DType::Int64, "int64", 8, 4},
    {DType::Float16, "float16", 2, 5},
    {DType::BFloat16, "bfloat16", 2, 15},
    {DType::Float32, "float32", 4, 6},
    {DType::Float64, "float64", 8, -1},
    {DType::Bool, "bool", 1, 11},
    {DType::UInt32, "uint32", 4, 28},
}};

const DTypeInfo& info(DType t) { return kInfo[static_cast<size_t>(t)]; }

}  // namespace

size_t dtype_size(DType t) { return info(t).size; }
std::string_view dtype_name(DType t) { return info(t).name; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& i : kInfo)
    if (i.name == name) return i.type;
  return std::nullopt;
}

bool is_floating(DType t) { return t == DType::Float16 || t == DType::BFloat16 || t == DType::Float32 || t == DType::Float64; }

bool is_integral(DType t) { return !is_floating(t) && t != DType::Bool; }

bool is_signed_integral(DType t) { return t == DType::Int8 || t == DType::Int16 || t == DType::Int32 || t == DType::Int64; }

std::optional<DType> dtype_from_scalar_type(int code) {
  for (const auto& i : kInfo)
    if (i.scalar_type >= 0 && i.scalar_type == code) return i.type;
  return std::nullopt;
}

int scalar_type_of(DType t) { return info(t).scalar_type; }

}  // namespace wgml
