#pragma once
// The host side of GPU storage (kernel/storage.h): the bytes a tensor uploads as, and the tensor a
// downloaded buffer holds, widening, packing and range-checking as its StorageType says.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kernel/storage.h"
#include "wgml/tensor.h"

namespace wgml::backend::webgpu {

using kernel::StorageType;
using kernel::ValueRange;

// The bytes to upload for `tensor` (gpu_buffer_bytes long). Throws wgml::Error(Runtime) naming
// `tensor_name`, the element index and its value when a narrowed element does not fit its
// storage or an element lies outside `range`.
std::vector<uint8_t> encode_for_gpu(const Tensor& tensor, const StorageType& storage, const std::string& tensor_name,
                                    const std::optional<ValueRange>& range = std::nullopt);
// The same into `bytes` (resized; a vector kept for every upload allocates only to grow).
void encode_for_gpu(const Tensor& tensor, const StorageType& storage, const std::string& tensor_name,
                    const std::optional<ValueRange>& range, std::vector<uint8_t>& bytes);

// The tensor a downloaded buffer holds (widened and narrowed elements converted back).
Tensor decode_from_gpu(std::span<const uint8_t> bytes, const StorageType& storage, const Shape& shape);

}  // namespace wgml::backend::webgpu
