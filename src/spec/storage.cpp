#include "spec/storage.h"

#include <cstring>
#include <limits>

#include "core/elements.h"
#include "wgml/error.h"

namespace wgml::spec {

const char* storage_kind_name(StorageKind kind) {
  switch (kind) {
    case StorageKind::Native: return "native";
    case StorageKind::Widened: return "widened";
    case StorageKind::Packed: return "packed";
    case StorageKind::Narrowed: return "narrowed";
  }
  return "?";
}

std::optional<StorageType> default_storage(DType dtype) {
  switch (dtype) {
    case DType::Float32: return StorageType{dtype, StorageKind::Native, "f32"};
    case DType::Float16: return StorageType{dtype, StorageKind::Native, "f16"};
    case DType::Int32: return StorageType{dtype, StorageKind::Native, "i32"};
    case DType::UInt32: return StorageType{dtype, StorageKind::Native, "u32"};
    case DType::Int8:
    case DType::Int16: return StorageType{dtype, StorageKind::Widened, "i32"};
    case DType::UInt8:
    case DType::Bool: return StorageType{dtype, StorageKind::Widened, "u32"};
    // Indices and positions: every value must fit in int32, checked on upload.
    case DType::Int64: return StorageType{dtype, StorageKind::Narrowed, "i32"};
    default: return std::nullopt;
  }
}

StorageType declared_storage(DType dtype, const std::string& storage, const std::string& narrowing,
                             const std::string& tensor) {
  const std::string what = "'" + tensor + "' (" + std::string(dtype_name(dtype)) + ") with storage \"" + storage + "\"";
  if (storage == "packed") {
    if (dtype_size(dtype) > 2) throw Error(ErrorCode::Unsupported, what + ": only 8- and 16-bit types pack into u32 words");
    return {dtype, StorageKind::Packed, "u32"};
  }
  if (storage != "uint32" && storage != "int32")
    throw Error(ErrorCode::Unsupported, what + ": storage must be \"uint32\", \"int32\" or \"packed\"");
  if (!is_integral(dtype)) throw Error(ErrorCode::Unsupported, what + ": only integer tensors narrow to 32 bits");
  const std::string scalar = storage == "uint32" ? "u32" : "i32";
  if (default_storage(dtype) && default_storage(dtype)->scalar == scalar && narrowing.empty())
    return *default_storage(dtype);
  if (narrowing != "checked")
    throw Error(ErrorCode::Unsupported, what + ": a conversion that can lose values needs narrowing: \"checked\"");
  return {dtype, StorageKind::Narrowed, scalar};
}

uint64_t gpu_buffer_bytes(const StorageType& storage, int64_t numel) {
  const uint64_t element = storage.kind == StorageKind::Packed || storage.kind == StorageKind::Native
                               ? dtype_size(storage.logical)
                               : 4;
  const uint64_t bytes = element * static_cast<uint64_t>(numel);
  return bytes == 0 ? 4 : (bytes + 3) / 4 * 4;
}

namespace {

void check_element(int64_t value, int64_t index, int64_t lo, int64_t hi, const std::string& tensor,
                   const std::string& why) {
  if (value < lo || value > hi)
    throw Error(ErrorCode::Runtime, "input '" + tensor + "': element " + std::to_string(index) + " is " +
                                        std::to_string(value) + ", outside [" + std::to_string(lo) + ", " +
                                        std::to_string(hi) + "] (" + why + ")");
}

}  // namespace

std::vector<uint8_t> encode_for_gpu(const Tensor& tensor, const StorageType& storage,
                                    const std::string& tensor_name, const std::optional<ValueRange>& range) {
  if (tensor.dtype() != storage.logical)
    throw Error(ErrorCode::InvalidArgument, "input '" + tensor_name + "' is " + std::string(dtype_name(tensor.dtype())) +
                                                ", its storage expects " + std::string(dtype_name(storage.logical)));
  const int64_t n = tensor.numel();
  std::vector<uint8_t> bytes(gpu_buffer_bytes(storage, n), 0);
  const bool integral = is_integral(storage.logical) || storage.logical == DType::Bool;
  if (integral && (range || storage.kind == StorageKind::Narrowed)) {
    const bool to_u32 = storage.scalar == "u32";
    const int64_t lo = to_u32 ? 0 : std::numeric_limits<int32_t>::min();
    const int64_t hi = to_u32 ? int64_t{0xffffffff} : std::numeric_limits<int32_t>::max();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = load_as_int64(tensor.dtype(), tensor.data(), i);
      if (storage.kind == StorageKind::Narrowed)
        check_element(v, i, lo, hi, tensor_name, std::string(dtype_name(storage.logical)) + " stored as " + storage.scalar + ", narrowing: checked");
      if (range) check_element(v, i, range->min, range->max, tensor_name, "valueRange");
    }
  }
  if (storage.kind == StorageKind::Native || storage.kind == StorageKind::Packed) {
    if (n > 0) std::memcpy(bytes.data(), tensor.data(), tensor.nbytes());
    return bytes;
  }
  const DType word = storage.scalar == "u32" ? DType::UInt32 : DType::Int32;
  for (int64_t i = 0; i < n; ++i) store_int64(word, bytes.data(), i, load_as_int64(tensor.dtype(), tensor.data(), i));
  return bytes;
}

Tensor decode_from_gpu(const std::vector<uint8_t>& bytes, const StorageType& storage, const Shape& shape) {
  Tensor out(storage.logical, shape);
  const int64_t n = out.numel();
  if (bytes.size() < gpu_buffer_bytes(storage, n))
    throw Error(ErrorCode::Runtime, "downloaded " + std::to_string(bytes.size()) + " bytes, expected " +
                                        std::to_string(gpu_buffer_bytes(storage, n)));
  if (storage.kind == StorageKind::Native || storage.kind == StorageKind::Packed) {
    if (n > 0) std::memcpy(out.mutable_data(), bytes.data(), out.nbytes());
    return out;
  }
  const DType word = storage.scalar == "u32" ? DType::UInt32 : DType::Int32;
  for (int64_t i = 0; i < n; ++i) store_int64(storage.logical, out.mutable_data(), i, load_as_int64(word, bytes.data(), i));
  return out;
}

}  // namespace wgml::spec
