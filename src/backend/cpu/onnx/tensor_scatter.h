#pragma once
// ONNX TensorScatter (opset 24), the reference the GPU kernels are tested against: `present` is
// `past` with `update` written along `axis` at each batch row's write index (0 when
// `write_indices` is absent). In linear mode the write must fit (index + sequence_length <=
// max_sequence_length); in circular mode positions wrap modulo max_sequence_length.
#include <string>

#include "wgml/tensor.h"

namespace wgml::cpu::onnx {

// `write_indices` may be null (absent). Throws wgml::Error(InvalidArgument) on mismatched shapes,
// dtypes, axis or mode, and wgml::Error(Runtime) naming the batch row and value of an index that
// does not fit.
Tensor tensor_scatter(const Tensor& past, const Tensor& update, const Tensor* write_indices, int64_t axis,
                      const std::string& mode);

}  // namespace wgml::cpu::onnx
