#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <vector>

#include "bindings.h"
#include "wgml/error.h"

namespace wgml::python {
namespace {

using Bytes = nb::ndarray<const uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

DType dtype_named(const std::string& name) {
  if (std::optional<DType> dtype = dtype_from_name(name)) return *dtype;
  throw Error(ErrorCode::InvalidArgument, "dtype '" + name + "' is not one wgml tensors hold");
}

Tensor tensor_from_python(nb::handle item) {
  const auto [name, dims, bytes] = nb::cast<std::tuple<std::string, std::vector<int64_t>, Bytes>>(item);
  const Shape shape(dims);
  const DType dtype = dtype_named(name);
  for (int64_t d : shape)
    if (d < 0) throw Error(ErrorCode::InvalidArgument, "a tensor dimension of " + std::to_string(d));
  const size_t expected = static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype);
  if (bytes.nbytes() != expected)
    throw Error(ErrorCode::InvalidArgument,
                std::to_string(bytes.nbytes()) + " bytes for a " + name + " tensor of " + std::to_string(expected) + " bytes");
  return Tensor::from_bytes(dtype, shape, bytes.data());
}

// numpy's dtype for a wgml dtype; bfloat16 travels as its uint16 bits (numpy has no bfloat16).
nb::dlpack::dtype numpy_dtype(DType dtype) {
  switch (dtype) {
    case DType::UInt8:
      return nb::dtype<uint8_t>();
    case DType::Int8:
      return nb::dtype<int8_t>();
    case DType::Int16:
      return nb::dtype<int16_t>();
    case DType::Int32:
      return nb::dtype<int32_t>();
    case DType::Int64:
      return nb::dtype<int64_t>();
    case DType::Float16:
      return {static_cast<uint8_t>(nb::dlpack::dtype_code::Float), 16, 1};
    case DType::BFloat16:
      return nb::dtype<uint16_t>();
    case DType::Float32:
      return nb::dtype<float>();
    case DType::Float64:
      return nb::dtype<double>();
    case DType::Bool:
      return nb::dtype<bool>();
    case DType::UInt32:
      return nb::dtype<uint32_t>();
  }
  throw Error(ErrorCode::Unsupported, "an output of dtype " + std::string(dtype_name(dtype)));
}

nb::object tensor_to_python(Tensor&& tensor) {
  auto* owned = new Tensor(std::move(tensor));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  std::vector<size_t> shape(owned->shape().begin(), owned->shape().end());
  nb::ndarray<nb::numpy> array(owned->mutable_data(), shape.size(), shape.data(), owner, nullptr, numpy_dtype(owned->dtype()));
  return nb::make_tuple(std::string(dtype_name(owned->dtype())), array.cast());
}

}  // namespace

Value value_from_python(nb::handle item) {
  // bool before int: Python's bool is an int.
  if (PyBool_Check(item.ptr())) return nb::cast<bool>(item);
  if (PyLong_Check(item.ptr())) return nb::cast<int64_t>(item);
  if (PyFloat_Check(item.ptr())) return nb::cast<double>(item);
  return tensor_from_python(item);
}

void materialize(Value& value) {
  if (auto* tensor = std::get_if<Tensor>(&value)) tensor->mutable_data();
}

nb::object value_to_python(Value&& value) {
  if (auto* tensor = std::get_if<Tensor>(&value)) return tensor_to_python(std::move(*tensor));
  if (const auto* i = std::get_if<int64_t>(&value)) return nb::int_(*i);
  if (const auto* f = std::get_if<double>(&value)) return nb::float_(*f);
  return nb::bool_(std::get<bool>(value));
}

}  // namespace wgml::python
