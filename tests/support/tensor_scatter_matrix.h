#pragma once
// The TensorScatter test matrix shared by the plan tests (tests/spec) and the GPU tests
// (tests/backend/webgpu): geometries of ranks 2 to 4 with positive and negative axes, element
// counts divisible by 4 (64, 180) and not (105, 10, 42), and every type of typeConstraints.
#include <cstdint>

#include "wgml/tensor.h"

namespace wgml::testing {

struct ScatterGeometry {
  Shape past;
  Shape update;
  int64_t axis;
};

inline const ScatterGeometry kScatterGeometries[] = {
    {{2, 8, 4}, {2, 3, 4}, 1},        {{3, 5, 7}, {3, 2, 7}, -2}, {{2, 3, 6, 5}, {2, 3, 1, 5}, 2},
    {{2, 3, 6, 5}, {2, 3, 6, 2}, -1}, {{2, 5}, {2, 3}, 1},        {{1, 2, 7, 3}, {1, 1, 7, 3}, 1},
};

inline const DType kScatterTypes[] = {DType::Float32, DType::Float16, DType::Int32, DType::Int16,
                                      DType::Int8,    DType::UInt32,  DType::UInt8, DType::Bool};

}  // namespace wgml::testing
