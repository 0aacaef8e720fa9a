#include "io/npy.h"

#include <cstring>
#include <fstream>

#include "io/bytes.h"
#include "wgml/error.h"

namespace wgml::io {
namespace {

struct Descr {
  const char* code;
  DType dtype;
};

constexpr Descr kDescrs[] = {
    {"<f4", DType::Float32}, {"<f2", DType::Float16}, {"<f8", DType::Float64},  {"<i8", DType::Int64},
    {"<i4", DType::Int32},   {"<i2", DType::Int16},   {"|i1", DType::Int8},     {"|u1", DType::UInt8},
    {"<u4", DType::UInt32},  {"|b1", DType::Bool},    {"<u2", DType::BFloat16},
};

[[noreturn]] void fail(const std::string& path, const std::string& msg) {
  throw Error(ErrorCode::InvalidArgument, path + ": " + msg);
}

// The value of 'key' in the header's Python dict literal: a quoted string, True, False or a tuple.
// Parsed by hand: std::regex backtracks and recurses on long untrusted headers.
std::string header_field(const std::string& header, const std::string& key, const std::string& path) {
  const std::string quoted = "'" + key + "'";
  size_t at = header.find(quoted);
  if (at == std::string::npos) fail(path, "npy header lacks '" + key + "'");
  at = header.find_first_not_of(' ', at + quoted.size());
  if (at == std::string::npos || header[at] != ':') fail(path, "npy header: expected ':' after '" + key + "'");
  at = header.find_first_not_of(' ', at + 1);
  if (at == std::string::npos) fail(path, "npy header: '" + key + "' has no value");
  const char open = header[at];
  if (open == '\'' || open == '(') {
    const size_t end = header.find(open == '(' ? ')' : '\'', at + 1);
    if (end == std::string::npos) fail(path, "npy header: the value of '" + key + "' is not closed");
    return header.substr(at, end + 1 - at);
  }
  for (const std::string word : {"True", "False"})
    if (header.compare(at, word.size(), word) == 0) return word;
  fail(path, "npy header: expected a string, True, False or a tuple for '" + key + "'");
}

// "(2, 3)", "(3,)" or "()".
Shape parse_shape(const std::string& tuple, const std::string& path) {
  if (tuple.front() != '(' || tuple.find_first_not_of("0123456789, ", 1) != tuple.size() - 1)
    fail(path, "npy shape " + tuple + ": expected a tuple of non-negative integers");
  Shape shape;
  for (size_t at = tuple.find_first_of("0123456789"); at != std::string::npos; at = tuple.find_first_of("0123456789", at)) {
    const size_t end = tuple.find_first_not_of("0123456789", at);
    if (end - at > 15) fail(path, "npy shape " + tuple + ": a dimension above 10^15");
    shape.push_back(std::stoll(tuple.substr(at, end - at)));
    at = end;
  }
  if (shape.size() > 32) fail(path, "npy shape has more than 32 dimensions");
  return shape;
}

}  // namespace

Tensor read_npy(const std::string& path, std::optional<DType> expected) { return parse_npy(map_file(path), path, expected); }

Tensor parse_npy(const ByteView& file, const std::string& path, std::optional<DType> expected) {
  if (file.size < 10 || std::memcmp(file.data, "\x93NUMPY", 6) != 0) fail(path, "byte 0: expected the .npy magic \"\\x93NUMPY\"");
  const uint8_t major = file.data[6];
  const size_t len_bytes = major == 1 ? 2 : 4;
  if (major < 1 || major > 3 || file.size < 8 + len_bytes) fail(path, "unsupported .npy version");
  const uint64_t header_len = len_bytes == 2 ? (file.data[8] | file.data[9] << 8) : read_u32_le(file.data + 8);
  const uint64_t data_offset = 8 + len_bytes + header_len;
  if (data_offset > file.size) fail(path, "the .npy header runs past the end of the file");
  const std::string header(reinterpret_cast<const char*>(file.data + 8 + len_bytes), header_len);
  std::string descr = header_field(header, "descr", path);
  descr = descr.substr(1, descr.size() - 2);
  if (header_field(header, "fortran_order", path) != "False")
    fail(path, "Fortran-ordered arrays are not supported; save with np.ascontiguousarray");
  const Shape shape = parse_shape(header_field(header, "shape", path), path);
  std::optional<DType> dtype;
  for (const Descr& d : kDescrs)
    if (descr == d.code) dtype = d.dtype;
  if (descr == "<u2" && expected != DType::BFloat16)
    fail(path, "uint16 arrays are read only as bfloat16 bits, for a bfloat16 input");
  if (!dtype) fail(path, "unsupported dtype '" + descr + "'");
  const uint64_t bytes = static_cast<uint64_t>(shape_numel(shape)) * dtype_size(*dtype);
  if (!file.contains(data_offset, bytes)) fail(path, "expected " + std::to_string(bytes) + " data bytes after the header");
  return Tensor::from_bytes(*dtype, shape, file.data + data_offset);
}

void write_npy(const std::string& path, const Tensor& tensor) {
  const char* code = nullptr;
  for (const Descr& d : kDescrs)
    if (d.dtype == tensor.dtype()) code = d.code;
  // Python tuple syntax: (), (3,), (2, 3).
  std::string shape = "(";
  for (int d = 0; d < tensor.rank(); ++d) shape += (d ? ", " : "") + std::to_string(tensor.dim(d));
  shape += tensor.rank() == 1 ? ",)" : ")";
  std::string header = "{'descr': '" + std::string(code) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error(ErrorCode::Io, path + ": cannot open for writing");
  const uint16_t len = static_cast<uint16_t>(header.size());
  out.write("\x93NUMPY\x01\x00", 8);
  out.put(static_cast<char>(len & 0xff));
  out.put(static_cast<char>(len >> 8));
  out << header;
  out.write(reinterpret_cast<const char*>(tensor.data()), static_cast<std::streamsize>(tensor.nbytes()));
  if (!out) throw Error(ErrorCode::Io, path + ": write failed");
}

}  // namespace wgml::io
