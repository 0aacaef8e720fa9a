#pragma once
// ONNX TensorProto -> wgml::Tensor: raw, typed and external data, every size checked.
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "io/bytes.h"
#include "onnx-ml.pb.h"
#include "wgml/tensor.h"

namespace wgml::frontend::onnx {

// The external data files of one load: each mapped once however many tensors it holds (one
// mapping per tensor ran out of mappings on models with tens of thousands of initializers).
struct ExternalFiles {
  std::filesystem::path folder;                          // the canonical model folder, once resolved
  std::map<std::filesystem::path, io::ByteView> mapped;  // by canonical path
};

struct TensorSource {
  std::string path;                   // the file the tensor came from, for errors
  std::string directory;              // where external data files are looked up
  std::shared_ptr<const void> owner;  // keeps the proto (and its raw_data) alive for views
  // Shared by the copies of one source, so it lives as long as the load.
  std::shared_ptr<ExternalFiles> external_files = std::make_shared<ExternalFiles>();
};

// Throws wgml::Error naming `where`: InvalidFormat for inconsistent data, Unsupported for element
// types wgml has no dtype for.
Tensor tensor_from_proto(const ::onnx::TensorProto& t, const TensorSource& source, const std::string& where);

}  // namespace wgml::frontend::onnx
