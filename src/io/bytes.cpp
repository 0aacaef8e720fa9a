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

struct FileDescriptor {
  int fd = -1;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

[[noreturn]] void fail_io(const std::string& path, const char* what) {
  throw Error(ErrorCode::Io, path + ": cannot " + what + ": " + std::strerror(errno));
}

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "a file of another kind";
}

void require_regular(const std::string& path, const struct stat& st) {
  if (!S_ISREG(st.st_mode)) throw Error(ErrorCode::Io, path + ": expected a regular file, found " + file_kind(st.st_mode));
}

}  // namespace

ByteView map_file(const std::string& path) {
  // Checked before opening: opening a device may act on it, and a FIFO's open waits for a writer.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail_io(path, "open");
  require_regular(path, st);
  // O_NONBLOCK in case the path was swapped for a FIFO since; it does not affect mmap, the only use of fd.
  const FileDescriptor file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (file.fd < 0) fail_io(path, "open");
  if (::fstat(file.fd, &st) != 0) fail_io(path, "stat");
  require_regular(path, st);
  auto mapping = std::make_shared<Mapping>();
  mapping->size = static_cast<size_t>(st.st_size);
  if (mapping->size > 0) {
    mapping->addr = ::mmap(nullptr, mapping->size, PROT_READ, MAP_PRIVATE, file.fd, 0);
    if (mapping->addr == MAP_FAILED) {
      mapping->addr = nullptr;
      fail_io(path, "map");
    }
  }
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
