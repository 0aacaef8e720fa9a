#include "backend/webgpu/host_packing.h"

#include <cstring>
#include <limits>

#include "core/elements.h"
#include "core/half.h"
#include "wgml/error.h"

namespace wgml::backend::webgpu {

using kernel::gpu_buffer_bytes;
using kernel::StorageKind;

namespace {

// `why()` says which rule the element broke; it is made only then.
template <class Why>
void check_element(int64_t value, int64_t index, int64_t lo, int64_t hi, const std::string& tensor, const Why& why) {
  if (value < lo || value > hi)
    throw Error(ErrorCode::Runtime, "input '" + tensor + "': element " + std::to_string(index) + " is " + std::to_string(value) +
                                        ", outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "] (" + why() + ")");
}

// f32 words back to 16-bit floats (the logits row a decode step reads back): one conversion per
// element, no dispatch on the dtype per element. Returns false for other dtypes.
bool narrow_floats(const float* in, int64_t n, DType dtype, uint8_t* out) {
  auto* halves = reinterpret_cast<uint16_t*>(out);
  if (dtype == DType::BFloat16)
    for (int64_t i = 0; i < n; ++i) halves[i] = float_to_bf16(in[i]);
  else if (dtype == DType::Float16)
    for (int64_t i = 0; i < n; ++i) halves[i] = float_to_f16(in[i]);
  else
    return false;
  return true;
}

}  // namespace

std::vector<uint8_t> encode_for_gpu(const Tensor& tensor, const StorageType& storage, const std::string& tensor_name,
                                    const std::optional<ValueRange>& range) {
  std::vector<uint8_t> bytes;
  encode_for_gpu(tensor, storage, tensor_name, range, bytes);
  return bytes;
}

void encode_for_gpu(const Tensor& tensor, const StorageType& storage, const std::string& tensor_name,
                    const std::optional<ValueRange>& range, std::vector<uint8_t>& bytes) {
  if (tensor.dtype() != storage.logical)
    throw Error(ErrorCode::InvalidArgument, "input '" + tensor_name + "' is " + std::string(dtype_name(tensor.dtype())) +
                                                ", its storage expects " + std::string(dtype_name(storage.logical)));
  const int64_t n = tensor.numel();
  bytes.assign(gpu_buffer_bytes(storage, n), 0);
  const bool integral = is_integral(storage.logical) || storage.logical == DType::Bool;
  if (integral && (range || storage.kind == StorageKind::Narrowed)) {
    const bool to_u32 = storage.scalar == "u32";
    const int64_t lo = to_u32 ? 0 : std::numeric_limits<int32_t>::min();
    const int64_t hi = to_u32 ? int64_t{0xffffffff} : std::numeric_limits<int32_t>::max();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = load_as_int64(tensor.dtype(), tensor.data(), i);
      if (storage.kind == StorageKind::Narrowed)
        check_element(v, i, lo, hi, tensor_name, [&] {
          return std::string(dtype_name(storage.logical)) + " stored as " + storage.scalar + ", narrowing: checked";
        });
      if (range) check_element(v, i, range->min, range->max, tensor_name, [] { return std::string("valueRange"); });
    }
  }
  if (storage.kind == StorageKind::Native || storage.kind == StorageKind::Packed) {
    if (n > 0) std::memcpy(bytes.data(), tensor.data(), tensor.nbytes());
    return;
  }
  const uint8_t* in = tensor.data();
  if (storage.scalar == "f32") {
    to_floats(tensor, reinterpret_cast<float*>(bytes.data()));
    return;
  }
  const DType word = storage.scalar == "u32" ? DType::UInt32 : DType::Int32;
  for (int64_t i = 0; i < n; ++i) store_int64(word, bytes.data(), i, load_as_int64(tensor.dtype(), in, i));
}

Tensor decode_from_gpu(std::span<const uint8_t> bytes, const StorageType& storage, const Shape& shape) {
  Tensor out(storage.logical, shape);
  const int64_t n = out.numel();
  if (bytes.size() < gpu_buffer_bytes(storage, n))
    throw Error(ErrorCode::Runtime, "downloaded " + std::to_string(bytes.size()) + " bytes, expected " +
                                        std::to_string(gpu_buffer_bytes(storage, n)));
  if (storage.kind == StorageKind::Native || storage.kind == StorageKind::Packed) {
    if (n > 0) std::memcpy(out.mutable_data(), bytes.data(), out.nbytes());
    return out;
  }
  uint8_t* data = out.mutable_data();
  if (storage.scalar == "f32") {
    if (!narrow_floats(reinterpret_cast<const float*>(bytes.data()), n, storage.logical, data))
      for (int64_t i = 0; i < n; ++i) store_double(storage.logical, data, i, load_as_double(DType::Float32, bytes.data(), i));
    return out;
  }
  const DType word = storage.scalar == "u32" ? DType::UInt32 : DType::Int32;
  for (int64_t i = 0; i < n; ++i) store_int64(storage.logical, data, i, load_as_int64(word, bytes.data(), i));
  return out;
}

}  // namespace wgml::backend::webgpu
