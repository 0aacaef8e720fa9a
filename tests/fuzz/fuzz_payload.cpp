// libFuzzer target: arbitrary bytes as a standalone MLX-delegate payload (.mlxg). Any input must
// end in a loaded program or a wgml::Error; anything else (a crash, a sanitizer report, another
// exception type, a hang) is a finding.
#include <cstddef>
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_common.h"
#include "ir/payload.h"
#include "wgml/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    wgml::ir::Model model;
    model.path = "fuzz.mlxg";
    model.format = wgml::ir::ModelFormat::Payload;
    model.program = wgml::ir::read_payload(wgml::io::own_bytes(std::vector<uint8_t>(data, data + size)), model.path);
    wgml::fuzz::exercise_model(model);  // no named data: binds only constant-free programs
  } catch (const wgml::Error&) {
  }
  return 0;
}
