#include "core/host_memory.h"

#include <cstring>

#include "core/recycled.h"

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
  host_tensor_memory().add(bytes);
  // A few positions or a row of RoPE's angles, made every step: from the recycled blocks.
  if (bytes <= kMaxRecycledBlock) {
    auto* p = static_cast<uint8_t*>(take_recycled_block(bytes));
    std::memset(p, 0, bytes);
    return {p,
            [bytes](uint8_t* q) {
              host_tensor_memory().remove(bytes);
              give_back_recycled_block(q, bytes);
            },
            RecyclingAllocator<uint8_t>()};
  }
  return {new uint8_t[bytes](), [bytes](uint8_t* p) {
            host_tensor_memory().remove(bytes);
            delete[] p;
          }};
}

}  // namespace wgml
