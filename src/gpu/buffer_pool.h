#pragma once
// GPU buffers by size class, reused once the GPU has finished the work that last used them.
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "gpu/device.h"

namespace wgml::gpu {

enum class BufferKind {
  Storage,       // tensors: bound to kernels, copied to and from
  Staging,       // upload staging: written by the queue, copied into storage buffers
  Readback,      // mapped for reading on the CPU
  QueryResolve,  // timestamp query results
};

// The buffer size a request of `bytes` gets: at least 256 bytes, then steps of a quarter of the
// power of two below, so that a buffer is at most 25% larger than asked for.
uint64_t size_class(uint64_t bytes);

// A part of a buffer as a kernel binding or a copy sees it.
struct BufferRange {
  WGPUBuffer buffer = nullptr;
  uint64_t id = 0;  // unique per buffer for the process; never reused (bind groups are keyed by it)
  uint64_t offset = 0;
  uint64_t size = 0;
};

class BufferPool;

// A new buffer id, unique in the process (buffers made outside a pool use these too).
uint64_t next_buffer_id();

// Maps the first `size` bytes of a Readback buffer for reading, waiting until the GPU work that
// writes it has finished. The caller unmaps it.
void map_for_reading(Device& device, WGPUBuffer buffer, uint64_t size, std::string_view op);

// A buffer on loan from a BufferPool; going out of scope returns it. Move-only. The pool must
// outlive its buffers. It may go out of scope on any thread, while the pool's owner records work
// (an input or output tensor of a session freed by another thread).
class PooledBuffer {
 public:
  PooledBuffer() = default;
  PooledBuffer(PooledBuffer&& other) noexcept { *this = std::move(other); }
  PooledBuffer& operator=(PooledBuffer&& other) noexcept;
  ~PooledBuffer() { reset(); }

  explicit operator bool() const { return pool_ != nullptr; }
  WGPUBuffer handle() const { return handle_; }
  uint64_t id() const { return id_; }
  uint64_t size() const { return size_; }          // the bytes asked for, rounded up to 4
  uint64_t capacity() const { return capacity_; }  // the buffer's real size (its size class)
  BufferKind kind() const { return kind_; }
  BufferRange range() const { return {handle_, id_, 0, size_}; }
  BufferRange range(uint64_t offset, uint64_t size) const { return {handle_, id_, offset, size}; }
  void reset();  // returns the buffer to the pool now
  // Returns it to the pool as reset() does, where the caller knows that no work after submission
  // `last_use` uses it (a readback buffer once read): it is free as soon as that submission is,
  // not only when everything submitted by now is.
  void reset_after(uint64_t last_use);

 private:
  friend class BufferPool;

  BufferPool* pool_ = nullptr;
  WGPUBuffer handle_ = nullptr;
  uint64_t id_ = 0;
  uint64_t size_ = 0;
  uint64_t capacity_ = 0;
  BufferKind kind_ = BufferKind::Storage;
};

class BufferPool {
 public:
  explicit BufferPool(Device& device) : device_(device) {}
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of at least `bytes`. Storage requests above the device's
  // maxStorageBufferBindingSize throw GpuError(TooLarge): such a tensor cannot be bound.
  PooledBuffer acquire(uint64_t bytes, BufferKind kind, std::string_view op);

  // Destroys the free buffers the GPU has finished with (their memory goes back to the device).
  void trim();

  // Marks the start of a run. The storage requests of a run that repeats the previous one's (a
  // decode step) get, where it is free, the buffer the same request got then: the recorder's bind
  // groups, keyed by buffer ids, are then found instead of made at every step.
  void restart_sequence();

  struct Stats {
    uint64_t created = 0;  // buffers made by the device
    uint64_t reused = 0;   // requests served from the pool
    uint64_t free_buffers = 0;
    uint64_t bytes_allocated = 0;  // all buffers the pool made and has not destroyed
    uint64_t buffers_in_use = 0;   // on loan
    uint64_t bytes_in_use = 0;     // capacity of the buffers on loan
    uint64_t peak_bytes_allocated = 0;
    uint64_t peak_bytes_in_use = 0;
  };
  Stats stats() const;
  // Starts new peaks from what is allocated and in use now.
  void reset_peaks();
  Device& device() { return device_; }

 private:
  friend class PooledBuffer;
  struct FreeBuffer {
    WGPUBuffer handle;
    uint64_t id;
    uint64_t fence;  // submission that must finish before the buffer is reused
  };
  using ClassKey = std::pair<BufferKind, uint64_t>;
  struct Lent {
    uint64_t id = 0;
    uint64_t capacity = 0;
  };
  // The buffers a storage request's place in the run got the last two times it got a new one. Two,
  // because a run's output may still be held when the next run asks at its place (a decode step one
  // token ahead holds its pick through the next step): that place then alternates between two
  // buffers, and with it the bind groups, which are found again instead of made at every run.
  struct LentAt {
    Lent last;
    Lent earlier;
  };

  void give_back(PooledBuffer& buffer, uint64_t fence);
  bool take_free(BufferKind kind, uint64_t capacity, PooledBuffer& out);
  bool take_lent_before(size_t position, uint64_t capacity, PooledBuffer& out);
  bool take_lent(const Lent& lent, uint64_t capacity, PooledBuffer& out);
  std::optional<size_t> usable(BufferKind kind, const std::vector<FreeBuffer>& buffers);
  void lend(PooledBuffer& buffer);
  void destroy(WGPUBuffer handle, uint64_t capacity);

  Device& device_;
  // Guards what follows: buffers come back from any thread (PooledBuffer) while the pool's owner
  // takes them. No PooledBuffer is destroyed while it is held.
  mutable std::mutex mutex_;
  std::map<ClassKey, std::vector<FreeBuffer>> free_;
  std::vector<LentAt> lent_in_order_;  // by the run's storage requests' places
  size_t position_ = 0;                // the next storage request's place in the run
  Stats stats_;
};

}  // namespace wgml::gpu
