#include "ir/decode_support.h"

#include "wgml/error.h"

namespace wgml::ir {

NodeContext NodeContext::with_node(std::string_view node) const {
  NodeContext c = *this;
  c.node_ = node;
  return c;
}

NodeContext NodeContext::field(std::string_view field) const {
  NodeContext c = *this;
  c.field_ = field;
  return c;
}

std::string NodeContext::where() const {
  std::string w = source_ + ": chain " + std::to_string(chain_) + ", instruction " + std::to_string(instruction_);
  if (!node_.empty()) w += " (" + node_ + ")";
  if (!field_.empty()) w += ", field '" + field_ + "'";
  return w;
}

void NodeContext::fail(const std::string& expected) const {
  throw Error(ErrorCode::InvalidProgram, where() + ": expected " + expected);
}

std::optional<Tid> decode_tid(const mlx_delegate::Tid* t, const NodeContext&) {
  if (!t) return std::nullopt;
  return Tid{t->idx()};
}

std::optional<Vid> decode_vid(const mlx_delegate::Vid* v, const NodeContext&) {
  if (!v) return std::nullopt;
  return Vid{v->idx()};
}

namespace {

// IntOrVid and FloatOrVid share one shape: a literal, or a value slot when is_vid.
template <class Out, class In>
std::optional<Out> decode_literal_or_vid(const In* v, const NodeContext& ctx) {
  if (!v) return std::nullopt;
  Out r;
  r.literal = v->literal();
  r.is_vid = v->is_vid();
  if (r.is_vid) r.vid = require(decode_vid(v->vid(), ctx), ctx.field("vid"));
  return r;
}

}  // namespace

std::optional<IntOrVid> decode_int_or_vid(const mlx_delegate::IntOrVid* v, const NodeContext& ctx) {
  return decode_literal_or_vid<IntOrVid>(v, ctx);
}

std::optional<FloatOrVid> decode_float_or_vid(const mlx_delegate::FloatOrVid* v, const NodeContext& ctx) {
  return decode_literal_or_vid<FloatOrVid>(v, ctx);
}

std::optional<VidOrTid> decode_vid_or_tid(const mlx_delegate::VidOrTid* v, const NodeContext& ctx) {
  if (!v) return std::nullopt;
  VidOrTid r;
  r.is_vid = v->is_vid();
  if (r.is_vid) {
    r.vid = require(decode_vid(v->vid(), ctx), ctx.field("vid"));
  } else {
    r.tid = require(decode_tid(v->tid(), ctx), ctx.field("tid"));
  }
  return r;
}

std::optional<IntOrVidOrTid> decode_int_or_vid_or_tid(const mlx_delegate::IntOrVidOrTid* v, const NodeContext& ctx) {
  if (!v) return std::nullopt;
  IntOrVidOrTid r;
  r.kind = v->kind();
  r.literal = v->literal();
  switch (r.kind) {
    case IntOrVidOrTid::Literal:
      break;
    case IntOrVidOrTid::Value:
      r.vid = require(decode_vid(v->vid(), ctx), ctx.field("vid"));
      break;
    case IntOrVidOrTid::Tensor:
      r.tid = require(decode_tid(v->tid(), ctx), ctx.field("tid"));
      break;
    default:
      ctx.fail("kind 0 (literal), 1 (vid) or 2 (tid), found " + std::to_string(r.kind));
  }
  return r;
}

std::vector<Tid> decode_tid_list(const flatbuffers::Vector<const mlx_delegate::Tid*>* v, bool required, const NodeContext& ctx) {
  if (!v) {
    if (required) ctx.fail("a list of tensor slots, found none");
    return {};
  }
  std::vector<Tid> out;
  out.reserve(v->size());
  for (const auto* t : *v) out.push_back(require(decode_tid(t, ctx), ctx));
  return out;
}

std::vector<IntOrVid> decode_int_or_vid_list(const flatbuffers::Vector<flatbuffers::Offset<mlx_delegate::IntOrVid>>* v,
                                             bool required, const NodeContext& ctx) {
  if (!v) {
    if (required) ctx.fail("a list of ints or value slots, found none");
    return {};
  }
  std::vector<IntOrVid> out;
  out.reserve(v->size());
  for (const auto* item : *v) out.push_back(require(decode_int_or_vid(item, ctx), ctx));
  return out;
}

std::vector<std::string> decode_string_list(const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>* v, bool required,
                                            const NodeContext& ctx) {
  if (!v) {
    if (required) ctx.fail("a list of strings, found none");
    return {};
  }
  std::vector<std::string> out;
  out.reserve(v->size());
  for (const auto* s : *v) out.push_back(s ? s->str() : std::string());
  return out;
}

std::string decode_string(const flatbuffers::String* s, bool required, const NodeContext& ctx) {
  if (!s) {
    if (required) ctx.fail("a string, found none");
    return {};
  }
  return s->str();
}

void throw_unknown_node(int union_id, const NodeContext& ctx) {
  const std::string msg = ctx.where() + ": unknown node type id " + std::to_string(union_id) + " (this build knows ids 1-" +
                          std::to_string(kMaxNodeUnionId) + "; the program may come from a newer ExecuTorch)";
  throw Error(union_id == 0 ? ErrorCode::InvalidProgram : ErrorCode::Unsupported, msg);
}

}  // namespace wgml::ir
