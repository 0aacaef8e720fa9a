// libFuzzer target: arbitrary bytes as an ONNX model (.onnx). The protobuf is parsed, the graph
// lowered to an ir::Program and validated, constants bound and the model summarized. Any input must
// end in a loaded model or a wgml::Error. The path's directory does not exist, so external-data
// references fail as I/O errors instead of reading files.
#include <cstddef>
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "frontend/onnx/onnx_model.h"
#include "fuzz_common.h"
#include "wgml/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const wgml::io::ByteView file = wgml::io::own_bytes(std::vector<uint8_t>(data, data + size));
    wgml::ir::Model model = wgml::frontend::onnx::load_onnx_model("/nonexistent/fuzz.onnx", file);
    wgml::fuzz::exercise_model(model);
  } catch (const wgml::Error&) {
  }
  return 0;
}
