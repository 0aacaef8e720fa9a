#pragma once
// NumPy .npy files (format versions 1-3, little-endian, C order).
#include <optional>
#include <string>

#include "io/bytes.h"
#include "wgml/tensor.h"

namespace wgml::io {

// NumPy has no bfloat16: a "<u2" file is read as bfloat16 when `expected` says so, and bfloat16
// tensors are written as "<u2" holding the raw bits.
Tensor read_npy(const std::string& path, std::optional<DType> expected = std::nullopt);
// The same for a file's bytes; `path` names it in errors.
Tensor parse_npy(const ByteView& file, const std::string& path, std::optional<DType> expected = std::nullopt);
void write_npy(const std::string& path, const Tensor& tensor);

}  // namespace wgml::io
