#include "core/host_memory.h"

namespace wgml {

void MemoryCounter::add(uint64_t bytes) {
  const uint64_t now = live_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  uint64_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

MemoryCounter& host_tensor_memory() {
  static MemoryCounter counter;
  return counter;
}

std::shared_ptr<uint8_t[]> allocate_tensor_bytes(size_t size) {
  const size_t bytes = size == 0 ? 1 : size;
  std::shared_ptr<uint8_t[]> out(new uint8_t[bytes](), [bytes](uint8_t* p) {
    host_tensor_memory().remove(bytes);
    delete[] p;
  });
  host_tensor_memory().add(bytes);
  return out;
}

}  // namespace wgml
