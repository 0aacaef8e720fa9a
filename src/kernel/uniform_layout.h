#pragma once
// Packing of a spec's `params` struct into uniform-buffer bytes by WGSL's memory layout rules
// (WGSL spec, "Memory Layout"): with s the scalar size (4 for u32/i32/f32, 2 for f16), a scalar
// has alignment and size s, vec2 alignment 2s and size 2s, vec3 alignment 4s and size 3s, vec4
// alignment 4s and size 4s; an array in the uniform address space must have a stride that is a
// multiple of 16 (so its elements are 16-byte vectors) and an alignment of at least 16. Members sit at the next offset aligned to
// their alignment; the struct's size rounds up to its largest member alignment.
#include <cstdint>
#include <string>
#include <vector>

#include "kernel/value.h"

namespace wgml::kernel {

struct UniformType {
  std::string scalar;       // u32, i32, f32, f16
  int lanes = 1;            // 1 (scalar) or 2..4 (vecN)
  int64_t array_count = 0;  // 0: not an array

  uint32_t scalar_size() const { return scalar == "f16" ? 2 : 4; }
  uint32_t element_align() const;  // of the scalar or vector
  uint32_t element_size() const;
  uint32_t align() const;  // in the uniform address space
  uint32_t size() const;
  uint32_t array_stride() const;
  std::string wgsl() const;
};

// Parses "u32", "vec4<f32>", "array<vec4<u32>, 3>". Returns an error text, empty when `out` is set.
std::string parse_uniform_type(const std::string& text, UniformType& out);

// A scalar or vecN of f32, f16, i32, u32: what an array<...> binding of a pass may hold.
bool is_storage_element_type(const std::string& text);
// The scalar of such a type ("vec4<f16>" -> "f16").
std::string element_scalar(const std::string& text);

struct UniformField {
  std::string name;
  UniformType type;
  uint32_t offset = 0;
};

// Offsets of `fields` in declaration order; returns the struct size.
uint32_t lay_out_uniform(std::vector<UniformField>& fields);

// Writes `value` (a number, or a list for vectors and arrays) at field.offset of `bytes`. Returns an
// error text (value kind or range), empty on success.
std::string write_uniform(const UniformField& field, const Value& value, std::vector<uint8_t>& bytes);

}  // namespace wgml::kernel
