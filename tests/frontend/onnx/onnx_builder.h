#pragma once
// Builds small ONNX models in memory with ONNX's own protobuf classes, for tests that need exact
// control over a model (including malformed ones) without fixture files.
#include <filesystem>
#include <string>
#include <vector>

#include "onnx-ml.pb.h"
#include "wgml/tensor.h"

namespace wgml::testing {

constexpr int32_t kFloat = ::onnx::TensorProto::FLOAT;
constexpr int32_t kInt64 = ::onnx::TensorProto::INT64;
constexpr int32_t kBool = ::onnx::TensorProto::BOOL;
constexpr int64_t kDynamic = -1;  // a dim_param dimension

class OnnxModel {
 public:
  explicit OnnxModel(int64_t opset = 17);

  OnnxModel& input(const std::string& name, int32_t elem_type, const std::vector<int64_t>& dims);
  OnnxModel& output(const std::string& name, int32_t elem_type, const std::vector<int64_t>& dims);
  OnnxModel& initializer(const std::string& name, const std::vector<float>& values, const std::vector<int64_t>& dims);
  OnnxModel& initializer(const std::string& name, const std::vector<int64_t>& values, const std::vector<int64_t>& dims);
  ::onnx::NodeProto& node(const std::string& op_type, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs, const std::string& name = "");

  ::onnx::ModelProto& proto() { return model_; }
  ::onnx::GraphProto& graph() { return *model_.mutable_graph(); }
  // Writes model.onnx into `directory` and returns its path.
  std::string write(const std::filesystem::path& directory) const;

 private:
  ::onnx::ModelProto model_;
};

void set_attr(::onnx::NodeProto& node, const std::string& name, int64_t value);
void set_attr(::onnx::NodeProto& node, const std::string& name, float value);
void set_attr(::onnx::NodeProto& node, const std::string& name, const std::string& value);
void set_attr(::onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values);
void set_attr(::onnx::NodeProto& node, const std::string& name, const ::onnx::GraphProto& graph);
void set_attr(::onnx::NodeProto& node, const std::string& name, const ::onnx::TensorProto& tensor);

::onnx::TensorProto float_tensor(const std::string& name, const std::vector<float>& values, const std::vector<int64_t>& dims);
::onnx::TensorProto int64_tensor(const std::string& name, const std::vector<int64_t>& values, const std::vector<int64_t>& dims);
void add_value_info(::onnx::ValueInfoProto* info, const std::string& name, int32_t elem_type, const std::vector<int64_t>& dims);

// A fresh directory under the test temp dir, unique per call.
std::filesystem::path fresh_directory(const std::string& hint);

Tensor float_tensor_of(const Shape& shape, const std::vector<float>& values);
std::vector<float> floats_of(const Tensor& t);

}  // namespace wgml::testing
