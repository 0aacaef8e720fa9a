#pragma once
// wgml::Tensor: a dense, row-major tensor with shared, copy-on-write storage. Views of constant
// data (a mapped file) are read-only until written, when they are copied.
#include <cstdint>
#include <memory>
#include <variant>
#include <vector>

#include "wgml/dtype.h"
#include "wgml/shape.h"

namespace wgml {

class DeviceData;
struct TensorDeviceAccess;

int64_t shape_numel(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled tensor.
  Tensor(DType dtype, Shape shape);
  // Read-only view of external bytes kept alive by `owner`; the caller checked the size.
  static Tensor view(DType dtype, Shape shape, std::shared_ptr<const void> owner, const uint8_t* data);
  // A copy of `bytes` (nbytes of dtype x shape).
  static Tensor from_bytes(DType dtype, Shape shape, const void* bytes);

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_[static_cast<size_t>(i)]; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

  const uint8_t* data() const;
  // Detaches shared or read-only storage first, so writes never alias another tensor.
  uint8_t* mutable_data();
  template <class T>
  const T* data_as() const {
    return reinterpret_cast<const T*>(data());
  }
  template <class T>
  T* mutable_data_as() {
    return reinterpret_cast<T*>(mutable_data());
  }

  // Same bytes, new shape of equal element count (no copy).
  // Elements [first, first + count) of the flattened tensor as a 1-D tensor. Of a tensor whose
  // bytes are still on a device (a GPU run's output), only those elements are read back: the last
  // row of a [1, T, vocab] logits output costs one row's transfer.
  Tensor flat_range(int64_t first, int64_t count) const;
  Tensor reshaped(Shape shape) const;

 private:
  friend struct TensorDeviceAccess;
  struct Storage;
  DType dtype_ = DType::Float32;
  Shape shape_;
  std::shared_ptr<Storage> storage_;
};

// What a program input or output slot holds: a tensor or an int/float/bool value.
using Value = std::variant<Tensor, int64_t, double, bool>;

}  // namespace wgml
