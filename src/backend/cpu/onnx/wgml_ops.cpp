// CPU kernels of wgml-domain ops that are not fusions (a fusion's parts run where it has no kernel):
// GreedyToken, which Session::greedy_token runs on the session's device.
#include "backend/cpu/onnx/onnx_op.h"
#include "core/elements.h"

namespace wgml::backend::cpu::onnx_ops {
namespace {

using runtime::fail;

// The index of the largest value in the last row of `logits` as an int64 [1, 1] token.
void greedy_token(OpView& op) {
  const Tensor& logits = op.required(0);
  if (!is_floating(logits.dtype()) || logits.rank() < 1 || logits.shape().back() < 1)
    fail("GreedyToken: expected a float tensor whose last axis has at least one element");
  const int64_t row = logits.shape().back();
  const std::vector<float> last = to_floats(logits.flat_range(logits.numel() - row, row));
  Tensor token(DType::Int64, {1, 1});
  token.mutable_data_as<int64_t>()[0] = greedy_index(last);
  op.output(0, std::move(token));
}

}  // namespace

void register_wgml_ops(runtime::KernelTable& t) { t.add_onnx("wgml", "GreedyToken", kernel<greedy_token>); }

}  // namespace wgml::backend::cpu::onnx_ops
