#pragma once
// The CPU reference backend: plain, obviously correct C++ for every node it registers. It is the
// oracle GPU kernels are tested against and the fallback where no GPU exists.
#include "runtime/backend.h"

namespace wgml::backend::cpu {

class CpuBackend final : public runtime::Backend {
 public:
  CpuBackend();
  std::string_view name() const override { return "cpu"; }
  const runtime::KernelTable& kernels() const override { return table_; }

 private:
  runtime::KernelTable table_;
};

// Each kernel family registers itself (one file each).
void register_elementwise(runtime::KernelTable& t);
void register_shape_ops(runtime::KernelTable& t);
void register_nn_ops(runtime::KernelTable& t);
void register_quantized_ops(runtime::KernelTable& t);
void register_reduce_ops(runtime::KernelTable& t);
void register_conv_ops(runtime::KernelTable& t);
void register_index_ops(runtime::KernelTable& t);
void register_sort_ops(runtime::KernelTable& t);
void register_random_ops(runtime::KernelTable& t);
// ONNX ops kept in the ai.onnx domain (src/backend/cpu/onnx).
void register_onnx_ops(runtime::KernelTable& t);

}  // namespace wgml::backend::cpu
