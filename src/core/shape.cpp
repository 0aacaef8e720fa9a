#include "wgml/shape.h"

#include <stdexcept>
#include <string>

namespace wgml {

int64_t& Shape::at(size_t i) {
  if (i >= size_) throw std::out_of_range("shape dim " + std::to_string(i) + " of " + std::to_string(size_));
  return data_[i];
}

const int64_t& Shape::at(size_t i) const { return const_cast<Shape*>(this)->at(i); }

void Shape::grow(size_t count) {
  const size_t capacity = std::max(count, 2 * capacity_);
  auto* bigger = new int64_t[capacity];
  std::copy(begin(), end(), bigger);
  const size_t size = size_;
  release();
  data_ = bigger;
  capacity_ = capacity;
  size_ = size;
}

void Shape::grow_discarding(size_t count) {
  release();
  data_ = new int64_t[count];
  capacity_ = count;
}

size_t Shape::open_gap(const_iterator at, size_t count) {
  const auto offset = static_cast<size_t>(at - data_);
  reserve(size_ + count);
  std::copy_backward(data_ + offset, data_ + size_, data_ + size_ + count);
  size_ += count;
  return offset;
}

Shape::iterator Shape::insert(const_iterator at, size_t count, int64_t value) {
  const size_t offset = open_gap(at, count);
  std::fill(data_ + offset, data_ + offset + count, value);
  return data_ + offset;
}

Shape::iterator Shape::erase(const_iterator first, const_iterator last) {
  const auto offset = static_cast<size_t>(first - data_);
  const auto count = static_cast<size_t>(last - first);
  std::copy(data_ + offset + count, data_ + size_, data_ + offset);
  size_ -= count;
  return data_ + offset;
}

}  // namespace wgml
