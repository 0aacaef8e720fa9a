#include "kernel/uniform_layout.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/half.h"

namespace wgml::kernel {

namespace {

uint32_t round_up(uint32_t v, uint32_t m) { return (v + m - 1) / m * m; }

bool is_scalar_name(const std::string& s) { return s == "u32" || s == "i32" || s == "f32" || s == "f16"; }

std::string strip(const std::string& s) {
  const size_t a = s.find_first_not_of(' ');
  const size_t b = s.find_last_not_of(' ');
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// "vecN<S>" or "S".
bool parse_element(const std::string& text, UniformType& out) {
  if (is_scalar_name(text)) {
    out.scalar = text;
    out.lanes = 1;
    return true;
  }
  if (text.size() == 9 && text.compare(0, 3, "vec") == 0 && text[4] == '<' && text[8] == '>' && text[3] >= '2' &&
      text[3] <= '4' && is_scalar_name(text.substr(5, 3))) {
    out.scalar = text.substr(5, 3);
    out.lanes = text[3] - '0';
    return true;
  }
  return false;
}

}  // namespace

uint32_t UniformType::element_align() const { return scalar_size() * (lanes == 1 ? 1 : lanes == 2 ? 2 : 4); }
uint32_t UniformType::element_size() const { return scalar_size() * static_cast<uint32_t>(lanes); }
uint32_t UniformType::array_stride() const { return round_up(element_size(), element_align()); }
uint32_t UniformType::align() const { return array_count ? round_up(element_align(), 16) : element_align(); }
uint32_t UniformType::size() const { return array_count ? array_stride() * static_cast<uint32_t>(array_count) : element_size(); }

std::string UniformType::wgsl() const {
  const std::string element = lanes == 1 ? scalar : "vec" + std::to_string(lanes) + "<" + scalar + ">";
  return array_count ? "array<" + element + ", " + std::to_string(array_count) + ">" : element;
}

std::string parse_uniform_type(const std::string& raw, UniformType& out) {
  const std::string text = strip(raw);
  const std::string expected = "expected u32, i32, f32, f16, vecN<scalar> or array<element, N>";
  if (text.compare(0, 6, "array<") != 0 || text.back() != '>') {
    out.array_count = 0;
    return parse_element(text, out) ? "" : expected + ", found \"" + raw + "\"";
  }
  const size_t comma = text.rfind(',');
  if (comma == std::string::npos) return expected + ", found \"" + raw + "\"";
  if (!parse_element(strip(text.substr(6, comma - 6)), out)) return expected + ", found \"" + raw + "\"";
  const std::string count = strip(text.substr(comma + 1, text.size() - comma - 2));
  if (count.empty() || count.size() > 6 || count.find_first_not_of("0123456789") != std::string::npos || std::stoll(count) == 0)
    return "array length must be a positive integer, found \"" + count + "\"";
  out.array_count = std::stoll(count);
  if (round_up(out.element_size(), out.element_align()) % 16 != 0)
    return "an array in a uniform struct needs elements of 16 bytes (vec4<u32>, vec4<f32>, ...), found \"" + raw + "\"";
  return "";
}

bool is_storage_element_type(const std::string& text) {
  UniformType parsed;
  return parse_uniform_type(text, parsed).empty() && parsed.array_count == 0;
}

std::string element_scalar(const std::string& text) {
  UniformType parsed;
  return parse_uniform_type(text, parsed).empty() ? parsed.scalar : "";
}

uint32_t lay_out_uniform(std::vector<UniformField>& fields) {
  uint32_t offset = 0, struct_align = 4;
  for (auto& field : fields) {
    offset = round_up(offset, field.type.align());
    field.offset = offset;
    offset += field.type.size();
    struct_align = std::max(struct_align, field.type.align());
  }
  return round_up(offset, struct_align);
}

namespace {

std::string write_scalar(const std::string& scalar, const Value& v, uint8_t* at) {
  if (!v.is_number()) return std::string("expected a number, found a ") + kind_name(v.kind());
  if (scalar == "u32" || scalar == "i32") {
    if (!v.is_int()) return "expected an int for " + scalar + ", found " + v.to_text();
    const int64_t i = v.as_int();
    const int64_t lo = scalar == "u32" ? 0 : std::numeric_limits<int32_t>::min();
    const int64_t hi = scalar == "u32" ? int64_t{0xffffffff} : std::numeric_limits<int32_t>::max();
    if (i < lo || i > hi) return std::to_string(i) + " does not fit in " + scalar;
    const uint32_t bits = static_cast<uint32_t>(i);
    std::memcpy(at, &bits, 4);
    return "";
  }
  const float f = static_cast<float>(v.as_number());
  if (scalar == "f32") {
    std::memcpy(at, &f, 4);
  } else {
    const uint16_t h = float_to_f16(f);
    std::memcpy(at, &h, 2);
  }
  return "";
}

std::string write_element(const UniformType& type, const Value& v, uint8_t* at) {
  if (type.lanes == 1) return write_scalar(type.scalar, v, at);
  if (!v.is_list() || v.as_list().size() != static_cast<size_t>(type.lanes))
    return "expected a list of " + std::to_string(type.lanes) + " numbers, found " + v.repr();
  for (int lane = 0; lane < type.lanes; ++lane) {
    std::string error = write_scalar(type.scalar, v.as_list()[static_cast<size_t>(lane)], at + lane * type.scalar_size());
    if (!error.empty()) return "lane " + std::to_string(lane) + ": " + error;
  }
  return "";
}

// An array of vectors given as one flat list of numbers, element after element (the dims of a
// shape packed four to a vec4<u32>).
std::string write_flat_array(const UniformField& field, const List& numbers, uint8_t* at) {
  const auto lanes = static_cast<size_t>(field.type.lanes);
  for (size_t i = 0; i < numbers.size(); ++i) {
    std::string error = write_scalar(field.type.scalar, numbers[i],
                                     at + (i / lanes) * field.type.array_stride() + (i % lanes) * field.type.scalar_size());
    if (!error.empty()) return "element " + std::to_string(i / lanes) + " lane " + std::to_string(i % lanes) + ": " + error;
  }
  return "";
}

}  // namespace

std::string write_uniform(const UniformField& field, const Value& value, std::vector<uint8_t>& bytes) {
  uint8_t* at = bytes.data() + field.offset;
  if (!field.type.array_count) return write_element(field.type, value, at);
  if (field.type.lanes > 1 && value.is_list() &&
      value.as_list().size() == static_cast<size_t>(field.type.array_count * field.type.lanes) &&
      std::all_of(value.as_list().begin(), value.as_list().end(), [](const Value& v) { return v.is_number(); }))
    return write_flat_array(field, value.as_list(), at);
  if (!value.is_list() || value.as_list().size() != static_cast<size_t>(field.type.array_count))
    return "expected a list of " + std::to_string(field.type.array_count) + " elements, found " + value.repr();
  for (size_t i = 0; i < value.as_list().size(); ++i) {
    std::string error = write_element(field.type, value.as_list()[i], at + i * field.type.array_stride());
    if (!error.empty()) return "element " + std::to_string(i) + ": " + error;
  }
  return "";
}

}  // namespace wgml::kernel
