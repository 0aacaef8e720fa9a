#include "frontend/onnx/subgraph_depth.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <climits>
#include <vector>

#include "wgml/error.h"

namespace wgml::frontend::onnx {
namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;

// The messages on the way from a ModelProto to its subgraphs; everything else is skipped whole.
enum class Kind { Model, Function, Graph, Node, Attribute, Other };

// The kind of message field `field` of a `parent` holds (field numbers from onnx-ml.proto).
Kind child_kind(Kind parent, uint32_t field) {
  switch (parent) {
    case Kind::Model:
      return field == 7 ? Kind::Graph : field == 25 ? Kind::Function : Kind::Other;
    case Kind::Function:
      return field == 7 ? Kind::Node : field == 11 ? Kind::Attribute : Kind::Other;
    case Kind::Graph:
      return field == 1 ? Kind::Node : Kind::Other;
    case Kind::Node:
      return field == 5 ? Kind::Attribute : Kind::Other;
    case Kind::Attribute:
      return field == 6 || field == 11 ? Kind::Graph : Kind::Other;
    case Kind::Other:
      break;
  }
  return Kind::Other;
}

struct Frame {
  Kind kind;
  CodedInputStream::Limit limit;
};

}  // namespace

// An explicit stack rather than recursion: the bytes may nest deeper than a call stack could.
int subgraph_depth(const void* data, size_t size) {
  CodedInputStream in(static_cast<const uint8_t*>(data), static_cast<int>(std::min<size_t>(size, INT_MAX)));
  std::vector<Frame> open{{Kind::Model, {}}};
  int graphs = 0, deepest = 0;
  while (true) {
    const uint32_t tag = in.ReadTag();
    if (tag == 0) {  // the end of the current message (or of what can be read)
      if (open.size() == 1 || !in.ConsumedEntireMessage()) break;
      graphs -= open.back().kind == Kind::Graph;
      in.PopLimit(open.back().limit);
      open.pop_back();
      continue;
    }
    const Kind kind = child_kind(open.back().kind, WireFormatLite::GetTagFieldNumber(tag));
    const bool nested = WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
    if (!nested || kind == Kind::Other) {
      if (!WireFormatLite::SkipField(&in, tag)) break;
      continue;
    }
    uint32_t length = 0;
    if (!in.ReadVarint32(&length)) break;
    open.push_back({kind, in.PushLimit(static_cast<int>(std::min<uint32_t>(length, INT_MAX)))});
    if (kind == Kind::Graph) deepest = std::max(deepest, ++graphs - 1);  // the model's own graph is depth 0
  }
  return deepest;
}

void refuse_deep_subgraphs(const std::string& path, const void* data, size_t size) {
  const int depth = subgraph_depth(data, size);
  if (depth <= kMaxSubgraphDepth) return;
  throw Error(ErrorCode::Unsupported, path + ": expected subgraphs (If branches, Loop and Scan bodies) nested at most " +
                                          std::to_string(kMaxSubgraphDepth) + " deep, found them nested " +
                                          std::to_string(depth) + " deep (protobuf parses at most " +
                                          std::to_string(CodedInputStream::GetDefaultRecursionLimit()) +
                                          " nested message levels)");
}

}  // namespace wgml::frontend::onnx
