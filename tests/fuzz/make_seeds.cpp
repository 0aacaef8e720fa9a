// Writes the fuzz seed corpora: make_seeds OUT_DIR  ->  OUT_DIR/payload/*.mlxg, OUT_DIR/pte/*.pte,
// OUT_DIR/safetensors/*.safetensors, OUT_DIR/npy/*.npy (the ONNX ones: tools/onnx/make_fuzz_seeds.py).
// The committed corpus/ was made with this; rerun it when tests/support/program_builder changes:
//   <build>/tests/fuzz/wgml_fuzz_seeds tests/fuzz/corpus
#include <filesystem>
#include <iostream>
#include <string>

#include "core/elements.h"
#include "io/npy.h"
#include "support/program_builder.h"

namespace t = wgml::testing;

namespace {

// One blob per dtype wgml reads from safetensors, of ranks 0 to 2.
std::vector<t::NamedBlob> several_dtypes() {
  return {{"f16", {0, 60, 0, 188}, "F16", {2}},
          {"bf16", {128, 63}, "BF16", {}},
          {"i64", {1, 0, 0, 0, 0, 0, 0, 0, 254, 255, 255, 255, 255, 255, 255, 255}, "I64", {2, 1}},
          {"u8", {1, 2, 3}, "U8", {3}},
          {"bool", {1, 0}, "BOOL", {1, 2}}};
}

// Small tensors of several dtypes and ranks (bfloat16 is written as "<u2").
std::vector<wgml::Tensor> npy_seeds() {
  std::vector<wgml::Tensor> seeds;
  const wgml::Shape shapes[] = {{}, {3}, {2, 3}};
  const wgml::DType dtypes[] = {wgml::DType::Float32, wgml::DType::Int64, wgml::DType::Bool, wgml::DType::BFloat16,
                                wgml::DType::Float16};
  for (size_t i = 0; i < std::size(dtypes); ++i) {
    wgml::Tensor tensor(dtypes[i], shapes[i % std::size(shapes)]);
    for (int64_t e = 0; e < tensor.numel(); ++e) wgml::store_int64(tensor.dtype(), tensor.mutable_data(), e, e + 1);
    seeds.push_back(tensor);
  }
  return seeds;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " OUT_DIR\n";
    return 2;
  }
  const std::filesystem::path out = argv[1];
  std::filesystem::create_directories(out / "payload");
  std::filesystem::create_directories(out / "pte");
  std::filesystem::create_directories(out / "safetensors");
  std::filesystem::create_directories(out / "npy");
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

  put("safetensors/tiny.safetensors", t::build_safetensors(constants));
  put("safetensors/dtypes.safetensors", t::build_safetensors(several_dtypes()));
  put("safetensors/empty.safetensors", t::build_safetensors({}));

  for (const wgml::Tensor& tensor : npy_seeds()) {
    const std::string name =
        "npy/" + std::string(wgml::dtype_name(tensor.dtype())) + "_rank" + std::to_string(tensor.rank()) + ".npy";
    wgml::io::write_npy((out / name).string(), tensor);
    std::cout << name << "\n";
  }
  return 0;
}
