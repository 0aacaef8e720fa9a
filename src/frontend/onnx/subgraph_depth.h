#pragma once
// How deeply an ONNX file nests subgraphs (If branches, Loop and Scan bodies), read from its bytes
// without parsing them into messages. Protobuf refuses messages nested more than 100 levels deep
// and says only that the bytes do not parse: this tells the load error why.
#include <cstddef>
#include <string>

namespace wgml::frontend::onnx {

// A subgraph is three message levels below the graph holding it (node, attribute, graph), so
// about 31 nested subgraphs fit protobuf's 100 levels, as in onnxruntime, which keeps protobuf's
// limit too. Deeper ones are refused, not parsed under a higher limit: lowering recurses per level.
constexpr int kMaxSubgraphDepth = 31;

// The deepest subgraph nesting in a serialized ModelProto: 0 when its graph has no subgraphs.
// Reads what it can of malformed bytes and stops at the first thing it cannot read.
int subgraph_depth(const void* data, size_t size);

// For bytes protobuf did not parse: throws Unsupported, naming `path`, the depth found and the
// limit, when they nest subgraphs deeper than kMaxSubgraphDepth.
void refuse_deep_subgraphs(const std::string& path, const void* data, size_t size);

}  // namespace wgml::frontend::onnx
