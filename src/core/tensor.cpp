#include "wgml/tensor.h"

#include <cstring>

#include "wgml/error.h"

namespace wgml {

struct Tensor::Storage {
  std::shared_ptr<const void> owner;
  uint8_t* data = nullptr;
  size_t size = 0;
  bool writable = false;
};

namespace {
constexpr int64_t kMaxTensorBytes = int64_t{1} << 40;
}  // namespace

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error(ErrorCode::Runtime, "negative dimension in tensor shape");
    if (d != 0 && n > kMaxTensorBytes / d)
      throw Error(ErrorCode::Runtime, "tensor shape too large");
    n *= d;
  }
  return n;
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  const size_t size = nbytes();
  auto bytes = std::shared_ptr<uint8_t[]>(new uint8_t[size == 0 ? 1 : size]());
  storage_ = std::make_shared<Storage>(Storage{bytes, bytes.get(), size, true});
}

Tensor Tensor::view(DType dtype, Shape shape, std::shared_ptr<const void> owner,
                    const uint8_t* data) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.storage_ = std::make_shared<Storage>(
      Storage{std::move(owner), const_cast<uint8_t*>(data), t.nbytes(), false});
  return t;
}

Tensor Tensor::from_bytes(DType dtype, Shape shape, const void* bytes) {
  Tensor t(dtype, std::move(shape));
  if (t.nbytes()) std::memcpy(t.storage_->data, bytes, t.nbytes());
  return t;
}

const uint8_t* Tensor::data() const { return storage_ ? storage_->data : nullptr; }

uint8_t* Tensor::mutable_data() {
  if (!storage_) return nullptr;
  if (!storage_->writable || storage_.use_count() > 1) *this = from_bytes(dtype_, shape_, data());
  return storage_->data;
}

Tensor Tensor::reshaped(Shape shape) const {
  if (shape_numel(shape) != numel())
    throw Error(ErrorCode::Runtime, "reshape changes the element count");
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

}  // namespace wgml
