#pragma once
// Read-only byte ranges that keep their backing storage (a mapped file, a vector) alive.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace wgml::io {

struct ByteView {
  std::shared_ptr<const void> owner;
  const uint8_t* data = nullptr;
  size_t size = 0;

  // A sub-range; the caller has checked offset + length <= size.
  ByteView sub(size_t offset, size_t length) const { return {owner, data + offset, length}; }
  bool contains(uint64_t offset, uint64_t length) const { return offset <= size && length <= size - offset; }
};

// Maps the whole file read-only. Throws wgml::Error(Io) naming the path.
ByteView map_file(const std::string& path);
ByteView own_bytes(std::vector<uint8_t> bytes);

uint32_t read_u32_le(const uint8_t* p);
uint64_t read_u64_le(const uint8_t* p);

}  // namespace wgml::io
