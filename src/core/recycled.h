#pragma once
// Small blocks kept for reuse once freed. A decode step makes the same few hundred small objects
// every token (a tensor's storage record, a GPU tensor, the handle of a pooled buffer, a host
// tensor of a few positions); taking them from blocks the previous step gave back keeps a steady
// step off the heap, as the buffer pool keeps it off the GPU allocator. Blocks go up to
// kMaxRecycledBlock bytes, in size classes of 64; each class keeps a bounded number, the rest go
// back to the heap. Thread-safe: a block may be freed on another thread than the one that took it.
#include <cstddef>
#include <memory>
#include <new>
#include <utility>

namespace wgml {

constexpr size_t kMaxRecycledBlock = 4096;

// A block of at least `bytes` (at most kMaxRecycledBlock), aligned for any scalar type.
void* take_recycled_block(size_t bytes);
// Gives back a block take_recycled_block(bytes) returned.
void give_back_recycled_block(void* block, size_t bytes) noexcept;

// An allocator over the recycled blocks (the heap for larger requests), for std::allocate_shared.
template <class T>
struct RecyclingAllocator {
  using value_type = T;
  RecyclingAllocator() = default;
  template <class U>
  RecyclingAllocator(const RecyclingAllocator<U>&) noexcept {}  // NOLINT: rebinding is implicit
  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    static_assert(alignof(T) <= alignof(std::max_align_t));
    return static_cast<T*>(bytes <= kMaxRecycledBlock ? take_recycled_block(bytes) : ::operator new(bytes));
  }
  void deallocate(T* p, size_t n) noexcept {
    const size_t bytes = n * sizeof(T);
    if (bytes <= kMaxRecycledBlock)
      give_back_recycled_block(p, bytes);
    else
      ::operator delete(p);
  }
  template <class U>
  bool operator==(const RecyclingAllocator<U>&) const noexcept {
    return true;
  }
};

// std::make_shared for objects a steady step makes again and again.
template <class T, class... Args>
std::shared_ptr<T> make_recycled(Args&&... args) {
  return std::allocate_shared<T>(RecyclingAllocator<T>(), std::forward<Args>(args)...);
}

}  // namespace wgml
