#pragma once
// wgml::Shape: a tensor's dims. A vector of int64 that keeps up to kInlineDims dims in itself, so
// that making or copying the shape of a tensor of ordinary rank touches no heap (a decode step
// makes hundreds of tensors: outputs, views, host arithmetic). Beyond that rank it grows on the
// heap like std::vector. It converts to and from std::vector<int64_t>.
#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <vector>

namespace wgml {

class Shape {
 public:
  using value_type = int64_t;
  using size_type = size_t;
  using difference_type = ptrdiff_t;
  using reference = int64_t&;
  using const_reference = const int64_t&;
  using pointer = int64_t*;
  using const_pointer = const int64_t*;
  using iterator = int64_t*;
  using const_iterator = const int64_t*;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;
  static constexpr size_t kInlineDims = 8;

  Shape() noexcept {}
  Shape(std::initializer_list<int64_t> dims) { assign(dims.begin(), dims.end()); }
  explicit Shape(size_t count, int64_t value = 0) { assign(count, value); }
  template <std::input_iterator It>
  Shape(It first, It last) {
    assign(first, last);
  }
  Shape(const std::vector<int64_t>& dims) { assign(dims.begin(), dims.end()); }  // NOLINT: implicit by design
  Shape(const Shape& other) { assign(other.begin(), other.end()); }
  Shape(Shape&& other) noexcept { take(other); }
  Shape& operator=(const Shape& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  Shape& operator=(Shape&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  Shape& operator=(std::initializer_list<int64_t> dims) {
    assign(dims.begin(), dims.end());
    return *this;
  }
  ~Shape() { release(); }

  operator std::vector<int64_t>() const { return {begin(), end()}; }  // NOLINT: implicit by design

  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  size_t capacity() const noexcept { return capacity_; }
  int64_t* data() noexcept { return data_; }
  const int64_t* data() const noexcept { return data_; }
  iterator begin() noexcept { return data_; }
  iterator end() noexcept { return data_ + size_; }
  const_iterator begin() const noexcept { return data_; }
  const_iterator end() const noexcept { return data_ + size_; }
  const_iterator cbegin() const noexcept { return data_; }
  const_iterator cend() const noexcept { return data_ + size_; }
  reverse_iterator rbegin() noexcept { return reverse_iterator(end()); }
  reverse_iterator rend() noexcept { return reverse_iterator(begin()); }
  const_reverse_iterator rbegin() const noexcept { return const_reverse_iterator(end()); }
  const_reverse_iterator rend() const noexcept { return const_reverse_iterator(begin()); }
  int64_t& operator[](size_t i) noexcept { return data_[i]; }
  const int64_t& operator[](size_t i) const noexcept { return data_[i]; }
  int64_t& at(size_t i);
  const int64_t& at(size_t i) const;
  int64_t& front() noexcept { return data_[0]; }
  const int64_t& front() const noexcept { return data_[0]; }
  int64_t& back() noexcept { return data_[size_ - 1]; }
  const int64_t& back() const noexcept { return data_[size_ - 1]; }

  void reserve(size_t count) {
    if (count > capacity_) grow(count);
  }
  void clear() noexcept { size_ = 0; }
  void resize(size_t count, int64_t value = 0) {
    reserve(count);
    if (count > size_) std::fill(data_ + size_, data_ + count, value);
    size_ = count;
  }
  void push_back(int64_t value) {
    if (size_ == capacity_) grow(2 * capacity_);
    data_[size_++] = value;
  }
  int64_t& emplace_back(int64_t value) {
    push_back(value);
    return back();
  }
  void pop_back() noexcept { --size_; }

  void assign(size_t count, int64_t value) {
    size_ = 0;
    resize(count, value);
  }
  template <std::input_iterator It>
  void assign(It first, It last) {
    if constexpr (std::forward_iterator<It>) {
      const auto count = static_cast<size_t>(std::distance(first, last));
      // A range inside this shape is never longer than it, so it is not moved before it is read.
      if (count > capacity_) grow_discarding(count);
      std::copy(first, last, data_);
      size_ = count;
    } else {
      size_ = 0;
      for (; first != last; ++first) push_back(*first);
    }
  }
  void assign(std::initializer_list<int64_t> dims) { assign(dims.begin(), dims.end()); }

  iterator insert(const_iterator at, int64_t value) { return insert(at, size_t{1}, value); }
  iterator insert(const_iterator at, size_t count, int64_t value);
  template <std::input_iterator It>
  iterator insert(const_iterator at, It first, It last) {
    const Shape values(first, last);  // the range may lie in this shape, which opening a gap moves
    const size_t offset = open_gap(at, values.size());
    std::copy(values.begin(), values.end(), data_ + offset);
    return data_ + offset;
  }
  iterator insert(const_iterator at, std::initializer_list<int64_t> values) { return insert(at, values.begin(), values.end()); }
  iterator erase(const_iterator at) { return erase(at, at + 1); }
  iterator erase(const_iterator first, const_iterator last);
  void swap(Shape& other) noexcept {
    Shape held(std::move(other));
    other = std::move(*this);
    *this = std::move(held);
  }

  friend bool operator==(const Shape& a, const Shape& b) noexcept {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend std::strong_ordering operator<=>(const Shape& a, const Shape& b) noexcept {
    return std::lexicographical_compare_three_way(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  bool on_heap() const noexcept { return data_ != inline_; }
  void release() noexcept {
    if (on_heap()) delete[] data_;
    data_ = inline_;
    capacity_ = kInlineDims;
    size_ = 0;
  }
  // Moves `other`'s dims here (its heap block, or a copy of its inline dims); `other` is left empty.
  void take(Shape& other) noexcept {
    if (other.on_heap()) {
      data_ = other.data_;
      capacity_ = other.capacity_;
      other.data_ = other.inline_;
      other.capacity_ = kInlineDims;
    } else {
      std::memcpy(inline_, other.inline_, other.size_ * sizeof(int64_t));
    }
    size_ = other.size_;
    other.size_ = 0;
  }
  void grow(size_t count);
  void grow_discarding(size_t count);
  // Makes room for `count` dims at `at`; returns its index.
  size_t open_gap(const_iterator at, size_t count);

  int64_t* data_ = inline_;
  size_t size_ = 0;
  size_t capacity_ = kInlineDims;
  int64_t inline_[kInlineDims];
};

}  // namespace wgml
