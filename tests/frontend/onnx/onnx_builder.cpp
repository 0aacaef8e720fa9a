#include "frontend/onnx/onnx_builder.h"

#include <unistd.h>

#include <atomic>
#include <fstream>

#include <gtest/gtest.h>

#include "core/elements.h"

namespace wgml::testing {

OnnxModel::OnnxModel(int64_t opset) {
  model_.set_ir_version(8);
  model_.set_producer_name("wgml-tests");
  auto* o = model_.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  model_.mutable_graph()->set_name("test");
}

void add_value_info(::onnx::ValueInfoProto* info, const std::string& name, int32_t elem_type, const std::vector<int64_t>& dims) {
  info->set_name(name);
  auto* t = info->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem_type);
  auto* shape = t->mutable_shape();
  for (size_t i = 0; i < dims.size(); ++i) {
    auto* d = shape->add_dim();
    if (dims[i] == kDynamic)
      d->set_dim_param("d" + std::to_string(i));
    else
      d->set_dim_value(dims[i]);
  }
}

OnnxModel& OnnxModel::input(const std::string& name, int32_t elem_type, const std::vector<int64_t>& dims) {
  add_value_info(graph().add_input(), name, elem_type, dims);
  return *this;
}

OnnxModel& OnnxModel::output(const std::string& name, int32_t elem_type, const std::vector<int64_t>& dims) {
  add_value_info(graph().add_output(), name, elem_type, dims);
  return *this;
}

::onnx::TensorProto float_tensor(const std::string& name, const std::vector<float>& values, const std::vector<int64_t>& dims) {
  ::onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(kFloat);
  for (int64_t d : dims) t.add_dims(d);
  for (float v : values) t.add_float_data(v);
  return t;
}

::onnx::TensorProto int64_tensor(const std::string& name, const std::vector<int64_t>& values, const std::vector<int64_t>& dims) {
  ::onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(kInt64);
  for (int64_t d : dims) t.add_dims(d);
  for (int64_t v : values) t.add_int64_data(v);
  return t;
}

OnnxModel& OnnxModel::initializer(const std::string& name, const std::vector<float>& values, const std::vector<int64_t>& dims) {
  *graph().add_initializer() = float_tensor(name, values, dims);
  return *this;
}

OnnxModel& OnnxModel::initializer(const std::string& name, const std::vector<int64_t>& values, const std::vector<int64_t>& dims) {
  *graph().add_initializer() = int64_tensor(name, values, dims);
  return *this;
}

::onnx::NodeProto& OnnxModel::node(const std::string& op_type, const std::vector<std::string>& inputs,
                                   const std::vector<std::string>& outputs, const std::string& name) {
  ::onnx::NodeProto* n = graph().add_node();
  n->set_op_type(op_type);
  n->set_name(name.empty() ? op_type + std::to_string(graph().node_size()) : name);
  for (const std::string& i : inputs) n->add_input(i);
  for (const std::string& o : outputs) n->add_output(o);
  return *n;
}

std::string OnnxModel::write(const std::filesystem::path& directory) const {
  const std::string path = (directory / "model.onnx").string();
  std::ofstream out(path, std::ios::binary);
  out << model_.SerializeAsString();
  return path;
}

namespace {
::onnx::AttributeProto& new_attr(::onnx::NodeProto& node, const std::string& name, ::onnx::AttributeProto::AttributeType type) {
  ::onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(type);
  return *a;
}
}  // namespace

void set_attr(::onnx::NodeProto& node, const std::string& name, int64_t value) {
  new_attr(node, name, ::onnx::AttributeProto::INT).set_i(value);
}
void set_attr(::onnx::NodeProto& node, const std::string& name, float value) {
  new_attr(node, name, ::onnx::AttributeProto::FLOAT).set_f(value);
}
void set_attr(::onnx::NodeProto& node, const std::string& name, const std::string& value) {
  new_attr(node, name, ::onnx::AttributeProto::STRING).set_s(value);
}
void set_attr(::onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values) {
  auto& a = new_attr(node, name, ::onnx::AttributeProto::INTS);
  for (int64_t v : values) a.add_ints(v);
}
void set_attr(::onnx::NodeProto& node, const std::string& name, const ::onnx::GraphProto& graph) {
  *new_attr(node, name, ::onnx::AttributeProto::GRAPH).mutable_g() = graph;
}
void set_attr(::onnx::NodeProto& node, const std::string& name, const ::onnx::TensorProto& tensor) {
  *new_attr(node, name, ::onnx::AttributeProto::TENSOR).mutable_t() = tensor;
}

std::filesystem::path fresh_directory(const std::string& hint) {
  static std::atomic<int> counter{0};
  const auto dir = std::filesystem::path(::testing::TempDir()) /
                   ("wgml_onnx_" + hint + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  std::filesystem::create_directories(dir);
  return dir;
}

Tensor float_tensor_of(const Shape& shape, const std::vector<float>& values) {
  return Tensor::from_bytes(DType::Float32, shape, values.data());
}

std::vector<float> floats_of(const Tensor& t) {
  std::vector<float> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(static_cast<float>(load_as_double(t.dtype(), t.data(), i)));
  return out;
}

}  // namespace wgml::testing
