#include "frontend/onnx/tensor_proto.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <filesystem>

#include "core/elements.h"
#include "frontend/onnx/lowering.h"
#include "frontend/onnx/onnx_model.h"
#include "io/bytes.h"
#include "wgml/error.h"

namespace wgml::frontend::onnx {
namespace {

[[noreturn]] void bad(const TensorSource& s, const std::string& where, const std::string& what) {
  throw Error(ErrorCode::InvalidFormat, s.path + ": " + where + ": " + what);
}

Shape checked_dims(const pb::TensorProto& t, const TensorSource& s, const std::string& where) {
  Shape shape;
  for (int64_t d : t.dims()) {
    if (d < 0) bad(s, where, "expected dims >= 0, found " + std::to_string(d));
    shape.push_back(d);
  }
  try {
    shape_numel(shape);
  } catch (const Error&) {
    bad(s, where, "the dims describe more elements than a tensor can hold");
  }
  return shape;
}

std::string external_field(const pb::TensorProto& t, const std::string& key) {
  for (const pb::StringStringEntryProto& e : t.external_data())
    if (e.key() == key) return e.value();
  return "";
}

uint64_t parse_u64(const std::string& text, const TensorSource& s, const std::string& where, const std::string& key) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 19)
    bad(s, where, "external_data '" + key + "': expected a decimal number, found '" + text + "'");
  return std::stoull(text);
}

[[noreturn]] void unresolvable(const TensorSource& s, const std::string& where, const std::string& location,
                               const std::filesystem::path& path, const std::error_code& error) {
  throw Error(ErrorCode::Io, s.path + ": " + where + ": external_data 'location' '" + location + "': cannot resolve '" +
                                 path.string() + "': " + error.message());
}

// Component-wise: /models/a-b does not lie inside /models/a.
bool lies_inside(const std::filesystem::path& path, const std::filesystem::path& folder) {
  return std::mismatch(folder.begin(), folder.end(), path.begin(), path.end()).first == folder.end();
}

// The file at `location`, which must resolve, symbolic links followed, to a file inside the model folder.
io::ByteView external_file(const TensorSource& s, const std::string& where, const std::string& location) {
  ExternalFiles& files = *s.external_files;
  std::error_code error;
  if (files.folder.empty()) {
    const std::filesystem::path folder = s.directory.empty() ? "." : s.directory;
    files.folder = std::filesystem::canonical(folder, error);
    if (error) unresolvable(s, where, location, folder, error);
  }
  const std::filesystem::path joined = files.folder / location;
  const std::filesystem::path real = std::filesystem::canonical(joined, error);
  if (error) unresolvable(s, where, location, joined, error);
  if (!lies_inside(real, files.folder))
    bad(s, where,
        "external_data 'location' '" + location + "' resolves through a symbolic link to '" + real.string() +
            "', outside the model folder '" + files.folder.string() + "'");
  auto it = files.mapped.find(real);
  if (it != files.mapped.end()) return it->second;
  try {
    return files.mapped.emplace(real, io::map_file(real.string())).first->second;
  } catch (const Error& e) {  // a FIFO, a directory, a file that cannot be read: named with the tensor
    throw Error(e.code(), s.path + ": " + where + ": external_data 'location' '" + location + "': " + e.what());
  }
}

// External data lives in a file next to the model; paths may not leave that directory, by name or
// through a link.
io::ByteView external_bytes(const pb::TensorProto& t, const TensorSource& s, const std::string& where, uint64_t expected) {
  const std::string location = external_field(t, "location");
  const std::filesystem::path rel(location);
  if (location.empty() || rel.is_absolute())
    bad(s, where, "external_data 'location': expected a relative path, found '" + location + "'");
  for (const auto& part : rel)
    if (part == "..") bad(s, where, "external_data 'location' may not contain '..'");
  if (location.find('\0') != std::string::npos) bad(s, where, "external_data 'location' may not contain a NUL byte");
  const std::string offset_text = external_field(t, "offset");
  const std::string length_text = external_field(t, "length");
  const uint64_t offset = offset_text.empty() ? 0 : parse_u64(offset_text, s, where, "offset");
  const io::ByteView file = external_file(s, where, location);
  const uint64_t length =
      length_text.empty() ? file.size - std::min<uint64_t>(offset, file.size) : parse_u64(length_text, s, where, "length");
  if (!file.contains(offset, length))
    bad(s, where,
        "external data [" + std::to_string(offset) + ", +" + std::to_string(length) + ") lies outside '" + location + "' (" +
            std::to_string(file.size) + " bytes)");
  if (length != expected)
    bad(s, where, "expected " + std::to_string(expected) + " bytes of external data, found " + std::to_string(length));
  return file.sub(offset, length);
}

// Copies when the bytes are not aligned for the element type (kernels read elements in place).
Tensor view_or_copy(DType dtype, Shape shape, std::shared_ptr<const void> owner, const uint8_t* p) {
  if (reinterpret_cast<uintptr_t>(p) % dtype_size(dtype) == 0) return Tensor::view(dtype, std::move(shape), std::move(owner), p);
  return Tensor::from_bytes(dtype, std::move(shape), p);
}

template <class Field>
Tensor from_typed(DType dtype, Shape shape, const Field& field, const TensorSource& s, const std::string& where,
                  const char* field_name) {
  // Checked before allocating: the dims alone may promise more than the file holds.
  const int64_t count = shape_numel(shape);
  if (static_cast<int64_t>(field.size()) != count)
    bad(s, where, "expected " + std::to_string(count) + " values in " + field_name + ", found " + std::to_string(field.size()));
  Tensor out(dtype, std::move(shape));
  uint8_t* dst = out.mutable_data();
  for (int64_t i = 0; i < out.numel(); ++i) {
    const auto v = field.Get(static_cast<int>(i));
    if constexpr (std::is_floating_point_v<decltype(v)>)
      store_double(dtype, dst, i, v);
    else
      store_int64(dtype, dst, i, static_cast<int64_t>(v));
  }
  return out;
}

// int32_data holds float16/bfloat16 as their raw 16 bits.
Tensor from_half_bits(DType dtype, Shape shape, const pb::TensorProto& t, const TensorSource& s, const std::string& where) {
  const int64_t count = shape_numel(shape);
  if (t.int32_data_size() != count)
    bad(s, where, "expected " + std::to_string(count) + " values in int32_data, found " + std::to_string(t.int32_data_size()));
  Tensor out(dtype, std::move(shape));
  auto* dst = out.mutable_data_as<uint16_t>();
  for (int64_t i = 0; i < out.numel(); ++i) dst[i] = static_cast<uint16_t>(t.int32_data(static_cast<int>(i)));
  return out;
}

}  // namespace

Tensor tensor_from_proto(const pb::TensorProto& t, const TensorSource& s, const std::string& where) {
  const auto dtype = ir::dtype_from_onnx(t.data_type());
  if (!dtype) throw Error(ErrorCode::Unsupported, s.path + ": " + where + ": element type " + onnx_type_name(t.data_type()));
  if (t.has_segment()) throw Error(ErrorCode::Unsupported, s.path + ": " + where + ": segmented tensors");
  Shape shape = checked_dims(t, s, where);
  const uint64_t nbytes = static_cast<uint64_t>(shape_numel(shape)) * dtype_size(*dtype);
  if (t.data_location() == pb::TensorProto::EXTERNAL) {
    const io::ByteView bytes = external_bytes(t, s, where, nbytes);
    return view_or_copy(*dtype, std::move(shape), bytes.owner, bytes.data);
  }
  if (t.has_raw_data()) {
    if (t.raw_data().size() != nbytes)
      bad(s, where, "expected " + std::to_string(nbytes) + " bytes of raw_data, found " + std::to_string(t.raw_data().size()));
    const auto* p = reinterpret_cast<const uint8_t*>(t.raw_data().data());
    return view_or_copy(*dtype, std::move(shape), s.owner, p);
  }
  switch (*dtype) {
    case DType::Float32:
      return from_typed(*dtype, shape, t.float_data(), s, where, "float_data");
    case DType::Float64:
      return from_typed(*dtype, shape, t.double_data(), s, where, "double_data");
    case DType::Int64:
      return from_typed(*dtype, shape, t.int64_data(), s, where, "int64_data");
    case DType::UInt32:
      return from_typed(*dtype, shape, t.uint64_data(), s, where, "uint64_data");
    case DType::Float16:
    case DType::BFloat16:
      return from_half_bits(*dtype, shape, t, s, where);
    default:
      return from_typed(*dtype, shape, t.int32_data(), s, where, "int32_data");
  }
}

std::string onnx_type_name(int32_t elem_type) {
  if (pb::TensorProto::DataType_IsValid(elem_type))
    return pb::TensorProto::DataType_Name(static_cast<pb::TensorProto::DataType>(elem_type));
  return "unknown (" + std::to_string(elem_type) + ")";
}

std::optional<int8_t> scalar_type(DType t) {
  const int code = scalar_type_of(t);
  if (code < 0) return std::nullopt;
  return static_cast<int8_t>(code);
}

Tensor read_tensor_file(const std::string& path) { return parse_tensor_file(io::map_file(path), path); }

Tensor parse_tensor_file(const io::ByteView& file, const std::string& path) {
  auto proto = std::make_shared<pb::TensorProto>();
  if (file.size > INT_MAX || !proto->ParseFromArray(file.data, static_cast<int>(file.size)))
    throw Error(ErrorCode::InvalidFormat, path + ": expected a serialized ONNX TensorProto");
  const TensorSource source{path, std::filesystem::path(path).parent_path().string(), proto};
  return tensor_from_proto(*proto, source, "tensor '" + proto->name() + "'");
}

}  // namespace wgml::frontend::onnx
