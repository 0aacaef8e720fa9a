#include "ir/program.h"

#include "wgml/error.h"

namespace wgml::ir {

const OnnxAttribute::Value* OnnxOp::attribute(std::string_view attr_name) const {
  for (const OnnxAttribute& a : attributes)
    if (a.name == attr_name) return &a.value;
  return nullptr;
}

std::string instruction_name(const Instruction& i) {
  if (const Node* n = as_node(i)) return std::string(node_name(*n));
  const OnnxOp& op = std::get<OnnxOp>(i);
  return op.domain + "." + op.op_type;
}

bool TensorMeta::is_static() const {
  for (const Dim& d : shape)
    if (!d.is_static()) return false;
  return true;
}

std::optional<uint64_t> TensorMeta::static_numel() const {
  uint64_t n = 1;
  for (const Dim& d : shape) {
    if (!d.is_static()) return std::nullopt;
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d.value), &n)) return std::nullopt;
  }
  return n;
}

const char* slot_type_name(SlotType t) {
  switch (t) {
    case SlotType::Tensor:
      return "tensor";
    case SlotType::Int:
      return "int";
    case SlotType::Float:
      return "float";
    case SlotType::Bool:
      return "bool";
  }
  return "?";
}

const char* tensor_class_name(TensorClass c) {
  switch (c) {
    case TensorClass::Constant:
      return "constant";
    case TensorClass::Input:
      return "input";
    case TensorClass::Output:
      return "output";
    case TensorClass::MutableBuffer:
      return "mutable buffer";
    case TensorClass::Temp:
      return "temp";
  }
  return "?";
}

uint64_t Program::num_tensors() const {
  return uint64_t{num_constant_tensors} + num_input_tensors + num_output_tensors + num_mutable_buffer_tensors + num_temp_tensors;
}

TensorClass Program::tensor_class(Tid t) const {
  uint64_t i = t.idx;
  if (i < num_constant_tensors) return TensorClass::Constant;
  i -= num_constant_tensors;
  if (i < num_input_tensors) return TensorClass::Input;
  i -= num_input_tensors;
  if (i < num_output_tensors) return TensorClass::Output;
  i -= num_output_tensors;
  if (i < num_mutable_buffer_tensors) return TensorClass::MutableBuffer;
  return TensorClass::Temp;
}

const TensorMeta* Program::meta(Tid t) const {
  if (t.idx >= tensor_meta.size() || !tensor_meta[t.idx]) return nullptr;
  return &*tensor_meta[t.idx];
}

const NamedSlot* Program::named_slot_of_tensor(uint32_t tid) const {
  for (const NamedSlot& s : named_slots)
    if (s.slot.type == SlotType::Tensor && s.slot.idx == tid) return &s;
  return nullptr;
}

std::unordered_map<uint32_t, const NamedSlot*> Program::named_slots_by_tensor() const {
  std::unordered_map<uint32_t, const NamedSlot*> out;
  for (const NamedSlot& s : named_slots)
    if (s.slot.type == SlotType::Tensor) out.emplace(s.slot.idx, &s);  // the first, as named_slot_of_tensor
  return out;
}

}  // namespace wgml::ir
