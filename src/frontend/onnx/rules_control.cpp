// Control flow: ONNX subgraphs become body chains. If -> IfNode; Loop with a trip count and a
// condition that never turns false, and Scan, -> ScanNode (loop-carried values live in carry
// slots the body overwrites; per-step outputs are stacked by the node).
#include <algorithm>

#include "frontend/onnx/lowering.h"
#include "frontend/onnx/rule_helpers.h"

namespace wgml::frontend::onnx {
namespace {

using namespace ir;

// Lowers a subgraph's initializers and nodes into the current chain; any unsupported use inside
// is reported as one error for the node that owns the subgraph.
void lower_body(NodeLowering& n, const pb::GraphProto& body) {
  std::vector<Unsupported> unsupported;
  for (const pb::TensorProto& t : body.initializer())
    n.g.define(t.name(), n.g.constant_value(n.g.load_tensor(t, n.where() + ", subgraph initializer '" + t.name() + "'")));
  lower_nodes(n.g, body, unsupported);
  if (unsupported.empty()) return;
  std::string what = "its subgraph '" + body.name() + "' has unsupported nodes:";
  for (const Unsupported& u : unsupported) what += " [" + u.what + "]";
  n.unsupported(what);
}

const Value& body_output(NodeLowering& n, const pb::GraphProto& body, int i) {
  const std::string& name = body.output(i).name();
  if (n.g.poisoned.count(name)) n.unsupported("subgraph output '" + name + "' comes from an unsupported node");
  if (!n.g.has_value(name)) n.fail("subgraph output '" + name + "' to be produced in the subgraph");
  return n.g.value(name);
}

// Writes body output i into `slot` (an IdCopy, free until either side changes).
Value copy_body_output(NodeLowering& n, const pb::GraphProto& body, int i, Tid slot) {
  const Value v = n.g.merged(body_output(n, body, i));
  n.g.emit(IdCopyNode{.x = n.g.tensor(v), .out = slot});
  return Lowering::runtime(slot, v.dtype, v.dims);
}

// Branch outputs may differ in shape and rank, as ONNX Runtime allows: what the model does with
// them downstream is lowered per branch where the lowering needs to know which (Lowering::join).
void if_op(NodeLowering& n) {
  const pb::GraphProto* then_graph = n.attr_graph("then_branch");
  const pb::GraphProto* else_graph = n.attr_graph("else_branch");
  if (!then_graph || !else_graph) n.fail("then_branch and else_branch graphs");
  const size_t outputs = n.num_outputs();
  if (then_graph->output_size() != static_cast<int>(outputs) || else_graph->output_size() != static_cast<int>(outputs))
    n.fail("branches with " + std::to_string(outputs) + " outputs");
  // A condition known at load time picks its branch now: lowered in place, the other dropped.
  if (const auto known = n.g.literal_ints(n.in(0)); known && known->size() == 1) {
    const pb::GraphProto& taken = (*known)[0] != 0 ? *then_graph : *else_graph;
    lower_body(n, taken);
    for (size_t i = 0; i < outputs; ++i) n.set_output(i, body_output(n, taken, static_cast<int>(i)));
    return;
  }
  const IntOrVid cond = n.g.int_elements(n.in(0), n.where() + " input 0 (cond)")[0];
  auto branch = [&](const pb::GraphProto& graph, std::vector<Value>& values) {
    const uint32_t chain = n.g.new_chain();
    n.g.in_chain(chain, [&] {
      lower_body(n, graph);
      for (size_t i = 0; i < outputs; ++i) values.push_back(body_output(n, graph, static_cast<int>(i)));
    });
    return chain;
  };
  std::vector<Value> then_values, else_values;
  const uint32_t then_chain = branch(*then_graph, then_values);
  const uint32_t else_chain = branch(*else_graph, else_values);
  n.g.emit(IfNode{.cond = cond, .then_chain_idx = then_chain, .else_chain_idx = else_chain});
  for (size_t i = 0; i < outputs; ++i) {
    if (then_values[i].dtype != else_values[i].dtype) n.fail("branches whose outputs have equal dtypes");
    n.set_output(i, n.g.join(cond.vid, then_chain, else_chain, then_values[i], else_values[i]));
  }
}

// A ScanNode over `originals` (scan axis 0) whose body is `body`: body inputs are first the
// carried values, then one slice per original (the caller names them); outputs are first the new
// carried values, then the per-step scan outputs.
struct ScanParts {
  std::vector<Value> carried_initial;                         // values of the carried inputs before the first step
  std::vector<Value> sliced_inputs;                           // originals (scanned along axis 0)
  std::vector<std::string> body_inputs;                       // names: carried, then sliced
  int skipped_body_outputs = 0;                               // leading body outputs that are neither (Loop's cond)
  std::vector<std::pair<std::string, Value>> body_constants;  // body inputs fixed at load time
  std::vector<Dims> carried_dims;                             // over all steps (carried_dims()); else the initial dims
};

struct ScanResult {
  std::vector<Value> carried;  // final values
  std::vector<Value> stacked;  // per-step outputs stacked on axis 0
};

ScanResult emit_scan(NodeLowering& n, const pb::GraphProto& body, const ScanParts& parts) {
  const size_t carried = parts.carried_initial.size();
  if (body.output_size() < parts.skipped_body_outputs + static_cast<int>(carried))
    n.fail("a body with at least " + std::to_string(parts.skipped_body_outputs + carried) + " outputs");
  std::vector<Tid> carry, originals, sliced, outputs;
  for (const Value& v : parts.carried_initial) {
    const Tid slot = n.g.new_temp();
    n.g.emit(IdCopyNode{.x = n.g.tensor(v), .out = slot});
    carry.push_back(slot);
  }
  for (const Value& v : parts.sliced_inputs) {
    originals.push_back(n.g.tensor(v));
    sliced.push_back(n.g.new_temp());
  }
  const size_t scan_outputs = body.output_size() - parts.skipped_body_outputs - carried;
  for (size_t i = 0; i < scan_outputs; ++i) outputs.push_back(n.g.new_temp());
  ScanResult result;
  const uint32_t chain = n.g.new_chain();
  n.g.in_chain(chain, [&] {
    for (size_t i = 0; i < carried; ++i) {
      const Value& v = parts.carried_initial[i];
      n.g.define(parts.body_inputs[i],
                 Lowering::runtime(carry[i], v.dtype, parts.carried_dims.empty() ? v.dims : parts.carried_dims[i]));
    }
    for (size_t i = 0; i < sliced.size(); ++i) {
      const Value& v = parts.sliced_inputs[i];
      n.g.define(parts.body_inputs[carried + i], Lowering::runtime(sliced[i], v.dtype, Dims(v.dims.begin() + 1, v.dims.end())));
    }
    for (const auto& [name, v] : parts.body_constants) n.g.define(name, v);
    lower_body(n, body);
    const int first = parts.skipped_body_outputs;
    // Scan outputs are read before the carried values are overwritten: they may alias them.
    for (size_t i = 0; i < scan_outputs; ++i) {
      const Value v = copy_body_output(n, body, first + static_cast<int>(carried + i), outputs[i]);
      Dims dims{kUnknownDim};
      dims.insert(dims.end(), v.dims.begin(), v.dims.end());
      result.stacked.push_back(Lowering::runtime(outputs[i], v.dtype, dims));
    }
    std::vector<Tid> fresh;
    for (size_t i = 0; i < carried; ++i) {
      const Tid t = n.g.new_temp();
      n.g.emit(IdCopyNode{.x = n.g.tensor(n.g.merged(body_output(n, body, first + static_cast<int>(i)))), .out = t});
      fresh.push_back(t);
    }
    for (size_t i = 0; i < carried; ++i) {
      n.g.emit(IdCopyNode{.x = fresh[i], .out = carry[i]});
      const Value& v = body_output(n, body, first + static_cast<int>(i));
      const Dims& before = parts.carried_dims.empty() ? parts.carried_initial[i].dims : parts.carried_dims[i];
      if (v.rank() != static_cast<int>(before.size())) n.unsupported("a loop-carried value whose rank changes");
      result.carried.push_back(Lowering::runtime(carry[i], v.dtype, merge_dims(before, v.dims)));
    }
  });
  n.g.emit(ScanNode{.originals = originals,
                    .sliced = sliced,
                    .outputs = outputs,
                    .carry = carry,
                    .body_chain_idx = static_cast<int32_t>(chain),
                    .scan_axis = 0});
  return result;
}

// Carried values may change shape from step to step (a tensor growing by a row), as ONNX Runtime
// allows: the body is lowered as a trial, taken back, until the dims it sees for them stop
// changing (unknown where a step changes them). The trial whose dims held is the lowering:
// lowering it again would double the work at every level of nested Loops.
ScanResult emit_scan_of_changing_shapes(NodeLowering& n, const pb::GraphProto& body, ScanParts parts) {
  if (parts.carried_initial.empty()) return emit_scan(n, body, parts);
  for (const Value& v : parts.carried_initial) parts.carried_dims.push_back(v.dims);
  // Dims only ever turn unknown, so this ends.
  while (true) {
    Lowering::Trial trial(n.g);
    ScanResult r = emit_scan(n, body, parts);
    bool changed = false;
    for (size_t i = 0; i < r.carried.size(); ++i) {
      changed |= r.carried[i].dims != parts.carried_dims[i];
      parts.carried_dims[i] = r.carried[i].dims;
    }
    if (!changed) {
      trial.keep();
      return r;
    }
  }
}

bool is_true_constant(const Lowering& g, const Value& v) {
  const auto ints = g.literal_ints(v);
  return ints && ints->size() == 1 && (*ints)[0] != 0;
}

// Whether the body's condition output is its condition input passed through, or a constant.
bool condition_stays_true(const pb::GraphProto& body) {
  const std::string& cond_in = body.input(1).name();
  const std::string& cond_out = body.output(0).name();
  if (cond_out == cond_in) return true;
  for (const pb::TensorProto& t : body.initializer())
    if (t.name() == cond_out) return true;
  for (const pb::NodeProto& node : body.node()) {
    if (node.output_size() != 1 || node.output(0) != cond_out) continue;
    if (node.op_type() == "Constant") return true;
    if (node.op_type() == "Identity" && node.input_size() == 1 && node.input(0) == cond_in) return true;
  }
  return false;
}

// Loop with trip count M: a scan over arange(M), the iteration number being the slice. A body
// must pass its condition through unchanged (an early exit has no form in the IR), so the loop
// runs M times when the initial condition holds and not at all otherwise: M * cond steps.
void loop(NodeLowering& n) {
  const pb::GraphProto* body = n.attr_graph("body");
  if (!body) n.fail("a body graph");
  if (!n.has_input(0)) n.unsupported("a Loop without a trip count (it runs until its condition turns false)");
  // M and cond may be all the node lists (trailing optional inputs omitted): then nothing is carried.
  const int carried = std::max(static_cast<int>(n.num_inputs()) - 2, 0);
  if (body->input_size() != carried + 2 || body->output_size() < carried + 1)
    n.fail("a body with " + std::to_string(carried + 2) + " inputs and at least " + std::to_string(carried + 1) + " outputs");
  if (!condition_stays_true(*body)) n.unsupported("a Loop whose body computes its condition (early exit)");

  IntOrVid trip = n.g.int_elements(n.in(0), n.where() + " input 0 (M)")[0];
  if (n.has_input(1) && !is_true_constant(n.g, n.in(1)))
    trip = n.g.mul(trip, n.g.int_elements(n.in(1), n.where() + " input 1 (cond)")[0]);
  const Tid iterations = n.g.new_temp();
  n.g.emit(ARangeNode{
      .out = iterations, .start = literal(0), .stop = trip, .step = literal(1), .scalar_type = *scalar_type(DType::Int64)});
  ScanParts parts;
  for (int i = 0; i < carried; ++i) {
    parts.carried_initial.push_back(n.in(2 + i));
    parts.body_inputs.push_back(body->input(2 + i).name());
  }
  parts.sliced_inputs.push_back(Lowering::runtime(iterations, DType::Int64, {trip.is_vid ? kUnknownDim : trip.literal}));
  parts.body_inputs.push_back(body->input(0).name());  // the iteration number
  Tensor truth(DType::Bool, {});
  truth.mutable_data()[0] = 1;
  parts.body_constants.emplace_back(body->input(1).name(), n.g.constant_value(truth));
  parts.skipped_body_outputs = 1;
  const ScanResult r = emit_scan_of_changing_shapes(n, *body, parts);
  for (int i = 0; i < carried; ++i) n.set_output(i, r.carried[i]);
  for (size_t i = 0; i < r.stacked.size(); ++i) n.set_output(carried + i, r.stacked[i]);
}

void scan(NodeLowering& n) {
  const pb::GraphProto* body = n.attr_graph("body");
  if (!body) n.fail("a body graph");
  const int scanned = static_cast<int>(n.attr_int("num_scan_inputs", 0));
  const int carried = static_cast<int>(n.num_inputs()) - scanned;
  if (scanned <= 0 || carried < 0 || body->input_size() != carried + scanned)
    n.fail("num_scan_inputs in [1, inputs] and a body with as many inputs as the node");
  const std::vector<int64_t> input_axes = n.attr_ints("scan_input_axes");
  const std::vector<int64_t> input_directions = n.attr_ints("scan_input_directions");
  const std::vector<int64_t> output_axes = n.attr_ints("scan_output_axes");
  const std::vector<int64_t> output_directions = n.attr_ints("scan_output_directions");
  const size_t scan_outputs = static_cast<size_t>(std::max(body->output_size() - carried, 0));
  for (const auto& [list, count] :
       {std::pair(&input_axes, scanned), std::pair(&input_directions, scanned),
        std::pair(&output_axes, static_cast<int>(scan_outputs)), std::pair(&output_directions, static_cast<int>(scan_outputs))})
    if (!list->empty() && list->size() != static_cast<size_t>(count))
      n.fail(
          "scan_input_axes and scan_input_directions with one value per scanned input, scan_output_axes and "
          "scan_output_directions with one per scanned output (or none)");
  ScanParts parts;
  for (int i = 0; i < carried; ++i) {
    parts.carried_initial.push_back(n.in(i));
    parts.body_inputs.push_back(body->input(i).name());
  }
  // Each scanned input is moved so that its scan axis is axis 0, reversed when scanned backwards.
  for (int i = 0; i < scanned; ++i) {
    const Value& v = n.in(carried + i);
    const int axis = n.axis(input_axes.empty() ? 0 : input_axes[i], v.rank());
    Tid t = n.in_tensor(carried + i);
    Dims dims = v.dims;
    if (axis != 0) {
      std::vector<int> perm{axis};
      for (int d = 0; d < v.rank(); ++d)
        if (d != axis) perm.push_back(d);
      t = n.transpose(t, perm);
      dims.clear();
      for (int p : perm) dims.push_back(v.dims[p]);
    }
    if (!input_directions.empty() && input_directions[i] != 0) t = slice_axis(n, t, 0, literal(-1), literal(INT32_MIN), -1);
    parts.sliced_inputs.push_back(Lowering::runtime(t, v.dtype, dims));
    parts.body_inputs.push_back(body->input(carried + i).name());
  }
  ScanResult r = emit_scan_of_changing_shapes(n, *body, parts);
  for (int i = 0; i < carried; ++i) n.set_output(i, r.carried[i]);
  for (size_t i = 0; i < r.stacked.size(); ++i) {
    Value v = r.stacked[i];
    Tid t = *v.tid;
    if (!output_directions.empty() && output_directions[i] != 0) t = slice_axis(n, t, 0, literal(-1), literal(INT32_MIN), -1);
    const int axis = output_axes.empty() ? 0 : n.axis(output_axes[i], v.rank());
    if (axis != 0) {
      std::vector<int> perm;
      for (int d = 1; d <= axis; ++d) perm.push_back(d);
      perm.push_back(0);
      for (int d = axis + 1; d < v.rank(); ++d) perm.push_back(d);
      t = n.transpose(t, perm);
      Dims dims;
      for (int p : perm) dims.push_back(v.dims[p]);
      v.dims = dims;
    }
    n.set_output(carried + i, t, v.dtype, v.dims);
  }
}

}  // namespace

std::vector<Value> inline_subgraph(NodeLowering& n, const pb::GraphProto& graph, const std::vector<Value>& inputs) {
  if (graph.input_size() != static_cast<int>(inputs.size()))
    n.fail("a subgraph with " + std::to_string(inputs.size()) + " inputs, found " + std::to_string(graph.input_size()));
  for (size_t i = 0; i < inputs.size(); ++i) n.g.define(graph.input(static_cast<int>(i)).name(), inputs[i]);
  lower_body(n, graph);
  std::vector<Value> outputs;
  for (int i = 0; i < graph.output_size(); ++i) outputs.push_back(body_output(n, graph, i));
  return outputs;
}

void add_control_rules(std::vector<OpRule>& r) {
  r.push_back({"", "If", 1, if_op});
  r.push_back({"", "Loop", 1, loop});
  r.push_back({"", "Scan", 9, scan});
}

}  // namespace wgml::frontend::onnx
