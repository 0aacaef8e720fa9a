#pragma once
// wgml::Session: load a model file once, run it many times.
//
//   wgml::Session session("model.pte");
//   auto outputs = session.run({wgml::Tensor::from_bytes(wgml::DType::Float32, {2, 16}, data)});
//
// A Session keeps the program's mutable buffers (KV caches) across run() calls.
#include <memory>
#include <string>
#include <vector>

#include "wgml/error.h"
#include "wgml/tensor.h"

namespace wgml {

struct SessionOptions {
  std::string device = "cpu";     // "cpu" (the reference backend)
  std::string constants_path;     // constants for a standalone .mlxg payload
};

// One program input or output as the model declares it.
struct IoInfo {
  std::string name;
  std::string kind;           // "tensor", "int", "float", "bool"
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;  // -1 for dynamic dims
};

class Session {
 public:
  explicit Session(const std::string& path, SessionOptions options = {});
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  const std::vector<IoInfo>& inputs() const;
  const std::vector<IoInfo>& outputs() const;
  std::vector<Value> run(const std::vector<Value>& inputs);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace wgml
