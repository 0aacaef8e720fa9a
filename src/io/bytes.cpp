#include "io/bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "wgml/error.h"

namespace wgml::io {
namespace {

struct Mapping {
  void* addr = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (addr) munmap(addr, size);
  }
};

[[noreturn]] void fail_io(const std::string& path, const char* what) {
  throw Error(ErrorCode::Io, path + ": cannot " + what + ": " + std::strerror(errno));
}

}  // namespace

ByteView map_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail_io(path, "open");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    fail_io(path, "stat");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(ErrorCode::Io, path + ": not a regular file");
  }
  auto mapping = std::make_shared<Mapping>();
  mapping->size = static_cast<size_t>(st.st_size);
  if (mapping->size > 0) {
    mapping->addr = ::mmap(nullptr, mapping->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapping->addr == MAP_FAILED) {
      mapping->addr = nullptr;
      ::close(fd);
      fail_io(path, "map");
    }
  }
  ::close(fd);
  const auto* data = static_cast<const uint8_t*>(mapping->addr);
  return {mapping, data, mapping->size};
}

ByteView own_bytes(std::vector<uint8_t> bytes) {
  auto owner = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  return {owner, owner->data(), owner->size()};
}

uint32_t read_u32_le(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

uint64_t read_u64_le(const uint8_t* p) { return uint64_t{read_u32_le(p)} | uint64_t{read_u32_le(p + 4)} << 32; }

}  // namespace wgml::io
