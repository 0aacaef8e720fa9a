#include "frontend/onnx/onnx_model.h"

#include <climits>
#include <filesystem>
#include <optional>
#include <set>

#include "core/printable.h"
#include "frontend/onnx/lowering.h"
#include "frontend/onnx/subgraph_depth.h"
#include "frontend/onnx/tensor_proto.h"
#include "ir/validate.h"

namespace wgml::frontend::onnx {
namespace {

const std::vector<OpRule>& all_rules() {
  static const std::vector<OpRule> rules = [] {
    std::vector<OpRule> r;
    add_elementwise_rules(r);
    add_shape_rules(r);
    add_reduce_rules(r);
    add_nn_rules(r);
    add_kept_rules(r);
    add_control_rules(r);
    add_attention_rules(r);
    add_quant_rules(r);
    add_misc_rules(r);
    add_sequence_rules(r);
    add_contrib_rules(r);
    add_contrib_decoder_rules(r);
    add_contrib_encoder_rules(r);
    return r;
  }();
  return rules;
}

std::string normalized_domain(const std::string& domain) { return domain == "ai.onnx" ? std::string() : domain; }

std::string node_label(const pb::NodeProto& n) { return "node '" + n.name() + "' (" + n.op_type() + ")"; }

// Nodes in an order where every input is produced before it is read. ONNX requires graphs to be
// sorted; this also accepts unsorted ones and names the nodes of a cycle or a missing input.
std::vector<int> topological_order(const Lowering& g, const pb::GraphProto& graph, const std::string& source) {
  const int n = graph.node_size();
  std::map<std::string, int> producer;
  for (int i = 0; i < n; ++i)
    for (const std::string& out : graph.node(i).output()) {
      if (out.empty()) continue;
      if (!producer.emplace(out, i).second || g.has_value(out))
        throw Error(ErrorCode::InvalidProgram, source + ": " + node_label(graph.node(i)) + ": output '" + out +
                                                   "' is already defined (ONNX values are assigned once)");
    }
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> consumers(n);
  for (int i = 0; i < n; ++i)
    for (const std::string& in : graph.node(i).input()) {
      if (in.empty() || g.has_value(in) || g.poisoned.count(in)) continue;
      auto it = producer.find(in);
      if (it == producer.end())
        throw Error(ErrorCode::InvalidProgram, source + ": " + node_label(graph.node(i)) + ": input '" + in +
                                                   "' is no graph input, initializer or node output");
      ++pending[i];
      consumers[it->second].push_back(i);
    }
  std::set<int> ready;
  for (int i = 0; i < n; ++i)
    if (pending[i] == 0) ready.insert(i);
  std::vector<int> order;
  while (!ready.empty()) {
    const int i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (int c : consumers[i])
      if (--pending[c] == 0) ready.insert(c);
  }
  if (static_cast<int>(order.size()) != n) {
    std::string cycle;
    for (int i = 0; i < n; ++i)
      if (pending[i] > 0) cycle += (cycle.empty() ? "" : ", ") + node_label(graph.node(i));
    throw Error(ErrorCode::InvalidProgram,
                source + ": the graph has a cycle: expected an acyclic graph, found " + cycle + " waiting on each other");
  }
  return order;
}

void poison_outputs(Lowering& g, const pb::NodeProto& node) {
  for (const std::string& out : node.output())
    if (!out.empty()) g.poisoned.insert(out);
}

bool reads_poisoned(const Lowering& g, const pb::NodeProto& node) {
  for (const std::string& in : node.input())
    if (g.poisoned.count(in)) return true;
  return false;
}

void lower_node(Lowering& g, const pb::NodeProto& node, std::vector<Unsupported>& unsupported);

// The condition of the first input whose value depends on which way a run-time If went.
std::optional<ir::Vid> alternatives_condition(const Lowering& g, const pb::NodeProto& node) {
  for (const std::string& in : node.input())
    if (!in.empty() && g.has_value(in) && g.value(in).alternatives) return g.value(in).alternatives->cond;
  return std::nullopt;
}

// Lowers the node in `chain` seeing the values of the way `holds` says; what went wrong when the
// node cannot be lowered there (a Concat of ranks 2 and 3, say), else nothing.
std::vector<Unsupported> lower_on_one_side(Lowering& g, const pb::NodeProto& node, ir::Vid cond, bool holds, uint32_t chain,
                                           std::vector<std::optional<Value>>& outputs) {
  std::vector<Unsupported> problems;
  g.count_lowered(node);  // a node reading the choices of k Ifs is lowered 2^k times
  g.in_chain(chain, [&] {
    g.assume(cond, holds);
    try {
      lower_node(g, node, problems);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::InvalidProgram) throw;
      problems.push_back({e.what()});
    }
    for (const std::string& out : node.output())
      outputs.push_back(problems.empty() && !out.empty() && g.has_value(out) ? std::optional<Value>(g.value(out)) : std::nullopt);
  });
  for (const std::string& out : node.output()) g.poisoned.erase(out);
  return problems;
}

// A node reading such a value is lowered once per way the If can go, each in a chain of an IfNode
// on the same condition that sees that way's values: a squeeze-if-the-dim-is-1 branch makes the
// rank known again on each side, and shape tests downstream fold there. A side the node cannot be
// lowered on is one the inputs never take when the model is sound (onnxruntime would fail there
// at run time): it gets an op that fails at run time, and the node's outputs are the other side's.
void lower_per_alternative(Lowering& g, const pb::NodeProto& node, ir::Vid cond, std::vector<Unsupported>& unsupported) {
  const uint32_t chains[2] = {g.new_chain(), g.new_chain()};  // by whether cond holds
  std::vector<std::optional<Value>> outputs[2];
  const std::vector<Unsupported> problems[2] = {lower_on_one_side(g, node, cond, false, chains[0], outputs[0]),
                                                lower_on_one_side(g, node, cond, true, chains[1], outputs[1])};
  g.set_origin("ONNX " + node_label(node));
  g.emit(ir::IfNode{.cond = {0, cond, true}, .then_chain_idx = chains[1], .else_chain_idx = chains[0]});
  if (!problems[0].empty() && !problems[1].empty()) {
    unsupported.insert(unsupported.end(), problems[1].begin(), problems[1].end());
    return poison_outputs(g, node);
  }
  for (int holds = 0; holds < 2; ++holds) {
    if (problems[holds].empty()) continue;
    ir::OnnxOp fail;
    fail.domain = "wgml";
    fail.op_type = "Unreachable";
    fail.opset = 1;
    fail.name = node.name();
    fail.attributes.push_back({"reason", problems[holds].front().what});
    g.replace_chain(chains[holds], std::move(fail));
  }
  for (int i = 0; i < node.output_size(); ++i) {
    if (node.output(i).empty()) continue;
    const auto& when_true = outputs[1][i];
    const auto& when_false = outputs[0][i];
    if (when_true && when_false)
      g.define(node.output(i), g.join(cond, chains[1], chains[0], *when_true, *when_false));
    else if (when_true || when_false)
      g.define(node.output(i), g.only_one_side(when_true ? *when_true : *when_false, when_true ? chains[0] : chains[1]));
    else
      g.poisoned.insert(node.output(i));
  }
}

// The ops a sequence value may flow into; any other is refused at load time.
bool reads_sequences_only_where_allowed(const Lowering& g, const pb::NodeProto& node) {
  const std::string& op = node.op_type();
  if (op.starts_with("Sequence") || op == "ConcatFromSequence" || op == "Identity") return true;
  for (const std::string& in : node.input())
    if (!in.empty() && g.has_value(in) && g.value(in).sequence) return false;
  return true;
}

// Nodes reading the result of an unsupported node are still checked for a lowering rule, so one
// error lists every op the model needs; their dtype checks need the inputs and are skipped.
void lower_node(Lowering& g, const pb::NodeProto& node, std::vector<Unsupported>& unsupported) {
  const std::string domain = normalized_domain(node.domain());
  auto opset_it = g.opsets.find(domain);
  if (opset_it == g.opsets.end())
    throw Error(ErrorCode::InvalidProgram, g.source() + ": " + node_label(node) + ": the model imports no opset for domain '" +
                                               (domain.empty() ? "ai.onnx" : domain) + "'");
  const OpRule* rule = find_rule(domain, node.op_type(), opset_it->second);
  if (!rule) unsupported.push_back({versioned_label(node, opset_it->second) + ": no lowering for this op"});
  const bool sequence_misused = rule && !reads_sequences_only_where_allowed(g, node);
  if (sequence_misused) unsupported.push_back({versioned_label(node, opset_it->second) + ": a sequence input"});
  if (!rule || sequence_misused || reads_poisoned(g, node)) return poison_outputs(g, node);
  if (const auto cond = alternatives_condition(g, node)) return lower_per_alternative(g, node, *cond, unsupported);
  NodeLowering n(g, node, opset_it->second);
  g.set_origin("ONNX " + node_label(node));
  try {
    rule->lower(n);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::Unsupported) {
      unsupported.push_back({e.what()});
      return poison_outputs(g, node);
    }
    // Errors raised below the rule (a rank check, an arithmetic overflow) get the node's name.
    const std::string message = e.what();
    if (message.find(printable(node_label(node), Newlines::Keep)) != std::string::npos) throw;  // as Error wrote it
    throw Error(e.code(), g.source() + ": " + node_label(node) + ": " + message);
  }
  for (size_t i = 0; i < n.num_outputs(); ++i)
    if (n.wants_output(i) && !g.has_value(node.output(static_cast<int>(i))))
      n.unsupported("output " + std::to_string(i) + " is not produced by this lowering");
}

std::vector<ir::Dim> declared_dims(const pb::TypeProto::Tensor& t) {
  std::vector<ir::Dim> dims;
  for (const auto& d : t.shape().dim()) {
    if (d.has_dim_value() && d.dim_value() >= 0 && d.dim_value() <= INT32_MAX)
      dims.push_back(ir::Dim{static_cast<int32_t>(d.dim_value()), 0, -1});
    else
      dims.push_back(ir::Dim{});
  }
  return dims;
}

// Graph inputs that are not initializers become program inputs; dims from dim_value are static,
// symbolic or missing ones dynamic.
void define_inputs(Lowering& g, const pb::GraphProto& graph, std::vector<Unsupported>& unsupported) {
  for (const pb::ValueInfoProto& in : graph.input()) {
    if (g.has_value(in.name())) continue;  // an initializer (IR < 4 lists them as inputs too)
    const std::string where = "graph input '" + in.name() + "'";
    if (!in.type().has_tensor_type()) {
      unsupported.push_back({where + ": only tensor inputs are supported"});
      g.poisoned.insert(in.name());
      continue;
    }
    const auto& tt = in.type().tensor_type();
    const auto dtype = ir::dtype_from_onnx(tt.elem_type());
    if (!dtype) {
      unsupported.push_back({where + ": element type " + onnx_type_name(tt.elem_type())});
      g.poisoned.insert(in.name());
      continue;
    }
    if (!tt.has_shape()) throw Error(ErrorCode::Unsupported, g.source() + ": " + where + ": inputs of unknown rank");
    ir::TensorMeta meta;
    meta.dtype = *dtype;
    meta.shape = declared_dims(tt);
    Dims dims;
    for (const ir::Dim& d : meta.shape) dims.push_back(d.is_static() ? d.value : kUnknownDim);
    const ir::Tid tid = g.add_input(in.name(), std::move(meta));
    g.define(in.name(), Lowering::runtime(tid, *dtype, dims));
  }
}

void define_initializers(Lowering& g, const pb::GraphProto& graph, std::vector<Unsupported>& unsupported) {
  for (const pb::TensorProto& t : graph.initializer()) {
    try {
      g.define(t.name(), g.constant_value(g.load_tensor(t, "initializer '" + t.name() + "'")));
    } catch (const Error& e) {
      if (e.code() != ErrorCode::Unsupported) throw;
      unsupported.push_back({e.what()});
      g.poisoned.insert(t.name());
    }
  }
  if (graph.sparse_initializer_size() > 0)
    unsupported.push_back({"sparse initializers ('" + graph.sparse_initializer(0).values().name() + "', ...)"});
}

void define_outputs(Lowering& g, const pb::GraphProto& graph) {
  for (const pb::ValueInfoProto& out : graph.output()) {
    if (g.poisoned.count(out.name())) continue;
    if (!g.has_value(out.name()))
      throw Error(ErrorCode::InvalidProgram, g.source() + ": graph output '" + out.name() + "' is produced by no node");
    const auto& tt = out.type().tensor_type();
    g.add_output(out.name(), g.value(out.name()), declared_dims(tt));
  }
}

std::map<std::string, int64_t> read_opsets(const pb::ModelProto& m, const std::string& source) {
  std::map<std::string, int64_t> opsets;
  for (const pb::OperatorSetIdProto& o : m.opset_import()) opsets[normalized_domain(o.domain())] = o.version();
  auto it = opsets.find("");
  if (it != opsets.end() && (it->second < 1 || it->second > kMaxOpset))
    throw Error(ErrorCode::Unsupported, source + ": opset_import: expected an ai.onnx opset in [1, " + std::to_string(kMaxOpset) +
                                            "], found " + std::to_string(it->second));
  return opsets;
}

void describe(ir::Model& model, const pb::ModelProto& m, const pb::GraphProto& graph) {
  model.source_info["ir_version"] = std::to_string(m.ir_version());
  if (!m.producer_name().empty()) model.source_info["producer"] = m.producer_name() + " " + m.producer_version();
  std::string opsets;
  for (const pb::OperatorSetIdProto& o : m.opset_import())
    opsets += (opsets.empty() ? "" : ", ") + (o.domain().empty() ? std::string("ai.onnx") : o.domain()) + " " +
              std::to_string(o.version());
  model.source_info["opsets"] = opsets;
  model.source_info["graph"] = graph.name();
  model.source_info["initializers"] = std::to_string(graph.initializer_size());
  for (const pb::NodeProto& n : graph.node()) ++model.source_op_histogram[n.op_type()];
}

// Nodes in the graph and in all its subgraphs (protobuf's nesting limit bounds the recursion).
uint64_t nodes_in(const pb::GraphProto& graph) {
  uint64_t nodes = graph.node_size();
  for (const pb::NodeProto& node : graph.node())
    for (const pb::AttributeProto& a : node.attribute()) {
      if (a.has_g()) nodes += nodes_in(a.g());
      for (const pb::GraphProto& g : a.graphs()) nodes += nodes_in(g);
    }
  return nodes;
}

// How many times over the lowering may lower the file's nodes: once each when no Loop or Scan
// body changes its carried shapes, twice for such a body, four times for one nested in another...
constexpr uint64_t kLoweringsPerNode = 16;

std::string list_unsupported(const std::vector<Unsupported>& unsupported) {
  std::string out;
  for (const Unsupported& u : unsupported) out += "\n  " + u.what;
  return out;
}

}  // namespace

const OpRule* find_rule(const std::string& domain, const std::string& op_type, int64_t opset) {
  const OpRule* best = nullptr;
  for (const OpRule& r : all_rules())
    if (r.domain == domain && r.op_type == op_type && r.since <= opset && (!best || r.since > best->since)) best = &r;
  return best;
}

void lower_nodes(Lowering& g, const pb::GraphProto& graph, std::vector<Unsupported>& unsupported) {
  for (int i : topological_order(g, graph, g.source())) {
    g.count_lowered(graph.node(i));
    lower_node(g, graph.node(i), unsupported);
  }
}

bool has_onnx_extension(const std::string& path) { return std::filesystem::path(path).extension() == ".onnx"; }

ir::Model load_onnx_model(const std::string& path, const io::ByteView& file) {
  auto proto = std::make_shared<pb::ModelProto>();
  if (file.size > INT_MAX)
    throw Error(ErrorCode::Unsupported, path + ": ONNX files over 2 GiB must keep their weights as external data");
  if (!proto->ParseFromArray(file.data, static_cast<int>(file.size))) {
    refuse_deep_subgraphs(path, file.data, file.size);
    throw Error(ErrorCode::InvalidFormat, path +
                                              ": expected a serialized ONNX ModelProto "
                                              "(protobuf), found bytes that do not parse");
  }
  if (!proto->has_graph()) throw Error(ErrorCode::InvalidFormat, path + ": expected a ModelProto with a graph, found none");
  const pb::GraphProto& graph = proto->graph();

  ir::Model model;
  model.path = path;
  model.format = ir::ModelFormat::Onnx;
  describe(model, *proto, graph);

  Lowering g(path);
  g.opsets = read_opsets(*proto, path);
  const TensorSource source{path, std::filesystem::path(path).parent_path().string(), proto};
  g.load_tensor = [source](const pb::TensorProto& t, const std::string& where) { return tensor_from_proto(t, source, where); };
  const uint64_t nodes = nodes_in(graph);
  g.set_node_budget(kLoweringsPerNode * nodes, nodes);
  std::vector<Unsupported> unsupported;
  define_initializers(g, graph, unsupported);
  define_inputs(g, graph, unsupported);
  lower_nodes(g, graph, unsupported);
  if (!unsupported.empty())
    throw Error(ErrorCode::Unsupported, path + ": " + std::to_string(unsupported.size()) +
                                            " unsupported op, opset or dtype use(s):" + list_unsupported(unsupported));
  define_outputs(g, graph);
  model.source_info["nodes_lowered"] = std::to_string(g.nodes_lowered());
  model.program = g.finish(model.named_data);
  ir::validate_program(model.program, path);
  model.constants = ir::bind_constants(model.program, model.named_data, path);
  return model;
}

}  // namespace wgml::frontend::onnx
