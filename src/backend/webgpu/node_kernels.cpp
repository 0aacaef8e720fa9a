// The GPU path of IR nodes and kept ONNX ops: a node's fields become a spec::KernelRequest by
// name (tensor fields as inputs and outputs, the rest as attributes), an ONNX op's operands by
// position in the spec's order, so kernels/specs/<domain>/<Op>.json is all an op needs to run on
// the GPU. No per-op C++. What does not fit the GPU runs on the CPU reference, counted and timed.
#include <chrono>
#include <optional>
#include <type_traits>
#include <utility>

#include "backend/webgpu/plan_runner.h"
#include "backend/webgpu/webgpu_backend.h"
#include "core/device_data.h"
#include "ir/nodes.h"
#include "wgml/error.h"

namespace wgml::backend::webgpu {
namespace {

using runtime::ExecContext;

// A node's fields as the spec engine sees them.
struct NodeRequest {
  spec::KernelRequest request;
  std::map<std::string, Tensor> inputs;
  std::vector<std::pair<std::string, ir::Tid>> outputs;
  std::map<std::string, ir::Tid> input_slots;
  std::string unadaptable;  // a field the generic mapping cannot express, if any
};

class FieldCollector {
 public:
  FieldCollector(const ExecContext& ctx, NodeRequest& r) : ctx_(ctx), r_(r) {}

  void operator()(std::string_view name, const ir::Tid& t, ir::FieldRole role) {
    const std::string key(name);
    if (role == ir::FieldRole::Write) {
      r_.outputs.emplace_back(key, t);
      r_.request.wanted_outputs.insert(key);
      return;
    }
    if (role == ir::FieldRole::ReadWrite) return unadaptable(name);
    const Tensor& x = ctx_.tensor(t);
    r_.inputs[key] = x;
    r_.input_slots[key] = t;
    r_.request.inputs[key] = spec::TensorDesc{x.dtype(), x.shape()};
  }
  // A list of tensors (Concatenate's parts, Split's outputs): `tensors0`, `tensors1`, ...
  void operator()(std::string_view name, const std::vector<ir::Tid>& list, ir::FieldRole role) {
    for (size_t k = 0; k < list.size(); ++k) (*this)(std::string(name) + std::to_string(k), list[k], role);
  }
  void operator()(std::string_view name, const ir::IntOrVid& v, ir::FieldRole) {
    attribute(name, spec::Value(int64_t{ctx_.resolve(v)}));
  }
  void operator()(std::string_view name, const ir::FloatOrVid& v, ir::FieldRole) {
    attribute(name, spec::Value(double{ctx_.resolve(v)}));
  }
  void operator()(std::string_view name, const std::vector<ir::IntOrVid>& v, ir::FieldRole) {
    spec::List list;
    for (int32_t e : ctx_.resolve(v)) list.emplace_back(int64_t{e});
    attribute(name, spec::Value(std::move(list)));
  }
  void operator()(std::string_view name, const std::vector<int32_t>& v, ir::FieldRole) {
    attribute(name, spec::Value::int_list(std::vector<int64_t>(v.begin(), v.end())));
  }
  void operator()(std::string_view name, const std::string& v, ir::FieldRole) { attribute(name, spec::Value(v)); }
  template <class T>
    requires std::is_arithmetic_v<T>
  void operator()(std::string_view name, const T& v, ir::FieldRole) {
    if constexpr (std::is_same_v<T, bool>) {
      attribute(name, spec::Value(v));
    } else if constexpr (std::is_floating_point_v<T>) {
      attribute(name, spec::Value(double{v}));
    } else {
      attribute(name, spec::Value(static_cast<int64_t>(v)));
      if (name == "scalar_type") output_dtype(v);
    }
  }
  template <class T>
  void operator()(std::string_view name, const std::optional<T>& v, ir::FieldRole role) {
    if (v) (*this)(name, *v, role);
  }
  template <class T>
  void operator()(std::string_view name, const T&, ir::FieldRole) {
    unadaptable(name);
  }

 private:
  void unadaptable(std::string_view name) {
    if (r_.unadaptable.empty()) r_.unadaptable = "field '" + std::string(name) + "' has no spec mapping";
  }
  void attribute(std::string_view name, spec::Value v) { r_.request.attributes[std::string(name)] = std::move(v); }
  // `scalar_type` (an ExecuTorch ScalarType) sets the dtype of the node's output `out`.
  void output_dtype(int64_t code) {
    const auto dtype = dtype_from_scalar_type(static_cast<int>(code));
    if (dtype) r_.request.output_dtypes["out"] = *dtype;
  }

  const ExecContext& ctx_;
  NodeRequest& r_;
};

// An input may share its buffer with an output written to the same slot when nothing else holds
// the input's storage: the slot's old value is dead once the node has run.
void allow_in_place(const ExecContext& ctx, NodeRequest& r) {
  for (const auto& [out, out_slot] : r.outputs)
    for (const auto& [in, in_slot] : r.input_slots)
      // Held by the slot and by r.inputs, and by no one else.
      if (in_slot.idx == out_slot.idx && TensorDeviceAccess::storage_users(ctx.tensor(in_slot)) == 2)
        r.request.may_alias.emplace_back(in, out);
}

// Runs `cpu` (the CPU reference kernel of `op`), counted and timed for profiles.
template <class F>
void run_on_cpu(const WebGpuState& state, const std::string& op, const std::string& reason, F cpu) {
  ++state.placement->on_cpu[op];
  state.placement->fallback_reason[op] = reason;
  const auto start = std::chrono::steady_clock::now();
  cpu();
  state.placement->cpu_ms[op] += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// Plans `r` with `spec` and records it on the GPU, writing the outputs to their slots. Returns
// the reason when the request does not fit the GPU (the caller runs the CPU kernel instead).
std::optional<std::string> run_on_gpu(ExecContext& ctx, const WebGpuState& state, const spec::KernelSpec& spec,
                                      const std::string& op, NodeRequest& r) {
  if (!r.unadaptable.empty()) return r.unadaptable;
  allow_in_place(ctx, r);
  const spec::KernelPlan* plan = nullptr;
  GpuBuffers placed;
  try {
    plan = &state.gpu->plan(spec, r.request);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::Unsupported && e.code() != ErrorCode::InvalidArgument) throw;
    return e.what();
  }
  try {
    placed = place_inputs(state.gpu, *plan, r.inputs);
  } catch (const Error& e) {
    // Values the GPU storage cannot hold (an int64 beyond int32): the CPU computes this op, and
    // reports the error itself where the values are invalid for it.
    if (e.code() != ErrorCode::Runtime) throw;
    return e.what();
  }
  ++state.placement->on_gpu[op];
  std::map<std::string, Tensor> outputs = run_plan(state.gpu, *plan, std::move(placed));
  r.inputs.clear();
  for (auto& [name, slot] : r.outputs) ctx.set_tensor(slot, std::move(outputs.at(name)));
  return std::nullopt;
}

template <class N>
void run_node(const ir::Node& node, ExecContext& ctx) {
  const auto& state = ctx.backend_state<WebGpuState>();
  const std::string op(spec_op_name(N::kName));
  NodeRequest r;
  FieldCollector collect(ctx, r);
  ir::for_each_field(std::get<N>(node), collect);
  const auto why_not = run_on_gpu(ctx, state, *state.gpu->engine().find("mlx", op), op, r);
  if (why_not) run_on_cpu(state, op, *why_not, [&] { state.cpu->find(N::kUnionId)(node, ctx); });
}

// A node without a spec runs on the CPU reference, counted and timed for profiles.
template <class N>
void run_without_spec(const ir::Node& node, ExecContext& ctx) {
  const auto& state = ctx.backend_state<WebGpuState>();
  const std::string op(spec_op_name(N::kName));
  const runtime::KernelFn cpu = state.cpu->find(N::kUnionId);
  if (!is_view_node(op)) return run_on_cpu(state, op, "no GPU kernel yet", [&] { cpu(node, ctx); });
  ++state.placement->views[op];
  cpu(node, ctx);
}

template <class N>
void register_node(const spec::Engine& engine, runtime::KernelTable& table) {
  if (!table.find(N::kUnionId)) return;
  if (engine.find("mlx", std::string(spec_op_name(N::kName)))) table.set(N::kUnionId, run_node<N>);
  else table.set(N::kUnionId, run_without_spec<N>);
}

spec::Value attribute_value(const ir::OnnxAttribute::Value& v) {
  return std::visit([](const auto& a) -> spec::Value {
    using A = std::decay_t<decltype(a)>;
    if constexpr (std::is_same_v<A, std::vector<int64_t>>) return spec::Value::int_list(a);
    else if constexpr (std::is_same_v<A, std::vector<double>> || std::is_same_v<A, std::vector<std::string>>)
      return spec::Value(spec::List(a.begin(), a.end()));
    else return spec::Value(a);
  }, v);
}

// A kept ONNX op's operands by position, named as the spec declares its inputs and outputs.
NodeRequest onnx_request(const ir::OnnxOp& op, const spec::KernelSpec& spec, const ExecContext& ctx) {
  NodeRequest r;
  FieldCollector collect(ctx, r);
  if (op.inputs.size() > spec.inputs.size() || op.outputs.size() > spec.outputs.size())
    r.unadaptable = "more operands than the spec declares";
  for (size_t k = 0; k < op.inputs.size() && k < spec.inputs.size(); ++k)
    if (op.inputs[k]) collect(spec.inputs[k].name, *op.inputs[k], ir::FieldRole::Read);
  for (size_t k = 0; k < op.outputs.size() && k < spec.outputs.size(); ++k)
    if (op.outputs[k]) collect(spec.outputs[k].name, *op.outputs[k], ir::FieldRole::Write);
  for (const ir::OnnxAttribute& a : op.attributes) r.request.attributes[a.name] = attribute_value(a.value);
  return r;
}

void run_onnx_op(const ir::OnnxOp& op, ExecContext& ctx) {
  const auto& state = ctx.backend_state<WebGpuState>();
  const std::string label = op.domain + "." + op.op_type;
  const spec::KernelSpec& spec = *state.gpu->engine().find(op.domain, op.op_type);
  NodeRequest r = onnx_request(op, spec, ctx);
  const auto why_not = run_on_gpu(ctx, state, spec, label, r);
  if (why_not) run_on_cpu(state, label, *why_not, [&] { state.cpu->find_onnx(op.domain, op.op_type)(op, ctx); });
}

}  // namespace

void register_node_kernels(const spec::Engine& engine, const runtime::KernelTable& cpu, runtime::KernelTable& table) {
  [&]<size_t... I>(std::index_sequence<I...>) {
    (register_node<std::variant_alternative_t<I, ir::Node>>(engine, table), ...);
  }(std::make_index_sequence<std::variant_size_v<ir::Node>>{});
  for (const auto& [key, kernel] : cpu.onnx_kernels())
    if (engine.find(key.first, key.second)) table.add_onnx(key.first, key.second, run_onnx_op);
}

}  // namespace wgml::backend::webgpu
