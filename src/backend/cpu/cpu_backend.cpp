#include "backend/cpu/cpu_backend.h"

namespace wgml::backend::cpu {

CpuBackend::CpuBackend() {
  register_elementwise(table_);
  register_shape_ops(table_);
  register_nn_ops(table_);
  register_quantized_ops(table_);
  register_reduce_ops(table_);
  register_conv_ops(table_);
  register_index_ops(table_);
  register_sort_ops(table_);
  register_random_ops(table_);
  register_onnx_ops(table_);
}

}  // namespace wgml::backend::cpu
