#pragma once
// IEEE binary16 and bfloat16 conversions with round-to-nearest-even, NaN and infinity preserved.
#include <cstdint>
#include <cstring>

namespace wgml {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float bf16_to_float(uint16_t h) { return bits_float(uint32_t{h} << 16); }

inline uint16_t float_to_bf16(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN
  const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding) >> 16);
}

inline float f16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0) return bits_float(sign);
    // Subnormal: value = mant * 2^-24.
    const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline uint16_t float_to_f16(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds to infinity (>= 65520)
  if (abs < 0x38800000u) {                        // below the smallest normal 2^-14
    // Round |f| * 2^24 to an integer, ties to even: that is the subnormal mantissa.
    const float scaled = bits_float(abs) * 16777216.0f;
    const float rounded = scaled + 8388608.0f - 8388608.0f;  // RNE at integer precision
    return sign | static_cast<uint16_t>(rounded);
  }
  const uint32_t rounding = 0xfffu + ((abs >> 13) & 1u);
  return sign | static_cast<uint16_t>((abs - 0x38000000u + rounding) >> 13);
}

}  // namespace wgml
