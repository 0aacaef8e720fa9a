// libFuzzer target: arbitrary bytes as an ExecuTorch .pte. The container is read, its MLXBackend
// delegate decoded and validated, its named data bound to the program's constants. Any input must
// end in a loaded model or a wgml::Error.
#include <cstddef>
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "frontend/pte/pte_file.h"
#include "fuzz_common.h"
#include "ir/payload.h"
#include "wgml/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const wgml::io::ByteView file = wgml::io::own_bytes(std::vector<uint8_t>(data, data + size));
    wgml::frontend::PteContents pte = wgml::frontend::read_pte(file, "fuzz.pte");
    wgml::ir::Model model;
    model.path = "fuzz.pte";
    model.program = wgml::ir::read_payload(pte.payload, pte.payload_name);
    model.named_data = std::move(pte.named_data);
    wgml::fuzz::exercise_model(model);
  } catch (const wgml::Error&) {
  }
  return 0;
}
