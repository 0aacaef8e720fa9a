#pragma once
// The host bytes wgml's tensors allocate (model files are mapped, not counted): every tensor
// buffer comes from allocate_tensor_bytes, so this is the one place that counts them, and where a
// limit on them would go. Counted per process; a run reads the peak since it reset it.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace wgml {

class MemoryCounter {
 public:
  void add(uint64_t bytes);
  void remove(uint64_t bytes) { live_.fetch_sub(bytes, std::memory_order_relaxed); }
  uint64_t live() const { return live_.load(std::memory_order_relaxed); }
  uint64_t peak() const { return peak_.load(std::memory_order_relaxed); }
  // Starts a new peak from what is live now.
  void reset_peak() { peak_.store(live(), std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> live_{0};
  std::atomic<uint64_t> peak_{0};
};

// Host bytes held by tensors.
MemoryCounter& host_tensor_memory();

// `size` zero-filled bytes (at least one) for a tensor, counted in host_tensor_memory until freed.
std::shared_ptr<uint8_t[]> allocate_tensor_bytes(size_t size);

}  // namespace wgml
