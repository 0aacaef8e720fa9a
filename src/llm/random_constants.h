#pragma once
// Random constants for an MLX program: what a model file's weights would be, made from the
// program's own metadata (names from its named slots, dtypes and shapes from tensor_meta), so a
// benchmark (`wgml bench`, bench/llm_decode) can run a 1B or 8B program whose weights never travel.
#include <cstdint>
#include <string>
#include <vector>

#include "ir/program.h"

namespace wgml::llm {

// How a constant's bytes are drawn.
enum class Fill {
  Normal,  // floats ~ N(0, 0.02) in their dtype (weights, norm weights, embeddings)
  Scale,   // floats uniform in [0.003, 0.006]: quantization scales, so 4-bit weights come out ~ N(0, 0.02)
  Bits,    // uint32: random bits (packed quantized weights)
  Zero,    // integers and bools (they may index or size something), and what the init chain writes
};

struct ConstantInfo {
  std::string name;  // the named slot's key ("<4 hex>/<name>")
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  uint64_t bytes = 0;  // as stored in the file: its metadata's size
  // As the program holds it: a constant the init chain writes (an exporter's placeholder) has the
  // size the init chain computes, taken as its largest input's element count.
  uint64_t loaded_bytes = 0;
  bool written_by_init = false;
  // Read only by TakeNodes (an embedding table the program gathers rows from): a decode step reads
  // one row of it, not all of it.
  bool gathered_only = false;
  Fill fill = Fill::Normal;
};

// The program's constants in slot order, with how each is filled and read.
std::vector<ConstantInfo> describe_constants(const ir::Program& program);

// Writes `constants` as a .safetensors file (8-byte header length, JSON header, data; tensors in
// the data by decreasing element size, so each is aligned to its element without gaps), drawn
// from `seed` on up to `threads` threads; the same seed gives the same bytes.
void write_random_constants(const std::string& path, const std::vector<ConstantInfo>& constants, uint64_t seed, unsigned threads);

const char* fill_name(Fill f);

// Whether `model_path` is an MLX payload (.mlxg) with constants but no file holding them:
// `constants_path`, else the payload's path with .safetensors (where load_model looks).
bool payload_without_constants(const std::string& model_path, const std::string& constants_path);

// What a Session needs to run the MLX program of a .pte or .mlxg on random constants.
struct RandomWeightsModel {
  // The model itself for a payload; for a .pte its MLX payload, extracted as it is stored (the
  // .pte's constant methods and method signature stay behind: the program's own inputs are used).
  std::string payload_path;
  std::string constants_path;  // the constants drawn from the program's metadata (.safetensors)
};

// Writes into the folder `dir` the files a Session needs to run `model_path`'s MLX program on
// constants drawn from `seed`. Throws wgml::Error(Unsupported) for a file that holds no MLX
// program (an ONNX model carries its own initializers).
RandomWeightsModel write_random_weights_model(const std::string& model_path, const std::string& dir, uint64_t seed,
                                              unsigned threads);

}  // namespace wgml::llm
