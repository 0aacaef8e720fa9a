#pragma once
// ONNX TensorProto -> wgml::Tensor: raw, typed and external data, every size checked.
#include <memory>
#include <string>

#include "onnx-ml.pb.h"
#include "wgml/tensor.h"

namespace wgml::frontend::onnx {

struct TensorSource {
  std::string path;                   // the file the tensor came from, for errors
  std::string directory;              // where external data files are looked up
  std::shared_ptr<const void> owner;  // keeps the proto (and its raw_data) alive for views
};

// Throws wgml::Error naming `where`: InvalidFormat for inconsistent data, Unsupported for element
// types wgml has no dtype for.
Tensor tensor_from_proto(const ::onnx::TensorProto& t, const TensorSource& source, const std::string& where);

}  // namespace wgml::frontend::onnx
