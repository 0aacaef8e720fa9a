#include "frontend/safetensors.h"

#include <nlohmann/json.hpp>

#include "wgml/error.h"

namespace wgml::frontend {
namespace {

constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;

[[noreturn]] void fail(const std::string& path, const std::string& msg) {
  throw Error(ErrorCode::InvalidFormat, path + ": " + msg);
}

}  // namespace

ir::NamedData read_safetensors(const io::ByteView& file, const std::string& path) {
  if (file.size < 8) fail(path, "expected an 8-byte header length, found a shorter file");
  const uint64_t header_size = io::read_u64_le(file.data);
  if (header_size > kMaxHeaderBytes || !file.contains(8, header_size))
    fail(path, "byte 0: header length " + std::to_string(header_size) + " exceeds the file or the 100 MiB cap");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(file.data + 8, file.data + 8 + header_size);
  } catch (const nlohmann::json::exception& e) {
    fail(path, std::string("byte 8: header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) fail(path, "byte 8: expected a JSON object header");
  const uint64_t data_begin = 8 + header_size;
  ir::NamedData out;
  for (const auto& [key, entry] : header.items()) {
    if (key == "__metadata__") continue;
    const auto& offsets = entry.is_object() ? entry.value("data_offsets", nlohmann::json()) : nlohmann::json();
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
      fail(path, "tensor '" + key + "': expected data_offsets [begin, end]");
    const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    // begin is checked against the file first: data_begin + begin must not wrap around.
    if (end < begin || begin > file.size || !file.contains(data_begin + begin, end - begin))
      fail(path, "tensor '" + key + "': data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                     ") lie outside the file");
    out[key] = file.sub(data_begin + begin, end - begin);
  }
  return out;
}

}  // namespace wgml::frontend
