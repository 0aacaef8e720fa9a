// libFuzzer target: arbitrary bytes as a .safetensors file (the constants of a .mlxg payload).
// Any input must end in named data or a wgml::Error.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "frontend/safetensors.h"
#include "wgml/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)wgml::frontend::read_safetensors(wgml::io::own_bytes(std::vector<uint8_t>(data, data + size)), "fuzz.safetensors");
  } catch (const wgml::Error&) {
  }
  return 0;
}
