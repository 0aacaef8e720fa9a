#pragma once
// The bytes a session's tensors may hold at once (SessionOptions::max_memory_bytes): every tensor
// made while a MemoryBudget::Scope is active on the thread, on the host or on a device, is counted
// from its allocation until its storage is freed, and one that would pass the limit is refused
// with ErrorCode::ResourceLimit before anything is allocated. Views of file bytes (constants)
// allocate nothing and count nothing.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "wgml/dtype.h"
#include "wgml/tensor.h"

namespace wgml {

class MemoryBudget {
 public:
  explicit MemoryBudget(uint64_t limit_bytes) : limit_(limit_bytes) {}
  uint64_t limit() const { return limit_; }
  uint64_t in_use() const { return in_use_.load(); }

  // Counts the `bytes` of a dtype x shape tensor against the limit, or throws ResourceLimit.
  void reserve(uint64_t bytes, DType dtype, const Shape& shape);
  void release(uint64_t bytes) noexcept { in_use_ -= bytes; }

  // The budget tensors made on this thread count against, while the scope lives (scopes nest).
  class Scope {
   public:
    explicit Scope(std::shared_ptr<MemoryBudget> budget);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    std::shared_ptr<MemoryBudget> previous_;
  };
  // The active budget on this thread, or null outside every scope.
  static const std::shared_ptr<MemoryBudget>& current();

 private:
  uint64_t limit_;
  std::atomic<uint64_t> in_use_{0};
};

// Bytes counted against a budget, given back when the charge is destroyed. Move-only.
class MemoryCharge {
 public:
  MemoryCharge() = default;
  // Charges the thread's current budget, if any, with the bytes of a dtype x shape tensor.
  MemoryCharge(uint64_t bytes, DType dtype, const Shape& shape);
  MemoryCharge(MemoryCharge&& other) noexcept;
  MemoryCharge& operator=(MemoryCharge&& other) noexcept;
  ~MemoryCharge();

 private:
  std::shared_ptr<MemoryBudget> budget_;
  uint64_t bytes_ = 0;
};

// The default limit: the memory free now (MemAvailable in /proc/meminfo), at most three quarters
// of the machine's physical memory (8 GiB where the system does not say how much it has).
uint64_t default_memory_limit();

// "4096", "512K", "4G", "1TiB": bytes, or a whole number of K, M, G or T (powers of 1024), which
// may be followed by "iB". Throws InvalidArgument for anything else, zero, or more than 2^64 - 1.
uint64_t parse_byte_size(std::string_view text);

// The bytes of a dtype x shape tensor; throws (shape_numel) for a negative dim or more than 2^40
// elements, so the product never overflows.
uint64_t tensor_bytes(DType dtype, const Shape& shape);
// "[4, 8]".
std::string describe_shape(const Shape& shape);
// "float32 [4, 8]".
std::string describe_tensor(DType dtype, const Shape& shape);
// "1.5 GiB (1610612736 bytes)".
std::string describe_bytes(uint64_t bytes);

}  // namespace wgml
