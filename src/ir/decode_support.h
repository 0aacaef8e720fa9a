#pragma once
// Helpers the generated decoder (decode_nodes.cpp) uses to turn FlatBuffers tables into ir types.
// Each one reports a missing or malformed field with the chain, instruction, node and field.
#include <optional>
#include <string>
#include <string_view>

#include "ir/mlx_delegate_relaxed_generated.h"
#include "ir/nodes.h"

namespace wgml::ir {

// Where in the program a decode is happening, for error messages.
class NodeContext {
 public:
  NodeContext(std::string source, uint32_t chain, uint32_t instruction)
      : source_(std::move(source)), chain_(chain), instruction_(instruction) {}
  NodeContext with_node(std::string_view node) const;
  NodeContext field(std::string_view field) const;
  std::string where() const;
  [[noreturn]] void fail(const std::string& expected) const;

 private:
  std::string source_;
  uint32_t chain_;
  uint32_t instruction_;
  std::string node_;
  std::string field_;
};

template <class T>
T require(std::optional<T> value, const NodeContext& ctx) {
  if (!value) ctx.fail("a value for this required field, found none");
  return *value;
}

std::optional<Tid> decode_tid(const mlx_delegate::Tid* t, const NodeContext& ctx);
std::optional<Vid> decode_vid(const mlx_delegate::Vid* v, const NodeContext& ctx);
std::optional<IntOrVid> decode_int_or_vid(const mlx_delegate::IntOrVid* v, const NodeContext& ctx);
std::optional<FloatOrVid> decode_float_or_vid(const mlx_delegate::FloatOrVid* v, const NodeContext& ctx);
std::optional<VidOrTid> decode_vid_or_tid(const mlx_delegate::VidOrTid* v, const NodeContext& ctx);
std::optional<IntOrVidOrTid> decode_int_or_vid_or_tid(const mlx_delegate::IntOrVidOrTid* v, const NodeContext& ctx);

std::vector<Tid> decode_tid_list(const flatbuffers::Vector<const mlx_delegate::Tid*>* v, bool required, const NodeContext& ctx);
std::vector<IntOrVid> decode_int_or_vid_list(const flatbuffers::Vector<flatbuffers::Offset<mlx_delegate::IntOrVid>>* v,
                                             bool required, const NodeContext& ctx);
std::vector<std::string> decode_string_list(const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>* v, bool required,
                                            const NodeContext& ctx);
std::string decode_string(const flatbuffers::String* s, bool required, const NodeContext& ctx);

template <class T>
std::vector<T> decode_scalar_list(const flatbuffers::Vector<T>* v, bool required, const NodeContext& ctx) {
  if (!v) {
    if (required) ctx.fail("a list, found none");
    return {};
  }
  return std::vector<T>(v->begin(), v->end());
}

template <class T>
std::optional<T> decode_optional_scalar(flatbuffers::Optional<T> v) {
  if (!v.has_value()) return std::nullopt;
  return v.value();
}

[[noreturn]] void throw_unknown_node(int union_id, const NodeContext& ctx);

Node decode_node(const mlx_delegate::Instruction& ins, const NodeContext& ctx);

}  // namespace wgml::ir
