#pragma once
// Rounding to a floating dtype's precision: the CPU reference uses it to follow MLX's own
// operation-by-operation rounding where MLX computes in half precision (or float32), so its
// results match MLX's rather than an ideal higher-precision answer.
#include <cstdint>

#include "core/elements.h"

namespace wgml::backend::cpu {

// v rounded to nearest-even in dtype t (float64 is returned as is).
inline double round_to(DType t, double v) {
  if (t == DType::Float64) return v;
  uint8_t bytes[8];
  store_double(t, bytes, 0, v);
  return load_as_double(t, bytes, 0);
}

// round_to as a function object: the rounding step of one dtype's arithmetic.
struct Rounder {
  DType t;
  double operator()(double v) const { return round_to(t, v); }
};

}  // namespace wgml::backend::cpu
