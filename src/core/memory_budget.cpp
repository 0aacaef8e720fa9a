#include "core/memory_budget.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <utility>

#include "wgml/error.h"

namespace wgml {
namespace {

thread_local std::shared_ptr<MemoryBudget> active_budget;

}  // namespace

void MemoryBudget::reserve(uint64_t bytes, DType dtype, const Shape& shape) {
  uint64_t before = in_use_.load();
  for (;;) {
    if (bytes > limit_ || before > limit_ - bytes)
      throw Error(ErrorCode::ResourceLimit, "allocating " + describe_tensor(dtype, shape) + " (" + describe_bytes(bytes) +
                                                ") with " + describe_bytes(before) +
                                                " already in use would pass the memory limit of " + describe_bytes(limit_) +
                                                " (SessionOptions::max_memory_bytes, --max-memory)");
    if (in_use_.compare_exchange_weak(before, before + bytes)) return;
  }
}

MemoryBudget::Scope::Scope(std::shared_ptr<MemoryBudget> budget) : previous_(std::move(active_budget)) {
  active_budget = std::move(budget);
}

MemoryBudget::Scope::~Scope() { active_budget = std::move(previous_); }

const std::shared_ptr<MemoryBudget>& MemoryBudget::current() { return active_budget; }

MemoryCharge::MemoryCharge(uint64_t bytes, DType dtype, const Shape& shape) : budget_(MemoryBudget::current()), bytes_(bytes) {
  if (budget_) budget_->reserve(bytes, dtype, shape);
}

MemoryCharge::MemoryCharge(MemoryCharge&& other) noexcept
    : budget_(std::move(other.budget_)), bytes_(std::exchange(other.bytes_, 0)) {}

MemoryCharge& MemoryCharge::operator=(MemoryCharge&& other) noexcept {
  if (this != &other) {
    if (budget_) budget_->release(bytes_);
    budget_ = std::move(other.budget_);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

MemoryCharge::~MemoryCharge() {
  if (budget_) budget_->release(bytes_);
}

namespace {

// MemAvailable from /proc/meminfo: what the kernel can give without swapping; none off Linux.
std::optional<uint64_t> available_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  while (meminfo >> key >> kib) {
    if (key == "MemAvailable:") return kib * 1024;
    meminfo.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return std::nullopt;
}

}  // namespace

uint64_t default_memory_limit() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  const uint64_t physical =
      pages > 0 && page_size > 0 ? static_cast<uint64_t>(pages) / 4 * 3 * static_cast<uint64_t>(page_size) : uint64_t{8} << 30;
  // Memory other processes already hold is not ours to fill: past what is free the machine swaps.
  const std::optional<uint64_t> available = available_memory();
  return available ? std::min(physical, *available) : physical;
}

uint64_t parse_byte_size(std::string_view text) {
  const auto invalid = [&] {
    return Error(ErrorCode::InvalidArgument, "'" + std::string(text) +
                                                 "': expected a size in bytes, such as 4096, 512K, 4G or 1TiB (K, M, G, T: "
                                                 "powers of 1024), above zero");
  };
  size_t digits = 0;
  uint64_t value = 0;
  for (; digits < text.size() && text[digits] >= '0' && text[digits] <= '9'; ++digits)
    if (__builtin_mul_overflow(value, 10, &value) || __builtin_add_overflow(value, uint64_t(text[digits] - '0'), &value))
      throw invalid();
  std::string_view suffix = text.substr(digits);
  unsigned shift = 0;
  if (!suffix.empty() && suffix != "B") {
    static constexpr std::string_view kUnits = "KMGT";
    const size_t unit = kUnits.find(suffix.front());
    if (unit == std::string_view::npos || (suffix.size() > 1 && suffix.substr(1) != "iB")) throw invalid();
    shift = 10 * static_cast<unsigned>(unit + 1);
  }
  if (digits == 0 || value == 0 || value > (UINT64_MAX >> shift)) throw invalid();
  return value << shift;
}

uint64_t tensor_bytes(DType dtype, const Shape& shape) {
  // shape_numel keeps the element count below 2^40, so the product cannot overflow.
  return static_cast<uint64_t>(shape_numel(shape)) * dtype_size(dtype);
}

std::string describe_shape(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

std::string describe_tensor(DType dtype, const Shape& shape) {
  return std::string(dtype_name(dtype)) + " " + describe_shape(shape);
}

std::string describe_bytes(uint64_t bytes) {
  static const char* const kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0) return std::to_string(bytes) + " bytes";
  char text[64];
  std::snprintf(text, sizeof text, "%.1f %s (%llu bytes)", value, kUnits[unit], static_cast<unsigned long long>(bytes));
  return text;
}

}  // namespace wgml
