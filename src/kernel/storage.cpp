#include "kernel/storage.h"

#include <cstring>
#include <limits>

#include "core/elements.h"
#include "wgml/error.h"

namespace wgml::kernel {

const char* storage_kind_name(StorageKind kind) {
  switch (kind) {
    case StorageKind::Native:
      return "native";
    case StorageKind::Widened:
      return "widened";
    case StorageKind::Packed:
      return "packed";
    case StorageKind::Narrowed:
      return "narrowed";
  }
  return "?";
}

std::optional<StorageType> default_storage(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return StorageType{dtype, StorageKind::Native, "f32"};
    case DType::Float16:
      return StorageType{dtype, StorageKind::Native, "f16"};
    // Exactly representable in f32; kernels round what they store to bfloat16 (bf16Outputs).
    case DType::BFloat16:
      return StorageType{dtype, StorageKind::Widened, "f32"};
    case DType::Int32:
      return StorageType{dtype, StorageKind::Native, "i32"};
    case DType::UInt32:
      return StorageType{dtype, StorageKind::Native, "u32"};
    case DType::Int8:
    case DType::Int16:
      return StorageType{dtype, StorageKind::Widened, "i32"};
    case DType::UInt8:
    case DType::Bool:
      return StorageType{dtype, StorageKind::Widened, "u32"};
    // Indices and positions: every value must fit in int32, checked on upload.
    case DType::Int64:
      return StorageType{dtype, StorageKind::Narrowed, "i32"};
    default:
      return std::nullopt;
  }
}

StorageType declared_storage(DType dtype, const std::string& storage, const std::string& narrowing, const std::string& tensor) {
  const std::string what = "'" + tensor + "' (" + std::string(dtype_name(dtype)) + ") with storage \"" + storage + "\"";
  // Matmul weights: bfloat16 read as stored (half the bytes of widened f32), other dtypes as usual.
  if (storage == "packedBfloat16") {
    if (dtype == DType::BFloat16) return {dtype, StorageKind::Packed, "u32"};
    if (const auto native = default_storage(dtype)) return *native;
    throw Error(ErrorCode::Unsupported, what + ": " + std::string(dtype_name(dtype)) + " has no GPU storage");
  }
  if (storage == "packed") {
    // A 32-bit element is its own word: packed is its native storage (a quantized kernel's scales
    // are packed bfloat16 or float16 pairs, or plain float32).
    if (dtype_size(dtype) == 4 && default_storage(dtype)) return *default_storage(dtype);
    if (dtype_size(dtype) > 2) throw Error(ErrorCode::Unsupported, what + ": only 8-, 16- and 32-bit types pack into u32 words");
    return {dtype, StorageKind::Packed, "u32"};
  }
  if (storage != "uint32" && storage != "int32")
    throw Error(ErrorCode::Unsupported, what + ": storage must be \"uint32\", \"int32\", \"packed\" or \"packedBfloat16\"");
  if (!is_integral(dtype)) throw Error(ErrorCode::Unsupported, what + ": only integer tensors narrow to 32 bits");
  const std::string scalar = storage == "uint32" ? "u32" : "i32";
  if (default_storage(dtype) && default_storage(dtype)->scalar == scalar && narrowing.empty()) return *default_storage(dtype);
  if (narrowing != "checked")
    throw Error(ErrorCode::Unsupported, what + ": a conversion that can lose values needs narrowing: \"checked\"");
  return {dtype, StorageKind::Narrowed, scalar};
}

uint64_t gpu_buffer_bytes(const StorageType& storage, int64_t numel) {
  const uint64_t element =
      storage.kind == StorageKind::Packed || storage.kind == StorageKind::Native ? dtype_size(storage.logical) : 4;
  const uint64_t bytes = element * static_cast<uint64_t>(numel);
  return bytes == 0 ? 4 : (bytes + 3) / 4 * 4;
}

}  // namespace wgml::kernel
