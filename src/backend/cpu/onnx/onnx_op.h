#pragma once
// CPU kernels of the ONNX ops the frontend keeps in the ai.onnx domain (no faithful mlx lowering):
// each implements ONNX's definition directly. OpView gives a kernel its inputs, outputs and
// attributes by position and name.
#include <string>
#include <string_view>
#include <vector>

#include "backend/cpu/working_memory.h"
#include "runtime/backend.h"

namespace wgml::backend::cpu::onnx_ops {

class OpView {
 public:
  OpView(const ir::OnnxOp& op, runtime::ExecContext& ctx) : op_(op), ctx_(ctx) {}

  const ir::OnnxOp& op() const { return op_; }
  int opset() const { return op_.opset; }
  size_t num_inputs() const { return op_.inputs.size(); }
  const Tensor* input(size_t i) const;     // null when omitted
  const Tensor& required(size_t i) const;  // fails when omitted
  bool wants(size_t i) const { return i < op_.outputs.size() && op_.outputs[i].has_value(); }
  void output(size_t i, Tensor t);

  bool has_attr(std::string_view name) const { return op_.attribute(name) != nullptr; }
  int64_t attr_int(std::string_view name, int64_t fallback) const;
  double attr_float(std::string_view name, double fallback) const;
  std::string attr_string(std::string_view name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(std::string_view name) const;
  std::vector<double> attr_floats(std::string_view name) const;

 private:
  const ir::OnnxOp& op_;
  runtime::ExecContext& ctx_;
};

// Adapts `void f(OpView&)` to the kernel table's signature.
template <void (*F)(OpView&)>
void kernel(const ir::OnnxOp& op, runtime::ExecContext& ctx) {
  OpView view(op, ctx);
  F(view);
}

// Integer values of a tensor (shapes, axes, indices, counts).
std::vector<int64_t> ints_of(const Tensor& t);
std::vector<double> doubles_of(const Tensor& t);
int64_t normalize_index(int64_t i, int64_t dim, const char* what);

// Each family registers its ops (one file each).
void register_elementwise_ops(runtime::KernelTable& t);
void register_resize_ops(runtime::KernelTable& t);
void register_index_ops(runtime::KernelTable& t);
void register_sampling_ops(runtime::KernelTable& t);
void register_dynamic_ops(runtime::KernelTable& t);
void register_recurrent_ops(runtime::KernelTable& t);
void register_misc_ops(runtime::KernelTable& t);
void register_spectral_ops(runtime::KernelTable& t);

}  // namespace wgml::backend::cpu::onnx_ops
