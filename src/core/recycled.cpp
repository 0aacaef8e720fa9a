#include "core/recycled.h"

#include <array>
#include <atomic>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
// A kept block is poisoned past its link, so that AddressSanitizer still reports a use after free.
#define WGML_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define WGML_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define WGML_POISON(p, n) ((void)(p), (void)(n))
#define WGML_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace wgml {
namespace {

constexpr size_t kClassBytes = 64;
constexpr size_t kClasses = kMaxRecycledBlock / kClassBytes;
// Blocks a class keeps: a decode step of a large model makes a few thousand objects of a size.
constexpr size_t kKeptPerClass = 8192;

struct FreeBlock {
  FreeBlock* next;
};

// One size class: a free list behind a spin lock (held for a few instructions, and contended only
// when threads free tensors at once).
struct SizeClass {
  std::atomic_flag busy = ATOMIC_FLAG_INIT;
  FreeBlock* free = nullptr;
  size_t kept = 0;

  void lock() noexcept {
    while (busy.test_and_set(std::memory_order_acquire)) busy.wait(true, std::memory_order_relaxed);
  }
  void unlock() noexcept {
    busy.clear(std::memory_order_release);
    busy.notify_one();
  }
};

std::array<SizeClass, kClasses>& size_classes() {
  static std::array<SizeClass, kClasses> classes;
  return classes;
}

size_t class_of(size_t bytes) { return bytes == 0 ? 0 : (bytes - 1) / kClassBytes; }

}  // namespace

void* take_recycled_block(size_t bytes) {
  const size_t c = class_of(bytes);
  SizeClass& sc = size_classes()[c];
  sc.lock();
  FreeBlock* block = sc.free;
  if (block) {
    sc.free = block->next;
    --sc.kept;
  }
  sc.unlock();
  if (!block) return ::operator new((c + 1) * kClassBytes);
  WGML_UNPOISON(block, (c + 1) * kClassBytes);
  return block;
}

void give_back_recycled_block(void* block, size_t bytes) noexcept {
  const size_t c = class_of(bytes);
  SizeClass& sc = size_classes()[c];
  sc.lock();
  const bool keep = sc.kept < kKeptPerClass;
  if (keep) {
    sc.free = new (block) FreeBlock{sc.free};
    ++sc.kept;
    WGML_POISON(static_cast<char*>(block) + sizeof(FreeBlock), (c + 1) * kClassBytes - sizeof(FreeBlock));
  }
  sc.unlock();
  if (!keep) ::operator delete(block);
}

}  // namespace wgml
