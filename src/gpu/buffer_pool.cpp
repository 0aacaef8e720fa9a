#include "gpu/buffer_pool.h"

#include <atomic>
#include <bit>
#include <string>

#include "gpu/gpu_error.h"
#include "gpu/webgpu_strings.h"

namespace wgml::gpu {
namespace {

constexpr uint64_t kMinimumClass = 256;

WGPUFlags usage_of(BufferKind kind) {
  switch (kind) {
    case BufferKind::Storage:
      return WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
    case BufferKind::Staging:
      return WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
    case BufferKind::Readback:
      return WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst;
    case BufferKind::QueryResolve:
      return WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc;
  }
  return 0;
}

const char* label_of(BufferKind kind) {
  switch (kind) {
    case BufferKind::Storage:
      return "wgml storage";
    case BufferKind::Staging:
      return "wgml staging";
    case BufferKind::Readback:
      return "wgml readback";
    case BufferKind::QueryResolve:
      return "wgml query resolve";
  }
  return "wgml buffer";
}

struct MapResult {
  bool done = false;
  WGPUMapAsyncStatus status = WGPUMapAsyncStatus_Error;
  std::string message;
};

void on_mapped(WGPUMapAsyncStatus status, WGPUStringView message, void* userdata, void*) {
  auto* result = static_cast<MapResult*>(userdata);
  result->done = true;
  result->status = status;
  result->message = to_string(message);
}

}  // namespace

void map_for_reading(Device& device, WGPUBuffer buffer, uint64_t size, std::string_view op) {
  MapResult result;
  device.fn().BufferMapAsync(buffer, WGPUMapMode_Read, 0, size,
                             {nullptr, WGPUCallbackMode_AllowProcessEvents, on_mapped, &result, nullptr});
  device.wait_for_callback(result.done, op);
  if (result.status != WGPUMapAsyncStatus_Success)
    throw GpuError(GpuErrorKind::Internal, op, "mapping a readback buffer failed: " + result.message);
}

uint64_t next_buffer_id() {
  static std::atomic<uint64_t> next{1};
  return next++;
}

uint64_t size_class(uint64_t bytes) {
  if (bytes <= kMinimumClass) return kMinimumClass;
  const uint64_t below = std::bit_floor(bytes - 1);  // below < bytes <= 2 * below
  return align_up(bytes, below / 4);
}

PooledBuffer& PooledBuffer::operator=(PooledBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    pool_ = std::exchange(other.pool_, nullptr);
    handle_ = std::exchange(other.handle_, nullptr);
    id_ = other.id_;
    size_ = other.size_;
    capacity_ = other.capacity_;
    loan_ = other.loan_;
    kind_ = other.kind_;
  }
  return *this;
}

void PooledBuffer::reset() {
  if (!pool_) return;
  pool_->give_back(*this);
  pool_ = nullptr;
  handle_ = nullptr;
}

BufferPool::~BufferPool() {
  device_.drain();  // a free buffer may still be read by submitted work
  for (auto& [key, buffers] : free_)
    for (const FreeBuffer& b : buffers) destroy(b.handle, key.second);
}

PooledBuffer BufferPool::acquire(uint64_t bytes, BufferKind kind, std::string_view op) {
  const WGPULimits& limits = device_.limits();
  if (kind == BufferKind::Storage && bytes > limits.maxStorageBufferBindingSize)
    throw GpuError(GpuErrorKind::TooLarge, op,
                   "a tensor of " + std::to_string(bytes) + " bytes is above maxStorageBufferBindingSize (" +
                       std::to_string(limits.maxStorageBufferBindingSize) + ") of " + device_.adapter().name +
                       "; wgml cannot split a tensor across bindings yet");
  const uint64_t size = align_up(bytes == 0 ? 4 : bytes, 4);
  // A class above the device's buffer limit falls back to the exact size.
  uint64_t capacity = size_class(size);
  if (capacity > limits.maxBufferSize) capacity = size;

  PooledBuffer out;
  out.size_ = size;
  out.capacity_ = capacity;
  out.kind_ = kind;
  out.loan_ = ++loans_;
  if (take_free({kind, capacity}, out)) {
    ++stats_.reused;
  } else {
    out.handle_ = device_.create_buffer(capacity, usage_of(kind), label_of(kind), op);
    out.id_ = next_buffer_id();
    ++stats_.created;
    stats_.bytes_allocated += capacity;
  }
  out.pool_ = this;
  return out;
}

bool BufferPool::take_free(const ClassKey& key, PooledBuffer& out) {
  auto it = free_.find(key);
  if (it == free_.end() || it->second.empty()) return false;
  std::vector<FreeBuffer>& buffers = it->second;
  auto earliest_lent_finished = [&](uint64_t completed) {
    size_t found = buffers.size();
    for (size_t i = 0; i < buffers.size(); ++i)
      if (buffers[i].fence <= completed && (found == buffers.size() || buffers[i].loan < buffers[found].loan)) found = i;
    return found;
  };
  size_t index = earliest_lent_finished(device_.last_completed());
  if (index == buffers.size()) index = earliest_lent_finished(device_.completed());
  if (index == buffers.size()) return false;
  out.handle_ = buffers[index].handle;
  out.id_ = buffers[index].id;
  buffers.erase(buffers.begin() + index);
  --stats_.free_buffers;
  return true;
}

void BufferPool::give_back(PooledBuffer& buffer) {
  free_[{buffer.kind_, buffer.capacity_}].push_back({buffer.handle_, buffer.id_, device_.work_fence(), buffer.loan_});
  ++stats_.free_buffers;
}

void BufferPool::trim() {
  const uint64_t completed = device_.completed();
  for (auto& [key, buffers] : free_) {
    const uint64_t capacity = key.second;
    std::erase_if(buffers, [&](const FreeBuffer& b) {
      if (b.fence > completed) return false;
      destroy(b.handle, capacity);
      --stats_.free_buffers;
      return true;
    });
  }
}

void BufferPool::destroy(WGPUBuffer handle, uint64_t capacity) {
  device_.fn().BufferDestroy(handle);
  device_.fn().BufferRelease(handle);
  stats_.bytes_allocated -= capacity;
}

}  // namespace wgml::gpu
