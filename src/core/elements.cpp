#include "core/elements.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "core/half.h"

namespace wgml {
namespace {

template <class T>
T read(const uint8_t* base, int64_t i) {
  T v;
  std::memcpy(&v, base + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

template <class T>
void write(uint8_t* base, int64_t i, T v) {
  std::memcpy(base + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}

int64_t double_to_int64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

}  // namespace

double load_as_double(DType t, const uint8_t* base, int64_t i) {
  switch (t) {
    case DType::UInt8:
      return read<uint8_t>(base, i);
    case DType::Int8:
      return read<int8_t>(base, i);
    case DType::Int16:
      return read<int16_t>(base, i);
    case DType::Int32:
      return read<int32_t>(base, i);
    case DType::Int64:
      return static_cast<double>(read<int64_t>(base, i));
    case DType::Float16:
      return f16_to_float(read<uint16_t>(base, i));
    case DType::BFloat16:
      return bf16_to_float(read<uint16_t>(base, i));
    case DType::Float32:
      return read<float>(base, i);
    case DType::Float64:
      return read<double>(base, i);
    case DType::Bool:
      return read<uint8_t>(base, i) != 0 ? 1.0 : 0.0;
    case DType::UInt32:
      return read<uint32_t>(base, i);
  }
  return 0;
}

int64_t load_as_int64(DType t, const uint8_t* base, int64_t i) {
  switch (t) {
    case DType::UInt8:
      return read<uint8_t>(base, i);
    case DType::Int8:
      return read<int8_t>(base, i);
    case DType::Int16:
      return read<int16_t>(base, i);
    case DType::Int32:
      return read<int32_t>(base, i);
    case DType::Int64:
      return read<int64_t>(base, i);
    case DType::Bool:
      return read<uint8_t>(base, i) != 0 ? 1 : 0;
    case DType::UInt32:
      return read<uint32_t>(base, i);
    default:
      return double_to_int64(load_as_double(t, base, i));
  }
}

void store_double(DType t, uint8_t* base, int64_t i, double v) {
  switch (t) {
    case DType::Float16:
      write<uint16_t>(base, i, float_to_f16(static_cast<float>(v)));
      return;
    case DType::BFloat16:
      write<uint16_t>(base, i, float_to_bf16(static_cast<float>(v)));
      return;
    case DType::Float32:
      write<float>(base, i, static_cast<float>(v));
      return;
    case DType::Float64:
      write<double>(base, i, v);
      return;
    case DType::Bool:
      write<uint8_t>(base, i, v != 0 ? 1 : 0);
      return;
    default:
      store_int64(t, base, i, double_to_int64(v));
      return;
  }
}

void store_int64(DType t, uint8_t* base, int64_t i, int64_t v) {
  const auto u = static_cast<uint64_t>(v);
  switch (t) {
    case DType::UInt8:
      write<uint8_t>(base, i, static_cast<uint8_t>(u));
      return;
    case DType::Int8:
      write<int8_t>(base, i, static_cast<int8_t>(u));
      return;
    case DType::Int16:
      write<int16_t>(base, i, static_cast<int16_t>(u));
      return;
    case DType::Int32:
      write<int32_t>(base, i, static_cast<int32_t>(u));
      return;
    case DType::Int64:
      write<int64_t>(base, i, v);
      return;
    case DType::UInt32:
      write<uint32_t>(base, i, static_cast<uint32_t>(u));
      return;
    case DType::Bool:
      write<uint8_t>(base, i, v != 0 ? 1 : 0);
      return;
    default:
      store_double(t, base, i, static_cast<double>(v));
      return;
  }
}

Tensor cast(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return Tensor::from_bytes(dtype, x.shape(), x.data());
  Tensor out(dtype, x.shape());
  const uint8_t* src = x.data();
  uint8_t* dst = out.mutable_data();
  const bool integral = is_integral(x.dtype()) || x.dtype() == DType::Bool;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (integral)
      store_int64(dtype, dst, i, load_as_int64(x.dtype(), src, i));
    else
      store_double(dtype, dst, i, load_as_double(x.dtype(), src, i));
  }
  return out;
}

std::vector<float> to_floats(const Tensor& x) {
  std::vector<float> out(static_cast<size_t>(x.numel()));
  to_floats(x, out.data());
  return out;
}

void to_floats(const Tensor& x, float* out) {
  const int64_t n = x.numel();
  if (n == 0) return;
  const uint8_t* data = x.data();
  const auto* halves = reinterpret_cast<const uint16_t*>(data);
  switch (x.dtype()) {
    case DType::Float32:
      std::memcpy(out, data, static_cast<size_t>(n) * sizeof(float));
      break;
    case DType::BFloat16:
      for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_float(halves[i]);
      break;
    case DType::Float16:
      for (int64_t i = 0; i < n; ++i) out[i] = f16_to_float(halves[i]);
      break;
    default:
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(load_as_double(x.dtype(), data, i));
  }
}

int64_t greedy_index(std::span<const float> values) {
  if (values.empty()) return -1;
  size_t best = 0;
  for (size_t i = 1; i < values.size() && !std::isnan(values[best]); ++i)
    if (std::isnan(values[i]) || values[i] > values[best]) best = i;
  return static_cast<int64_t>(best);
}

}  // namespace wgml
