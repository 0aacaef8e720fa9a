// Writes the fuzz seed corpora: make_seeds OUT_DIR  ->  OUT_DIR/payload/*.mlxg, OUT_DIR/pte/*.pte.
// The committed corpus/ was made with this; rerun it when tests/support/program_builder changes:
//   <build>/tests/fuzz/wgml_fuzz_seeds tests/fuzz/corpus
#include <filesystem>
#include <iostream>
#include <string>

#include "support/program_builder.h"

namespace t = wgml::testing;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " OUT_DIR\n";
    return 2;
  }
  const std::filesystem::path out = argv[1];
  std::filesystem::create_directories(out / "payload");
  std::filesystem::create_directories(out / "pte");
  auto put = [&](const std::string& name, const t::Bytes& bytes) {
    t::write_file((out / name).string(), bytes);
    std::cout << name << " " << bytes.size() << " bytes\n";
  };

  // A program without constants binds and summarizes from a bare payload.
  mlx_delegate::MLXGraphT no_constants = t::tiny_graph();
  no_constants.num_constant_tensors = 0;
  no_constants.named_slots.clear();
  no_constants.tensor_meta.erase(no_constants.tensor_meta.begin());
  no_constants.input_map[0]->idx = 0;
  no_constants.output_map[0]->idx = 1;
  no_constants.instruction_chains[0]->instructions[0] = t::add(0, 0, 1);

  put("payload/tiny.mlxg", t::build_payload(t::tiny_graph()));
  put("payload/rich.mlxg", t::build_payload(t::rich_graph()));
  put("payload/no_constants.mlxg", t::build_payload(no_constants));

  const auto constants = t::tiny_constants();
  t::PteOptions inline_delegate;
  inline_delegate.delegate_in_segment = false;
  t::PteOptions small_alignment;
  small_alignment.segment_alignment = 16;
  put("pte/tiny.pte", t::build_mlx_pte(t::build_payload(t::tiny_graph()), constants, small_alignment));
  put("pte/rich.pte", t::build_mlx_pte(t::build_payload(t::rich_graph()), constants, small_alignment));
  put("pte/tiny_inline.pte", t::build_mlx_pte(t::build_payload(t::tiny_graph()), constants, inline_delegate));
  t::PteOptions no_header = inline_delegate;
  no_header.extended_header = false;
  put("pte/no_constants_no_header.pte", t::build_mlx_pte(t::build_payload(no_constants), {}, no_header));
  return 0;
}
