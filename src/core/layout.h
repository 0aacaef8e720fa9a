#pragma once
// Byte-level layout operations on dense row-major tensors, shared by the runtime and the CPU
// reference: axis normalisation, taking one index along an axis, stacking, concatenation.
#include <vector>

#include "wgml/tensor.h"

namespace wgml {

// Maps a possibly negative axis into [0, rank); throws wgml::Error(Runtime) when out of range.
int normalize_axis(int axis, int rank);

// Row-major strides in elements.
Shape contiguous_strides(const Shape& shape);

// x[..., index, ...] along `axis`, dropping that axis.
Tensor take_index(const Tensor& x, int axis, int64_t index);

// Stacks equally shaped tensors along a new axis.
Tensor stack(const std::vector<Tensor>& parts, int axis);

// Concatenates along an existing axis; all other dims must match.
Tensor concatenate(const std::vector<Tensor>& parts, int axis);

}  // namespace wgml
