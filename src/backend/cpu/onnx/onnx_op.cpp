#include "backend/cpu/onnx/onnx_op.h"

#include "backend/cpu/cpu_backend.h"
#include "core/elements.h"

namespace wgml::backend::cpu {
namespace onnx_ops {
namespace {

template <class T>
const T* typed_attr(const ir::OnnxOp& op, std::string_view name) {
  const auto* value = op.attribute(name);
  if (!value) return nullptr;
  const T* typed = std::get_if<T>(value);
  if (!typed) runtime::fail("attribute '" + std::string(name) + "' has another type");
  return typed;
}

}  // namespace

const Tensor* OpView::input(size_t i) const {
  if (i >= op_.inputs.size() || !op_.inputs[i]) return nullptr;
  return &ctx_.tensor(*op_.inputs[i]);
}

const Tensor& OpView::required(size_t i) const {
  const Tensor* t = input(i);
  if (!t) runtime::fail("input " + std::to_string(i) + " is required");
  return *t;
}

void OpView::output(size_t i, Tensor t) {
  if (wants(i)) ctx_.set_tensor(*op_.outputs[i], std::move(t));
}

int64_t OpView::attr_int(std::string_view name, int64_t fallback) const {
  const int64_t* v = typed_attr<int64_t>(op_, name);
  return v ? *v : fallback;
}

double OpView::attr_float(std::string_view name, double fallback) const {
  const double* v = typed_attr<double>(op_, name);
  return v ? *v : fallback;
}

std::string OpView::attr_string(std::string_view name, const std::string& fallback) const {
  const std::string* v = typed_attr<std::string>(op_, name);
  return v ? *v : fallback;
}

std::vector<int64_t> OpView::attr_ints(std::string_view name) const {
  const auto* v = typed_attr<std::vector<int64_t>>(op_, name);
  return v ? *v : std::vector<int64_t>{};
}

std::vector<double> OpView::attr_floats(std::string_view name) const {
  const auto* v = typed_attr<std::vector<double>>(op_, name);
  return v ? *v : std::vector<double>{};
}

std::vector<int64_t> ints_of(const Tensor& t) {
  std::vector<int64_t> out(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) out[i] = load_as_int64(t.dtype(), t.data(), i);
  return out;
}

std::vector<double> doubles_of(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) out[i] = load_as_double(t.dtype(), t.data(), i);
  return out;
}

int64_t normalize_index(int64_t i, int64_t dim, const char* what) {
  const int64_t wrapped = i < 0 ? i + dim : i;
  if (wrapped < 0 || wrapped >= dim)
    runtime::fail(std::string(what) + " " + std::to_string(i) + " is out of range for a dimension of " + std::to_string(dim));
  return wrapped;
}

}  // namespace onnx_ops

void register_onnx_ops(runtime::KernelTable& t) {
  onnx_ops::register_elementwise_ops(t);
  onnx_ops::register_resize_ops(t);
  onnx_ops::register_index_ops(t);
  onnx_ops::register_sampling_ops(t);
  onnx_ops::register_dynamic_ops(t);
  onnx_ops::register_recurrent_ops(t);
  onnx_ops::register_misc_ops(t);
  onnx_ops::register_spectral_ops(t);
}

}  // namespace wgml::backend::cpu
