// libFuzzer target: arbitrary bytes as a NumPy .npy file (io::parse_npy, what `wgml run --input`
// reads). Any input must end in a tensor or a wgml::Error.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "io/npy.h"
#include "wgml/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const wgml::io::ByteView file = wgml::io::own_bytes(std::vector<uint8_t>(data, data + size));
  for (auto expected : {std::optional<wgml::DType>(), std::optional<wgml::DType>(wgml::DType::BFloat16)}) {
    try {
      (void)wgml::io::parse_npy(file, "fuzz.npy", expected);
    } catch (const wgml::Error&) {
    }
  }
  return 0;
}
