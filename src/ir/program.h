#pragma once
// ir::Program: an MLX-delegate graph decoded into plain C++. Nothing above src/ir sees FlatBuffers.
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "ir/nodes.h"
#include "wgml/dtype.h"

namespace wgml::ir {

// One dimension of a tensor's metadata: static (value >= 0) or dynamic with bounds.
struct Dim {
  int32_t value = -1;
  int32_t min_value = 0;
  int32_t max_value = -1;  // -1: unbounded
  bool is_static() const { return value >= 0; }
};

struct TensorMeta {
  DType dtype = DType::Float32;
  std::vector<Dim> shape;
  std::vector<uint8_t> dim_order;
  bool is_static() const;
  // Element count when every dim is static.
  std::optional<uint64_t> static_numel() const;
};

enum class SlotType : uint8_t { Tensor = 0, Int = 1, Float = 2, Bool = 3 };
const char* slot_type_name(SlotType t);

struct Slot {
  uint32_t idx = 0;
  SlotType type = SlotType::Tensor;
};

struct NamedSlot {
  std::string name;
  Slot slot;
};

// An ONNX op kept in its own domain where no faithful lowering to `mlx` nodes exists (DESIGN.md,
// "One instruction model, two op domains"). Backends find its kernel by (domain, op_type).
struct OnnxAttribute {
  using Value = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>, std::vector<std::string>>;
  std::string name;
  Value value;
};

struct OnnxOp {
  std::string domain;  // "ai.onnx", "ai.onnx.ml", ...
  std::string op_type;
  int32_t opset = 0;                       // the version of the domain the model imports
  std::string name;                        // the ONNX node name, for errors
  std::vector<std::optional<Tid>> inputs;  // nullopt: an omitted optional input
  std::vector<std::optional<Tid>> outputs;
  std::vector<OnnxAttribute> attributes;
  // A fused op (runtime/fusion.h): the chain of the instructions it stands for, which run in its
  // place where a backend has no kernel for it; and its int attributes read from value slots when
  // it runs (a cache slice's bound).
  std::optional<uint32_t> parts_chain;
  std::vector<std::pair<std::string, Vid>> value_attributes;

  const OnnxAttribute::Value* attribute(std::string_view attr_name) const;
};

// One instruction of a chain: a node of the schema (domain `mlx`) or a kept ONNX op.
using Instruction = std::variant<Node, OnnxOp>;

// The mlx node of an instruction, or nullptr for an ONNX op.
inline const Node* as_node(const Instruction& i) { return std::get_if<Node>(&i); }
// "AddNode" for mlx nodes, "ai.onnx.Resize" for ONNX ops.
std::string instruction_name(const Instruction& i);

struct Chain {
  std::vector<Instruction> instructions;
  // Per instruction, what a frontend made it from (an ONNX node), for errors; may be empty.
  std::vector<std::string> origins;
};

// Where a Tid lives. ExecuTorch numbers tensor slots in exactly this order.
enum class TensorClass { Constant, Input, Output, MutableBuffer, Temp };
const char* tensor_class_name(TensorClass c);

struct Program {
  std::string version;
  uint32_t num_constant_tensors = 0;
  uint32_t num_input_tensors = 0;
  uint32_t num_output_tensors = 0;
  uint32_t num_mutable_buffer_tensors = 0;
  uint32_t num_temp_tensors = 0;
  uint32_t num_values = 0;
  // Run-time integers (value slots, ItemInt, the int arithmetic nodes) are 64-bit, as ONNX's are;
  // false keeps the MLX runtime's int32 value slots that .pte programs are written for.
  bool int64_values = false;

  std::vector<Chain> chains;
  uint32_t main_chain_idx = 0;
  int32_t init_chain_idx = -1;

  std::vector<Slot> inputs;
  std::vector<Slot> outputs;
  std::vector<Slot> mutable_buffers;
  std::vector<NamedSlot> named_slots;
  // Indexed by Tid; temps (and anything the exporter left out) have none.
  std::vector<std::optional<TensorMeta>> tensor_meta;

  uint64_t num_tensors() const;
  TensorClass tensor_class(Tid t) const;
  const TensorMeta* meta(Tid t) const;
  // The named slot of a tensor, if it has one (constants and mutable buffers do).
  const NamedSlot* named_slot_of_tensor(uint32_t tid) const;
  // named_slot_of_tensor for every named tensor at once, by Tid: one pass over named_slots.
  std::unordered_map<uint32_t, const NamedSlot*> named_slots_by_tensor() const;
  bool has_init_chain() const { return init_chain_idx >= 0; }
};

}  // namespace wgml::ir
