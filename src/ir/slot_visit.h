#pragma once
// Every slot an instruction refers to, with how it is used: validation, liveness and constant
// folding walk programs through this.
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "ir/program.h"

namespace wgml::ir {
namespace slot_visit_detail {

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};

}  // namespace slot_visit_detail

// Calls on_tid(tid, role) and on_vid(vid) for every slot a field refers to, whatever its shape.
template <class OnTid, class OnVid>
struct SlotVisitor {
  OnTid on_tid;
  OnVid on_vid;
  std::string_view field;

  void operator()(const Tid& t, FieldRole r) { on_tid(t, r, field); }
  void operator()(const Vid& v, FieldRole) { on_vid(v, field); }
  void operator()(const IntOrVid& v, FieldRole r) {
    if (v.is_vid) (*this)(v.vid, r);
  }
  void operator()(const FloatOrVid& v, FieldRole r) {
    if (v.is_vid) (*this)(v.vid, r);
  }
  void operator()(const VidOrTid& v, FieldRole r) {
    if (v.is_vid)
      (*this)(v.vid, r);
    else
      (*this)(v.tid, r);
  }
  void operator()(const IntOrVidOrTid& v, FieldRole r) {
    if (v.kind == IntOrVidOrTid::Value) (*this)(v.vid, r);
    if (v.kind == IntOrVidOrTid::Tensor) (*this)(v.tid, r);
  }
  template <class T>
  void operator()(const T& value, FieldRole r) {
    if constexpr (slot_visit_detail::is_optional<T>::value) {
      if (value) (*this)(*value, r);
    } else if constexpr (slot_visit_detail::is_vector<T>::value) {
      for (const auto& item : value) (*this)(item, r);
    }
  }
};

template <class OnTid, class OnVid>
void visit_slots(const Node& node, OnTid on_tid, OnVid on_vid) {
  std::visit(
      [&](const auto& n) {
        for_each_field(n, [&](std::string_view name, const auto& value, FieldRole role) {
          SlotVisitor<OnTid&, OnVid&> v{on_tid, on_vid, name};
          v(value, role);
        });
      },
      node);
}

// An ONNX op reads its inputs and writes its outputs; a fused op also reads value slots.
template <class OnTid, class OnVid>
void visit_slots(const Instruction& instruction, OnTid on_tid, OnVid on_vid) {
  if (const Node* node = as_node(instruction)) return visit_slots(*node, on_tid, on_vid);
  const OnnxOp& op = std::get<OnnxOp>(instruction);
  auto visit_list = [&](const std::vector<std::optional<Tid>>& tids, const char* list, FieldRole role) {
    for (size_t k = 0; k < tids.size(); ++k)
      if (tids[k]) on_tid(*tids[k], role, std::string(list) + "[" + std::to_string(k) + "]");
  };
  visit_list(op.inputs, "inputs", FieldRole::Read);
  visit_list(op.outputs, "outputs", FieldRole::Write);
  for (const auto& [name, vid] : op.value_attributes) on_vid(vid, name);
}

}  // namespace wgml::ir
