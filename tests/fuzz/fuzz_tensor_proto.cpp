// libFuzzer target: arbitrary bytes as a serialized ONNX TensorProto (a `wgml run --input x=x.pb`
// file). The folder does not exist, so external-data references fail as I/O errors. Any input must
// end in a tensor or a wgml::Error.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "frontend/onnx/onnx_model.h"
#include "wgml/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)wgml::frontend::onnx::parse_tensor_file(wgml::io::own_bytes(std::vector<uint8_t>(data, data + size)),
                                                  "/nonexistent/fuzz.pb");
  } catch (const wgml::Error&) {
  }
  return 0;
}
