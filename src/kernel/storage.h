#pragma once
// How tensors live in GPU buffers (docs/kernels.md, "GPU storage types"). WGSL storage has only
// f32, f16, i32 and u32, so each logical dtype maps to one of those scalars, which is what a
// spec's `dtypes.X` reads:
//   float32 -> f32, int32 -> i32, uint32 -> u32, float16 -> f16 (usable where the device has
//   shader-f16; specs guard with f16Ok), int8/int16 -> i32 and uint8/bool -> u32 widened, one
//   element per 32-bit word, int64 -> i32 narrowed (each value range-checked on upload: int64
//   tensors of ML programs hold indices and positions).
// A spec input may declare another storage: "uint32"/"int32" with `narrowing: "checked"` (int64
// write indices: a range-checked conversion on upload), or "packed" (8- and 16-bit elements kept
// at their size, packed into u32 words that the template unpacks; 32-bit types stay native). The GPU backend converts
// (backend/webgpu/host_packing.h).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "wgml/tensor.h"

namespace wgml::kernel {

enum class StorageKind {
  Native,    // the tensor's own bytes
  Widened,   // one 8/16-bit integer or bool per 32-bit word
  Packed,    // 8/16-bit elements at their own size, in u32 words
  Narrowed,  // a wider integer (int64) in 32 bits, range-checked on upload
};
const char* storage_kind_name(StorageKind kind);

struct StorageType {
  DType logical = DType::Float32;
  StorageKind kind = StorageKind::Native;
  std::string scalar;  // WGSL: f32, f16, i32 or u32

  friend bool operator==(const StorageType&, const StorageType&) = default;
};

// The storage of `dtype` when the spec declares none; nullopt where there is none (float64 and
// bfloat16 need a declared storage).
std::optional<StorageType> default_storage(DType dtype);

// The storage a spec declares with `storage` ("uint32", "int32", "packed") and `narrowing`
// ("checked" or empty). Throws wgml::Error(Unsupported) naming `tensor` when the pair cannot hold
// `dtype` (e.g. packed int64, or a narrowing storage without narrowing: "checked").
StorageType declared_storage(DType dtype, const std::string& storage, const std::string& narrowing, const std::string& tensor);

// Bytes of the GPU buffer for `numel` elements: whole u32 words, at least one.
uint64_t gpu_buffer_bytes(const StorageType& storage, int64_t numel);

// An inclusive range every element must lie in (a spec's `valueRange`), checked on upload.
struct ValueRange {
  int64_t min = 0;
  int64_t max = 0;
};

}  // namespace wgml::kernel
