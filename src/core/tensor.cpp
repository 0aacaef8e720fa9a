#include "wgml/tensor.h"

#include <cstring>

#include "core/device_data.h"
#include "core/host_memory.h"
#include "core/memory_budget.h"
#include "core/recycled.h"
#include "wgml/error.h"

namespace wgml {

struct Tensor::Storage {
  std::shared_ptr<const void> owner;
  uint8_t* data = nullptr;
  size_t size = 0;
  bool writable = false;
  // A device's copy of the same bytes; when `data` is null, the only copy (read on first access).
  std::shared_ptr<const DeviceData> device;
  MemoryCharge charge;           // the bytes allocated with the storage (host or device)
  MemoryCharge download_charge;  // the host copy of a device tensor, once read
};

namespace {
constexpr int64_t kMaxTensorBytes = int64_t{1} << 40;
}  // namespace

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t d = shape[i];
    if (d < 0)
      throw Error(ErrorCode::Runtime,
                  "tensor shape " + describe_shape(shape) + ": dimension " + std::to_string(i) + " is negative");
    if (d != 0 && n > kMaxTensorBytes / d)
      throw Error(ErrorCode::ResourceLimit, "tensor shape " + describe_shape(shape) + " has more than 2^40 elements");
    n *= d;
  }
  return n;
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  const size_t size = nbytes();
  MemoryCharge charge(size, dtype_, shape_);  // refuses before allocating
  auto bytes = allocate_tensor_bytes(size);
  storage_ = make_recycled<Storage>(Storage{bytes, bytes.get(), size, true, nullptr, std::move(charge), {}});
}

Tensor Tensor::view(DType dtype, Shape shape, std::shared_ptr<const void> owner, const uint8_t* data) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.storage_ = make_recycled<Storage>(Storage{std::move(owner), const_cast<uint8_t*>(data), t.nbytes(), false, nullptr, {}, {}});
  return t;
}

Tensor Tensor::from_bytes(DType dtype, Shape shape, const void* bytes) {
  Tensor t(dtype, std::move(shape));
  if (t.nbytes()) std::memcpy(t.storage_->data, bytes, t.nbytes());
  return t;
}

const uint8_t* Tensor::data() const {
  if (!storage_) return nullptr;
  Storage& s = *storage_;
  if (!s.data && s.device) {
    s.download_charge = MemoryCharge(s.size, dtype_, shape_);
    auto bytes = allocate_tensor_bytes(s.size);
    s.device->download(bytes.get(), s.size);
    s.owner = bytes;
    s.data = bytes.get();
    s.writable = true;
  }
  return s.data;
}

uint8_t* Tensor::mutable_data() {
  if (!storage_) return nullptr;
  data();
  if (!storage_->writable || storage_.use_count() > 1) *this = from_bytes(dtype_, shape_, data());
  storage_->device.reset();  // the host bytes are about to change
  return storage_->data;
}

Tensor TensorDeviceAccess::on_device(DType dtype, Shape shape, std::shared_ptr<const DeviceData> device) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  MemoryCharge charge(t.nbytes(), t.dtype_, t.shape_);
  t.storage_ = make_recycled<Tensor::Storage>(
      Tensor::Storage{nullptr, nullptr, t.nbytes(), false, std::move(device), std::move(charge), {}});
  return t;
}

std::shared_ptr<const DeviceData> TensorDeviceAccess::device_data(const Tensor& t) {
  return t.storage_ ? t.storage_->device : nullptr;
}

void TensorDeviceAccess::attach(const Tensor& t, std::shared_ptr<const DeviceData> device) {
  if (t.storage_) t.storage_->device = std::move(device);
}

bool TensorDeviceAccess::has_host_bytes(const Tensor& t) { return t.storage_ && t.storage_->data; }

long TensorDeviceAccess::storage_users(const Tensor& t) { return t.storage_ ? t.storage_.use_count() : 0; }

void TensorDeviceAccess::drop_device_copy(const Tensor& t) {
  if (t.storage_ && t.storage_->data) t.storage_->device.reset();
}

void TensorDeviceAccess::drop_host_copy(const Tensor& t) {
  if (!t.storage_ || !t.storage_->device) return;
  Tensor::Storage& s = *t.storage_;
  s.owner.reset();
  s.data = nullptr;
  s.writable = false;
}

const void* TensorDeviceAccess::storage_identity(const Tensor& t) { return t.storage_.get(); }

Tensor Tensor::flat_range(int64_t first, int64_t count) const {
  if (first < 0 || count < 0 || first > numel() || count > numel() - first)
    throw Error(ErrorCode::InvalidArgument, "elements [" + std::to_string(first) + ", +" + std::to_string(count) +
                                                ") lie outside a tensor of " + std::to_string(numel()) + " elements");
  Tensor out(dtype_, {count});
  if (count == 0) return out;
  const size_t element = dtype_size(dtype_);
  if (!storage_->data && storage_->device)
    storage_->device->download_elements(first, count, out.storage_->data);
  else
    std::memcpy(out.storage_->data, data() + first * element, count * element);
  return out;
}

Tensor Tensor::reshaped(Shape shape) const {
  if (shape_numel(shape) != numel()) throw Error(ErrorCode::Runtime, "reshape changes the element count");
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

}  // namespace wgml
