#pragma once
// Test helper: builds valid MLX-delegate payloads, .pte containers and .safetensors files from the
// FlatBuffers object API, so tests can start from a program that loads and break one thing.
//
//   payload  = 4 zero bytes, "MLX0", u64 LE data_segment_offset (24 + FlatBuffer padded to 16),
//              u64 LE data_segment_size (0), the MLXGraph FlatBuffer (no identifier), padding.
//   .pte     = Program FlatBuffer ("ET12") with an extended header at byte 8 ("eh00", u32 32,
//              u64 program_size, u64 segment_base_offset, u64 segment_data_size), then the data
//              segments (base and every segment aligned to PteOptions::segment_alignment).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "frontend/pte/executorch_program_generated.h"
#include "ir/mlx_delegate_relaxed_generated.h"

namespace wgml::testing {

using Bytes = std::vector<uint8_t>;

inline constexpr int8_t kScalarFloat = 6;   // ExecuTorch ScalarType::Float
inline constexpr int8_t kScalarDouble = 7;  // ExecuTorch ScalarType::Double (unsupported)

// ---- MLXGraph pieces -----------------------------------------------------------------------

std::unique_ptr<mlx_delegate::SlotVariantT> tensor_slot(uint32_t idx);
std::unique_ptr<mlx_delegate::SlotVariantT> value_slot(uint32_t idx, mlx_delegate::SlotType type);
std::unique_ptr<mlx_delegate::TensorMetaT> tensor_meta(int8_t scalar_type, const std::vector<int32_t>& dims);
std::unique_ptr<mlx_delegate::NamedSlotT> named_tensor(const std::string& name, uint32_t tid);
std::unique_ptr<mlx_delegate::Tid> tid(uint32_t idx);
std::unique_ptr<mlx_delegate::Vid> vid(uint32_t idx);

// Wraps a node (e.g. mlx_delegate::AddNodeT) in an instruction.
template <class NodeT>
std::unique_ptr<mlx_delegate::InstructionT> instruction(NodeT node) {
  auto ins = std::make_unique<mlx_delegate::InstructionT>();
  ins->op.Set(std::move(node));
  return ins;
}
std::unique_ptr<mlx_delegate::InstructionT> add(uint32_t a, uint32_t b, uint32_t out);

// Appends a chain and returns its index.
uint32_t add_chain(mlx_delegate::MLXGraphT& graph, std::vector<std::unique_ptr<mlx_delegate::InstructionT>> instructions);
mlx_delegate::InstructionChainT& chain(mlx_delegate::MLXGraphT& graph, uint32_t index);

// ---- the tiny valid program ------------------------------------------------------------------
// Tid 0: constant "abcd/w" float32 [2,2]; Tid 1: input float32 [2,2]; Tid 2: output float32 [2,2].
// Chain 0 (main): AddNode(a: Tid 1, b: Tid 0, out: Tid 2). No init chain, no values, no temps.
inline constexpr const char* kTinyConstantName = "abcd/w";

struct NamedBlob {
  std::string key;
  Bytes data;
  std::string dtype = "F32";   // safetensors dtype name
  std::vector<int64_t> shape;  // safetensors shape
};

mlx_delegate::MLXGraphT tiny_graph();
std::vector<NamedBlob> tiny_constants();  // {"abcd/w": float32 {1, 2, 3, 4}}

// A valid program that touches more of the IR (fuzz seeds, loader tests). Same constant as the
// tiny one. Tids: 0 constant "abcd/w" [2,2], 1 input [-1 (1..8), 2], 2 output, 3 mutable buffer
// "abcd/m" [2,2], 4-5 temps; values: 0-1 int (SymSize, AddInt), 2 int input.
// Chains: 0 main (SymSize, AddInt, Add, If(2, 3), Scan(body 4), Add), 1 init (writes the
// constant), 2/3 If branches, 4 Scan body.
mlx_delegate::MLXGraphT rich_graph();

// ---- serialization ---------------------------------------------------------------------------

// The MLXGraph FlatBuffer alone (no identifier).
Bytes graph_flatbuffer(const mlx_delegate::MLXGraphT& graph);
// The 24-byte header around a FlatBuffer (padded to 16).
Bytes payload_from_flatbuffer(const Bytes& flatbuffer);
Bytes build_payload(const mlx_delegate::MLXGraphT& graph);

struct PteOptions {
  bool extended_header = true;
  bool delegate_in_segment = true;  // false: Program.backend_delegate_data (needs no segments)
  std::string backend_id = "MLXBackend";
  std::string plan_name = "forward";
  uint64_t segment_alignment = 128;
  // Called on the Program after its segment table is filled, just before it is serialized: the
  // hook for tests that need an inconsistent container (a segment past the end, ...).
  std::function<void(executorch_flatbuffer::ProgramT&)> edit_program;
};

// Serializes `program` with its `segments`: program.segments is (re)filled with each segment's
// offset (relative to segment_base_offset) and size, in order. Without an extended header the
// segments are dropped (such a file can only use inline data).
Bytes build_pte(executorch_flatbuffer::ProgramT program, const std::vector<Bytes>& segments, const PteOptions& options = {});

// A .pte whose plan `forward` has one delegate carrying `payload`, and `named` as named data
// (one segment each, after the delegate's segment).
Bytes build_mlx_pte(const Bytes& payload, const std::vector<NamedBlob>& named, const PteOptions& options = {});

Bytes build_safetensors(const std::vector<NamedBlob>& tensors);

// Byte offset, inside `flatbuffer`, of the op_type byte of chain `c`, instruction `i`.
size_t op_type_offset(const Bytes& graph_flatbuffer, uint32_t c, uint32_t i);

// ---- files -------------------------------------------------------------------------------------

// A fresh directory under the test temp dir, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

void write_file(const std::string& path, const Bytes& bytes);
Bytes read_file(const std::string& path);

// Writes <dir>/<stem>.mlxg and, when `constants` is not empty, <dir>/<stem>.safetensors.
// Returns the .mlxg path.
std::string write_payload_model(const TempDir& dir, const std::string& stem, const mlx_delegate::MLXGraphT& graph,
                                const std::vector<NamedBlob>& constants);
// Writes <dir>/<stem>.pte and returns its path.
std::string write_pte_model(const TempDir& dir, const std::string& stem, const mlx_delegate::MLXGraphT& graph,
                            const std::vector<NamedBlob>& constants, const PteOptions& options = {});

}  // namespace wgml::testing
