#include "backend/webgpu/gpu_tensor.h"

#include <algorithm>
#include <cstring>

#include "backend/webgpu/host_packing.h"
#include "core/recycled.h"
#include "wgml/error.h"

namespace wgml::backend::webgpu {

GpuTensorData::GpuTensorData(std::shared_ptr<GpuContext> context, std::shared_ptr<gpu::PooledBuffer> buffer,
                             kernel::StorageType storage, Shape shape, std::optional<kernel::ValueRange> bounds)
    : context_(std::move(context)),
      buffer_(std::move(buffer)),
      storage_(std::move(storage)),
      shape_(std::move(shape)),
      bounds_(bounds) {}

uint64_t GpuTensorData::stored_bytes() const { return kernel::gpu_buffer_bytes(storage_, shape_numel(shape_)); }

void GpuTensorData::start_download() const {
  pending_read_ = context_->recorder().start_read(buffer_->range(0, stored_bytes()), "read a tensor back");
}

Tensor GpuTensorData::read_decoded(uint64_t offset, uint64_t bytes, const Shape& shape, std::string_view op) const {
  std::optional<gpu::Recorder::PendingRead> started;
  if (pending_read_ && offset == 0 && bytes == pending_read_->staging.size()) started.swap(pending_read_);
  // The words land in a host tensor's bytes: a small read (a token) takes recycled ones.
  Tensor words(DType::UInt8, {static_cast<int64_t>(bytes)});
  const std::span raw(reinterpret_cast<std::byte*>(words.mutable_data()), bytes);
  if (started)
    context_->recorder().finish_read(*started, raw, op);
  else
    context_->recorder().read(buffer_->range(offset, bytes), raw, op);
  return decode_from_gpu({words.data(), bytes}, storage_, shape);
}

gpu::BufferRange GpuTensorData::binding() const {
  const uint64_t whole = std::min(buffer_->capacity(), context_->caps().max_storage_binding_bytes & ~uint64_t{3});
  return buffer_->range(0, std::max(whole, buffer_->size()));
}

void GpuTensorData::download(uint8_t* out, size_t nbytes) const {
  const Tensor host = read_decoded(0, stored_bytes(), shape_, "read a tensor back");
  if (host.nbytes() != nbytes)
    throw Error(ErrorCode::Runtime, "GPU tensor read back with " + std::to_string(host.nbytes()) + " bytes where " +
                                        std::to_string(nbytes) + " were expected");
  if (nbytes) std::memcpy(out, host.data(), nbytes);
}

std::shared_ptr<const GpuTensorData> GpuTensorData::in_storage(const kernel::StorageType& storage) const {
  for (const auto& copy : other_storages_)
    if (copy->storage() == storage) return copy;
  return nullptr;
}

uint64_t GpuTensorData::device_bytes() const {
  uint64_t bytes = buffer_->capacity();
  for (const auto& copy : other_storages_) bytes += copy->device_bytes();
  return bytes;
}

void GpuTensorData::keep_copy(std::shared_ptr<const GpuTensorData> copy) const { other_storages_.push_back(std::move(copy)); }

namespace {

// Bytes one element takes in a GPU buffer: a whole word when widened or narrowed, else its own size
// (1, 2 or 4: a divisor of the 4-byte word).
uint64_t stored_element_bytes(const kernel::StorageType& storage) {
  const bool one_per_word = storage.kind == kernel::StorageKind::Widened || storage.kind == kernel::StorageKind::Narrowed;
  return one_per_word ? 4 : dtype_size(storage.logical);
}

}  // namespace

void GpuTensorData::download_elements(int64_t first, int64_t count, uint8_t* out) const {
  const uint64_t element = stored_element_bytes(storage_);
  const uint64_t begin = first * element / 4 * 4;
  const uint64_t end = ((first + count) * element + 3) / 4 * 4;
  const Tensor window =
      read_decoded(begin, end - begin, {static_cast<int64_t>((end - begin) / element)}, "read tensor elements back");
  const size_t host_element = dtype_size(storage_.logical);
  std::memcpy(out, window.data() + (first - static_cast<int64_t>(begin / element)) * host_element, count * host_element);
}

std::shared_ptr<gpu::PooledBuffer> new_buffer(GpuContext& context, uint64_t bytes, std::string_view op) {
  return make_recycled<gpu::PooledBuffer>(context.pool().acquire(std::max<uint64_t>(bytes, 4), gpu::BufferKind::Storage, op));
}

std::shared_ptr<const GpuTensorData> on_gpu(const std::shared_ptr<GpuContext>& context, const Tensor& t,
                                            const kernel::StorageType& storage, const std::string& name,
                                            const std::optional<kernel::ValueRange>& range) {
  auto existing = std::dynamic_pointer_cast<const GpuTensorData>(TensorDeviceAccess::device_data(t));
  if (existing && existing->context() != context.get()) existing.reset();
  if (existing && !range) {
    if (existing->storage() == storage) return existing;
    if (auto copy = existing->in_storage(storage)) return copy;
  }
  if (existing && range && existing->storage() == storage && existing->known_within(*range)) return existing;
  GpuContext::UploadScratch& scratch = context->upload_scratch();
  const std::vector<uint8_t>& bytes = scratch.bytes;
  encode_for_gpu(t, storage, name, range, scratch.bytes);
  scratch.label.assign("upload ").append(name);
  auto buffer = new_buffer(*context, bytes.size(), scratch.label);
  context->recorder().upload(buffer->range(0, bytes.size()),
                             std::span(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()), scratch.label);
  std::shared_ptr<const GpuTensorData> data = make_recycled<GpuTensorData>(context, std::move(buffer), storage, t.shape());
  if (range) return data;
  if (existing)
    existing->keep_copy(data);
  else
    TensorDeviceAccess::attach(t, data);
  return data;
}

}  // namespace wgml::backend::webgpu
