#pragma once
// Tensors in GPU buffers. A GpuTensorData is one tensor's bytes in one of a GpuContext's buffers,
// stored as a kernel::StorageType (widened 8/16-bit integers, narrowed int64, ...). Several tensors
// may share a buffer: a reshaped view, or an output a kernel wrote in place of its input.
#include <memory>
#include <optional>
#include <string>

#include "backend/webgpu/gpu_context.h"
#include "core/device_data.h"
#include "kernel/storage.h"

namespace wgml::backend::webgpu {

class GpuTensorData final : public DeviceData {
 public:
  // `bounds`: a range every element is known to lie in (the kernel that wrote it guarantees it),
  // which spares an input with a valueRange inside it the check on upload (and its read back).
  GpuTensorData(std::shared_ptr<GpuContext> context, std::shared_ptr<gpu::PooledBuffer> buffer, kernel::StorageType storage,
                Shape shape, std::optional<kernel::ValueRange> bounds = std::nullopt);

  // Reads the buffer back (submitting and waiting for the work recorded so far) and decodes it.
  void download(uint8_t* out, size_t nbytes) const override;
  // Reads the words that hold those elements only.
  void download_elements(int64_t first, int64_t count, uint8_t* out) const override;
  // Its buffer's and the copies' in other storages.
  uint64_t device_bytes() const override;
  // Records the copy of its bytes to a readback buffer now (Recorder::start_read); the next
  // download() waits only for the work recorded before this call.
  void start_download() const override;

  const GpuContext* context() const { return context_.get(); }
  const std::shared_ptr<gpu::PooledBuffer>& buffer() const { return buffer_; }
  gpu::BufferRange range() const { return buffer_->range(); }
  // The range a kernel binds: the whole buffer (its size class, capped at the device's largest
  // storage binding), not just this tensor's bytes, so that a bind group made for the buffer
  // serves every later tensor lent it, such as an attention scratch that grows with the KV length.
  // Kernels bound-check against their params, never the binding's length.
  gpu::BufferRange binding() const;
  const kernel::StorageType& storage() const { return storage_; }
  // Whether every element is known to lie within `range`.
  bool known_within(const kernel::ValueRange& range) const {
    return bounds_ && bounds_->min >= range.min && bounds_->max <= range.max;
  }

  // The same value in another storage, made earlier (a quantized weight's scales: widened for the
  // Take of an embedding's rows, packed for the tied lm_head's matmul); null when none was made.
  // Safe to keep: a kernel writes a buffer in place only when no other tensor holds it, and the
  // written tensor gets a new GpuTensorData, so this one's copies are never observed stale.
  std::shared_ptr<const GpuTensorData> in_storage(const kernel::StorageType& storage) const;
  void keep_copy(std::shared_ptr<const GpuTensorData> copy) const;

 private:
  // The bytes its elements take in the buffer (whole words).
  uint64_t stored_bytes() const;
  // Bytes [offset, offset + bytes) of the buffer read back and decoded as a tensor of `shape`.
  Tensor read_decoded(uint64_t offset, uint64_t bytes, const Shape& shape, std::string_view op) const;

  std::shared_ptr<GpuContext> context_;  // declared first: outlives the buffer
  std::shared_ptr<gpu::PooledBuffer> buffer_;
  kernel::StorageType storage_;
  Shape shape_;
  std::optional<kernel::ValueRange> bounds_;
  mutable std::vector<std::shared_ptr<const GpuTensorData>> other_storages_;
  mutable std::optional<gpu::Recorder::PendingRead> pending_read_;
};

// A new, uninitialised buffer for `bytes` (at least one word).
std::shared_ptr<gpu::PooledBuffer> new_buffer(GpuContext& context, uint64_t bytes, std::string_view op);

// `t` in `context`'s memory as `storage`: its device copy when it has one there in that storage,
// else an upload recorded now. The upload stays attached to `t` (so constants and inputs used by
// several kernels go up once) unless it was range-checked for one kernel (`range`).
std::shared_ptr<const GpuTensorData> on_gpu(const std::shared_ptr<GpuContext>& context, const Tensor& t,
                                            const kernel::StorageType& storage, const std::string& name,
                                            const std::optional<kernel::ValueRange>& range);

}  // namespace wgml::backend::webgpu
