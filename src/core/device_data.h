#pragma once
// Tensors whose bytes live on a device (a GPU buffer). A backend makes them with
// TensorDeviceAccess::on_device; reading such a tensor's data() on the host downloads the bytes
// once (synchronising with the device), so CPU kernels run on device tensors unchanged. A host
// tensor a backend uploads keeps the device copy attached, so constants are uploaded once.
// Writing a tensor's host bytes (mutable_data) drops its device copy.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "wgml/tensor.h"

namespace wgml {

// A device's copy of a tensor's bytes. Backends subclass it.
class DeviceData {
 public:
  virtual ~DeviceData() = default;
  // Writes the tensor's bytes in host layout (`nbytes` of them) to `out`.
  virtual void download(uint8_t* out, size_t nbytes) const = 0;
  // Writes elements [first, first + count) of the flattened tensor in host layout to `out`,
  // reading no more of the device's copy than the words that hold them.
  virtual void download_elements(int64_t first, int64_t count, uint8_t* out) const = 0;
  // The device memory this copy holds (for memory profiles).
  virtual uint64_t device_bytes() const = 0;
  // Starts moving the bytes to the host behind the work recorded so far, so that a download later
  // waits for that work only (a sampled token read while the next step runs). No-op by default.
  virtual void start_download() const {}
};

struct TensorDeviceAccess {
  static Tensor on_device(DType dtype, Shape shape, std::shared_ptr<const DeviceData> device);
  // The device copy, or null.
  static std::shared_ptr<const DeviceData> device_data(const Tensor& t);
  // Records that `device` holds the same bytes as `t` (shared by every tensor sharing its storage).
  static void attach(const Tensor& t, std::shared_ptr<const DeviceData> device);
  // Whether t's bytes are in host memory (a tensor made on the host, or one read back already).
  static bool has_host_bytes(const Tensor& t);
  // How many tensors share t's storage (1: t alone), to decide whether a kernel may write its
  // device copy in place.
  static long storage_users(const Tensor& t);
  // Forget t's device copy (it must have host bytes) or its host bytes (it must have a device
  // copy), for every tensor sharing its storage: the one left is read from then on.
  static void drop_device_copy(const Tensor& t);
  static void drop_host_copy(const Tensor& t);
  // The storage t shares with its views (for counting shared bytes once), or null.
  static const void* storage_identity(const Tensor& t);
};

}  // namespace wgml
