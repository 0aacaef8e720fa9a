#include "gpu/buffer_pool.h"

#include <algorithm>
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
    kind_ = other.kind_;
  }
  return *this;
}

void PooledBuffer::reset() {
  if (pool_) reset_after(pool_->device_.work_fence());
}

void PooledBuffer::reset_after(uint64_t last_use) {
  if (!pool_) return;
  pool_->give_back(*this, last_use);
  pool_ = nullptr;
  handle_ = nullptr;
}

BufferPool::~BufferPool() {
  const std::lock_guard lock(mutex_);
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

  const std::lock_guard lock(mutex_);
  PooledBuffer out;
  out.size_ = size;
  out.capacity_ = capacity;
  out.kind_ = kind;
  const size_t position = kind == BufferKind::Storage ? position_++ : 0;
  if ((kind == BufferKind::Storage && take_lent_before(position, capacity, out)) || take_free(kind, capacity, out)) {
    ++stats_.reused;
  } else {
    out.handle_ = device_.create_buffer(capacity, usage_of(kind), label_of(kind), op);
    out.id_ = next_buffer_id();
    ++stats_.created;
    stats_.bytes_allocated += capacity;
    stats_.peak_bytes_allocated = std::max(stats_.peak_bytes_allocated, stats_.bytes_allocated);
  }
  lend(out);
  if (kind == BufferKind::Storage) {
    if (position >= lent_in_order_.size()) lent_in_order_.resize(position + 1);
    LentAt& at = lent_in_order_[position];
    if (at.last.id != out.id_) at = {{out.id_, out.capacity_}, at.last};
  }
  return out;
}

// The buffer this request's place in the run got last time, or the one before where that one is
// still on loan, when it is free and of a class the request may take (as take_free: its own up to
// twice it).
bool BufferPool::take_lent_before(size_t position, uint64_t capacity, PooledBuffer& out) {
  if (position >= lent_in_order_.size()) return false;
  const LentAt& at = lent_in_order_[position];
  return take_lent(at.last, capacity, out) || take_lent(at.earlier, capacity, out);
}

bool BufferPool::take_lent(const Lent& lent, uint64_t capacity, PooledBuffer& out) {
  if (lent.id == 0 || lent.capacity < capacity || lent.capacity > 2 * capacity) return false;
  const auto it = free_.find({BufferKind::Storage, lent.capacity});
  if (it == free_.end()) return false;
  std::vector<FreeBuffer>& buffers = it->second;
  const auto found = std::find_if(buffers.begin(), buffers.end(), [&](const FreeBuffer& b) { return b.id == lent.id; });
  if (found == buffers.end()) return false;
  out.handle_ = found->handle;
  out.id_ = found->id;
  out.capacity_ = lent.capacity;
  buffers.erase(found);
  --stats_.free_buffers;
  return true;
}

void BufferPool::lend(PooledBuffer& buffer) {
  buffer.pool_ = this;
  ++stats_.buffers_in_use;
  stats_.bytes_in_use += buffer.capacity_;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
}

// Which free buffer of a class may be lent now. Storage buffers are only ever used by work on the
// queue (kernels, copies, queue writes), which runs in order: a new use of a freed one is ordered
// after its last use, so it is lent at once, even within the work being recorded. That is what
// lets a run's temps share buffers. Staging and readback buffers are written or read by the host:
// they wait until the GPU has finished the submission that last used them (oldest first, the
// likeliest to be finished).
std::optional<size_t> BufferPool::usable(BufferKind kind, const std::vector<FreeBuffer>& buffers) {
  if (buffers.empty()) return std::nullopt;
  if (kind == BufferKind::Storage) return buffers.size() - 1;  // the most recently freed: warm in caches
  auto finished = [&](uint64_t completed) -> std::optional<size_t> {
    for (size_t i = 0; i < buffers.size(); ++i)
      if (buffers[i].fence <= completed) return i;
    return std::nullopt;
  };
  if (auto index = finished(device_.last_completed())) return index;
  return finished(device_.completed());
}

// Storage requests take the smallest free class from theirs up to twice theirs (greedy by size, as
// onnxruntime's and ExecuTorch's planners share buffers); the others take their class only.
bool BufferPool::take_free(BufferKind kind, uint64_t capacity, PooledBuffer& out) {
  const uint64_t largest = kind == BufferKind::Storage ? 2 * capacity : capacity;
  for (auto it = free_.lower_bound({kind, capacity}); it != free_.end() && it->first.first == kind && it->first.second <= largest;
       ++it) {
    std::vector<FreeBuffer>& buffers = it->second;
    const std::optional<size_t> index = usable(kind, buffers);
    if (!index) continue;
    out.handle_ = buffers[*index].handle;
    out.id_ = buffers[*index].id;
    out.capacity_ = it->first.second;
    buffers.erase(buffers.begin() + static_cast<std::ptrdiff_t>(*index));
    --stats_.free_buffers;
    return true;
  }
  return false;
}

void BufferPool::give_back(PooledBuffer& buffer, uint64_t fence) {
  const std::lock_guard lock(mutex_);
  free_[{buffer.kind_, buffer.capacity_}].push_back({buffer.handle_, buffer.id_, fence});
  ++stats_.free_buffers;
  --stats_.buffers_in_use;
  stats_.bytes_in_use -= buffer.capacity_;
}

BufferPool::Stats BufferPool::stats() const {
  const std::lock_guard lock(mutex_);
  return stats_;
}

void BufferPool::restart_sequence() {
  const std::lock_guard lock(mutex_);
  position_ = 0;
}

void BufferPool::reset_peaks() {
  const std::lock_guard lock(mutex_);
  stats_.peak_bytes_allocated = stats_.bytes_allocated;
  stats_.peak_bytes_in_use = stats_.bytes_in_use;
}

void BufferPool::trim() {
  const uint64_t completed = device_.completed();
  const std::lock_guard lock(mutex_);
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
