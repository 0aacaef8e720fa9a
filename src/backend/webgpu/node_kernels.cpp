// The GPU path of IR nodes and kept ONNX ops: a node's fields become a kernel::KernelRequest by
// name (tensor fields as inputs and outputs, lists of tensors as a spec's list, the rest as
// attributes), an ONNX op's operands by position in the spec's order, so a spec is all an op
// needs to run on the GPU. No per-op C++. The mapping is checked when the backend is made: a
// field the spec does not take is an error naming both, never a silent CPU fallback. What does
// not fit the GPU at run time (dtype, shape, `when`) runs on the CPU reference, counted and timed.
#include <algorithm>
#include <bit>
#include <chrono>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include "backend/cpu/broadcast.h"
#include "backend/cpu/kv_cache.h"
#include "backend/cpu/strided.h"
#include "backend/webgpu/plan_runner.h"
#include "backend/webgpu/webgpu_backend.h"
#include "core/device_data.h"
#include "core/elements.h"
#include "ir/nodes.h"
#include "kernel/dynamic_plan.h"
#include "wgml/error.h"

namespace wgml::backend::webgpu {
namespace {

using runtime::ExecContext;

// A node's fields as the spec engine sees them.
struct NodeRequest {
  kernel::KernelRequest request;
  std::map<std::string, Tensor> inputs;
  std::vector<std::pair<std::string, ir::Tid>> outputs;
  std::map<std::string, ir::Tid> input_slots;
  std::string unadaptable;  // a field the generic mapping cannot express, if any
  bool cast = false;        // an input was cast on the GPU first: a call no BoundCall can replay
  // Per value OperandReader reads, in its order: the int attribute it is, or "" (a float, a
  // list's element), which must keep its value for a bound call to follow it.
  std::vector<std::string> value_names;
};

// A call's operands without names, in FieldCollector's order (bound_call.h): tensors by slot,
// value slots by what they hold. Literal fields are the same every call, so they are left out.
class OperandReader {
 public:
  OperandReader(const ExecContext& ctx, CallOperands& ops) : ctx_(ctx), ops_(ops) {}

  void operator()(std::string_view, const ir::Tid& t, ir::FieldRole role) {
    (role == ir::FieldRole::Write ? ops_.outputs : ops_.inputs).push_back(t);
  }
  void operator()(std::string_view name, const std::vector<ir::Tid>& list, ir::FieldRole role) {
    for (const ir::Tid& t : list) (*this)(name, t, role);
  }
  void operator()(std::string_view, const ir::IntOrVid& v, ir::FieldRole) {
    if (v.is_vid) ops_.values.push_back(ctx_.resolve(v));
  }
  void operator()(std::string_view, const ir::FloatOrVid& v, ir::FieldRole) {
    if (v.is_vid) ops_.values.push_back(std::bit_cast<int32_t>(ctx_.resolve(v)));
  }
  void operator()(std::string_view, const ir::Vid& v, ir::FieldRole) { ops_.values.push_back(ctx_.int_value(v)); }
  void operator()(std::string_view name, const ir::VidOrTid& v, ir::FieldRole role) {
    if (v.is_vid) return ops_.values.push_back(ctx_.int_value(v.vid));
    (*this)(name, v.tid, role);
  }
  void operator()(std::string_view name, const ir::IntOrVidOrTid& v, ir::FieldRole role) {
    if (v.kind == ir::IntOrVidOrTid::Tensor) return (*this)(name, v.tid, role);
    if (v.kind == ir::IntOrVidOrTid::Value) ops_.values.push_back(ctx_.resolve_int(v));
  }
  void operator()(std::string_view name, const std::vector<ir::IntOrVid>& list, ir::FieldRole role) {
    for (const ir::IntOrVid& v : list) (*this)(name, v, role);
  }
  template <class T>
  void operator()(std::string_view name, const std::optional<T>& v, ir::FieldRole role) {
    if (v) (*this)(name, *v, role);
  }
  template <class T>
  void operator()(std::string_view, const T&, ir::FieldRole) {}

 private:
  const ExecContext& ctx_;
  CallOperands& ops_;
};

// Calls f(name, slot, role) for each present operand of a kept or fused ONNX op, named by its
// position in the spec's inputs and outputs.
template <class F>
void for_each_onnx_operand(const ir::OnnxOp& op, const kernel::KernelSpec& spec, F& f) {
  for (size_t k = 0; k < op.inputs.size() && k < spec.inputs.size(); ++k)
    if (op.inputs[k]) f(spec.inputs[k].name, *op.inputs[k], ir::FieldRole::Read);
  for (size_t k = 0; k < op.outputs.size() && k < spec.outputs.size(); ++k)
    if (op.outputs[k]) f(spec.outputs[k].name, *op.outputs[k], ir::FieldRole::Write);
}

// A kept or fused ONNX op's operands in onnx_request's order.
void read_onnx_operands(const ir::OnnxOp& op, const kernel::KernelSpec& spec, const ExecContext& ctx, CallOperands& ops) {
  OperandReader read(ctx, ops);
  for_each_onnx_operand(op, spec, read);
  for (const auto& [name, vid] : op.value_attributes) ops.values.push_back(ctx.int_value(vid));
}

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
    r_.request.inputs[key] = kernel::TensorDesc{x.dtype(), x.shape()};
  }
  // A list of tensors (Concatenate's parts, Split's outputs): `tensors0`, `tensors1`, ...
  void operator()(std::string_view name, const std::vector<ir::Tid>& list, ir::FieldRole role) {
    for (size_t k = 0; k < list.size(); ++k) (*this)(std::string(name) + std::to_string(k), list[k], role);
  }
  void operator()(std::string_view name, const ir::IntOrVid& v, ir::FieldRole) {
    if (v.is_vid) dynamic(name);
    attribute(name, kernel::Value(ctx_.resolve(v)));
  }
  void operator()(std::string_view name, const ir::FloatOrVid& v, ir::FieldRole) {
    if (v.is_vid) r_.value_names.emplace_back();
    attribute(name, kernel::Value(double{ctx_.resolve(v)}));
  }
  // A value slot (RandomBits' seed) is the attribute of that name, an int.
  void operator()(std::string_view name, const ir::Vid& v, ir::FieldRole) {
    dynamic(name);
    attribute(name, kernel::Value(ctx_.int_value(v)));
  }
  // A value slot is the attribute of that name (an int), a tensor the input of that name.
  void operator()(std::string_view name, const ir::VidOrTid& v, ir::FieldRole role) {
    if (!v.is_vid) return (*this)(name, v.tid, role);
    dynamic(name);
    attribute(name, kernel::Value(ctx_.int_value(v.vid)));
  }
  // An int, a value slot or a tensor (Take's index): the tensor is the input of that name, an int
  // the attribute of that name (read as the CPU reference reads it).
  void operator()(std::string_view name, const ir::IntOrVidOrTid& v, ir::FieldRole role) {
    if (v.kind == ir::IntOrVidOrTid::Tensor) return (*this)(name, v.tid, role);
    if (v.kind == ir::IntOrVidOrTid::Value) dynamic(name);
    attribute(name, kernel::Value(ctx_.resolve_int(v)));
  }
  void operator()(std::string_view name, const std::vector<ir::IntOrVid>& v, ir::FieldRole) {
    for (const ir::IntOrVid& e : v)
      if (e.is_vid) r_.value_names.emplace_back();
    kernel::List list;
    for (int64_t e : ctx_.resolve(v)) list.emplace_back(e);
    attribute(name, kernel::Value(std::move(list)));
  }
  void operator()(std::string_view name, const std::vector<int32_t>& v, ir::FieldRole) {
    attribute(name, kernel::Value::int_list(std::vector<int64_t>(v.begin(), v.end())));
  }
  void operator()(std::string_view name, const std::string& v, ir::FieldRole) { attribute(name, kernel::Value(v)); }
  template <class T>
  requires std::is_arithmetic_v<T>
  void operator()(std::string_view name, const T& v, ir::FieldRole) {
    if constexpr (std::is_same_v<T, bool>) {
      attribute(name, kernel::Value(v));
    } else if constexpr (std::is_floating_point_v<T>) {
      attribute(name, kernel::Value(double{v}));
    } else {
      attribute(name, kernel::Value(static_cast<int64_t>(v)));
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
  void attribute(std::string_view name, kernel::Value v) { r_.request.attributes[std::string(name)] = std::move(v); }
  // An int attribute read from a value slot: it may change every call (kernel/dynamic_plan.h).
  void dynamic(std::string_view name) {
    r_.value_names.emplace_back(name);
    r_.request.dynamic_attributes.emplace_back(name);
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

// Runs `f`, adding its wall time to `ms`.
template <class F>
void timed(double& ms, F f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// Runs `cpu` (the CPU reference kernel of `op`), counted and timed for profiles.
template <class F>
void run_on_cpu(const WebGpuState& state, const std::string& op, const std::string& reason, F cpu) {
  ++state.placement->on_cpu[op];
  state.placement->fallback_reason[op] = reason;
  timed(state.placement->cpu_ms[op], cpu);
}

// Plans `request` with `spec` and records it on the GPU over `inputs` (by the spec's names);
// returns the outputs by name, or the reason the request does not fit the GPU (the caller runs the
// CPU kernel instead).
std::variant<std::map<std::string, Tensor>, std::string> plan_and_record(
    const WebGpuState& state, const kernel::KernelSpec& spec, const kernel::KernelRequest& request,
    const std::map<std::string, Tensor>& inputs, std::shared_ptr<const kernel::KernelPlan>* used = nullptr) {
  std::shared_ptr<const kernel::KernelPlan> plan;
  GpuBuffers placed;
  try {
    plan = state.gpu->shared_plan(spec, request);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::Unsupported && e.code() != ErrorCode::InvalidArgument) throw;
    return std::string(e.what());
  }
  try {
    placed = place_inputs(state.gpu, *plan, inputs);
  } catch (const Error& e) {
    // Values the GPU storage cannot hold (an int64 beyond int32): the CPU computes this op, and
    // reports the error itself where the values are invalid for it.
    if (e.code() != ErrorCode::Runtime) throw;
    return std::string(e.what());
  }
  if (used) *used = plan;
  return run_plan(state.gpu, *plan, std::move(placed));
}

// Runs the mlx spec `op` on `inputs` by name; returns its first output, or the reason it does not
// fit the GPU. `in_place` names an input whose buffer that output may take (nothing else may hold
// it).
std::variant<Tensor, std::string> run_mlx_op(const WebGpuState& state, const std::string& op,
                                             const std::map<std::string, Tensor>& inputs,
                                             std::map<std::string, kernel::Value> attributes, const std::string& in_place = "") {
  const kernel::KernelSpec& spec = *state.gpu->engine().find("mlx", op);
  kernel::KernelRequest request;
  for (const auto& [name, t] : inputs) request.inputs[name] = kernel::TensorDesc{t.dtype(), t.shape()};
  request.attributes = std::move(attributes);
  const std::string& output = spec.outputs.front().name;
  request.wanted_outputs.insert(output);
  if (!in_place.empty()) request.may_alias.emplace_back(in_place, output);
  auto result = plan_and_record(state, spec, request, inputs);
  if (auto* why_not = std::get_if<std::string>(&result)) return op + ": " + *why_not;
  return std::move(std::get<std::map<std::string, Tensor>>(result).at(output));
}

// Casts `x` to `dtype` with the AsType kernel; returns the reason when it does not fit the GPU.
std::variant<Tensor, std::string> cast_on_gpu(const WebGpuState& state, const Tensor& x, DType dtype) {
  auto result = run_mlx_op(state, "AsType", {{"x", x}}, {{"scalar_type", kernel::Value(int64_t{scalar_type_of(dtype)})}});
  if (auto* why_not = std::get_if<std::string>(&result)) return "casting to " + std::string(dtype_name(dtype)) + ": " + *why_not;
  return result;
}

// Input `name` of `r` (its request entry `input`) cast to `dtype` on the GPU; returns the reason
// when the cast does not fit the GPU.
std::optional<std::string> cast_input(const WebGpuState& state, NodeRequest& r, const std::string& name,
                                      kernel::TensorDesc& input, DType dtype) {
  auto cast = cast_on_gpu(state, r.inputs.at(name), dtype);
  if (auto* why_not = std::get_if<std::string>(&cast)) return *why_not;
  r.inputs[name] = std::move(std::get<Tensor>(cast));
  r.cast = true;
  input.dtype = dtype;
  return std::nullopt;
}

// The spec's `promote` inputs cast to MLX's promoted dtype of them all, as MLX casts them before
// the op; returns the reason when a cast does not fit the GPU.
std::optional<std::string> promote_operands(const WebGpuState& state, const kernel::KernelSpec& spec, NodeRequest& r) {
  std::optional<DType> target;
  for (const std::string& name : spec.promote)
    if (const auto it = r.request.inputs.find(name); it != r.request.inputs.end())
      target = target ? cpu::promote_types(*target, it->second.dtype) : it->second.dtype;
  for (const std::string& name : spec.promote) {
    // The GPU keeps int64 narrowed to int32, which cannot hold every uint32.
    const auto it = r.request.inputs.find(name);
    if (it != r.request.inputs.end() && it->second.dtype == DType::UInt32 && target == DType::Int64)
      return "uint32 operands promote to int64, which the GPU keeps narrowed to int32";
  }
  for (const std::string& name : spec.promote) {
    const auto it = r.request.inputs.find(name);
    if (it == r.request.inputs.end() || it->second.dtype == *target) continue;
    if (auto why_not = cast_input(state, r, name, it->second, *target)) return why_not;
  }
  return std::nullopt;
}

// The dtype MLX sums and scans `t` in: 8- and 16-bit integers and bool widen to 32 bits.
std::optional<DType> widened(DType t) {
  if (t == DType::Bool || t == DType::Int8 || t == DType::Int16) return DType::Int32;
  if (t == DType::UInt8) return DType::UInt32;
  return std::nullopt;
}

// The spec's `widen` inputs cast to the dtype MLX accumulates them in; returns the reason when a
// cast does not fit the GPU.
std::optional<std::string> widen_operands(const WebGpuState& state, const kernel::KernelSpec& spec, NodeRequest& r) {
  for (const auto& [name, dtypes] : spec.widen) {
    const auto it = r.request.inputs.find(name);
    const std::optional<DType> target = it == r.request.inputs.end() ? std::nullopt : widened(it->second.dtype);
    if (!target || (!dtypes.empty() && std::find(dtypes.begin(), dtypes.end(), it->second.dtype) == dtypes.end())) continue;
    if (auto why_not = cast_input(state, r, name, it->second, *target)) return why_not;
  }
  return std::nullopt;
}

bool allows(const kernel::KernelSpec& spec, const std::string& type_variable, DType t) {
  const std::vector<DType>& types = spec.type_constraints.at(type_variable);
  return std::find(types.begin(), types.end(), t) != types.end();
}

// The spec's `castLike` inputs cast to the dtype of the input each names, as the op casts them
// (SliceUpdate's update takes dst's dtype); returns the reason when a cast does not fit the GPU.
std::optional<std::string> cast_like_operands(const WebGpuState& state, const kernel::KernelSpec& spec, NodeRequest& r) {
  for (const auto& [name, like] : spec.cast_like) {
    const auto it = r.request.inputs.find(name);
    const auto target = r.request.inputs.find(like);
    if (it == r.request.inputs.end() || target == r.request.inputs.end() || it->second.dtype == target->second.dtype) continue;
    if (auto why_not = cast_input(state, r, name, it->second, target->second.dtype)) return why_not;
  }
  return std::nullopt;
}

// The spec's `atLeastFloat` inputs cast to float32 when they are integers or bool and the spec
// computes only in floats, as MLX casts them (sin of int32 is float32); returns the reason when a
// cast does not fit the GPU.
std::optional<std::string> float_operands(const WebGpuState& state, const kernel::KernelSpec& spec, NodeRequest& r) {
  for (const std::string& name : spec.at_least_float) {
    const auto it = r.request.inputs.find(name);
    if (it == r.request.inputs.end() || is_floating(it->second.dtype)) continue;
    const std::vector<DType>& types = spec.type_constraints.at(spec.input(name)->dtype);
    if (!std::all_of(types.begin(), types.end(), is_floating)) continue;
    if (auto why_not = cast_input(state, r, name, it->second, DType::Float32)) return why_not;
  }
  return std::nullopt;
}

// Type variables whose 8- or 16-bit integer or bool inputs compute in 32 bits: the dtype each had.
using NarrowTypes = std::map<std::string, DType>;

// Inputs of an 8- or 16-bit integer type (or bool) that the spec takes only as 32-bit integers,
// cast up so the kernel computes in 32 bits; cast back (narrow_outputs), the result wraps exactly
// as the narrow arithmetic does, since 2^8 and 2^16 divide 2^32. Returns the reason when a cast
// does not fit the GPU.
std::optional<std::string> widen_narrow_types(const WebGpuState& state, const kernel::KernelSpec& spec, NodeRequest& r,
                                              NarrowTypes& narrowed) {
  for (const kernel::TensorSpec& t : spec.inputs) {
    const auto it = r.request.inputs.find(t.name);
    if (it == r.request.inputs.end() || !spec.is_type_variable(t.dtype)) continue;
    const DType dtype = it->second.dtype;
    const std::optional<DType> wide = widened(dtype);
    if (!wide || allows(spec, t.dtype, dtype) || !allows(spec, t.dtype, *wide)) continue;
    narrowed.emplace(t.dtype, dtype);
    if (auto why_not = cast_input(state, r, t.name, it->second, *wide)) return why_not;
  }
  return std::nullopt;
}

// The outputs typed by a type variable widen_narrow_types widened, cast back to its narrow dtype.
std::optional<std::string> narrow_outputs(const WebGpuState& state, const kernel::KernelSpec& spec, const NarrowTypes& narrowed,
                                          std::map<std::string, Tensor>& outputs) {
  for (auto& [name, tensor] : outputs) {
    const auto it = narrowed.find(spec.output(name)->dtype);
    if (it == narrowed.end()) continue;
    auto cast = cast_on_gpu(state, tensor, it->second);
    if (auto* why_not = std::get_if<std::string>(&cast)) return *why_not;
    tensor = std::move(std::get<Tensor>(cast));
  }
  return std::nullopt;
}

// Op parameters (Resize's scales and sizes) are a few numbers, usually constants or shape
// arithmetic held on the host; one computed on the GPU is read back, which only a handful of
// elements may cost.
constexpr int64_t kMaxHostValues = 64;

// The elements of the inputs the spec reads on the host ("values": true) into the request;
// returns the reason when one is too large to read.
std::optional<std::string> read_host_values(const kernel::KernelSpec& spec, NodeRequest& r) {
  for (const kernel::TensorSpec& t : spec.inputs) {
    const auto it = r.inputs.find(t.name);
    if (!t.host_values || it == r.inputs.end()) continue;
    const Tensor& x = it->second;
    if (x.numel() > kMaxHostValues)
      return "input '" + t.name + "' has " + std::to_string(x.numel()) + " elements, more than the " +
             std::to_string(kMaxHostValues) + " read on the host";
    kernel::List& values = r.request.input_values[t.name];
    values.reserve(static_cast<size_t>(x.numel()));
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (is_floating(x.dtype()))
        values.emplace_back(load_as_double(x.dtype(), x.data(), i));
      else
        values.emplace_back(load_as_int64(x.dtype(), x.data(), i));
    }
  }
  return std::nullopt;
}

// Runs node request `r` on the GPU, writing the outputs to their slots; returns the reason when it
// does not fit the GPU.
bool is_index_dtype(DType t) { return is_integral(t) || t == DType::Bool; }

// The call being run unbound, to bind once it has run (bound_call.h): its instruction and operands.
struct BindTarget {
  const void* instruction = nullptr;
  const CallOperands* operands = nullptr;
};

// The index of slot `t` in `slots`, or -1.
int index_of(const std::vector<ir::Tid>& slots, ir::Tid t) {
  const auto it = std::find(slots.begin(), slots.end(), t);
  return it == slots.end() ? -1 : static_cast<int>(it - slots.begin());
}

// Where the bound call `call` (its signature set) finds the values of the attributes its plan
// follows (kernel/dynamic_plan.h) among `ops`' values; false when r's names do not match them.
bool follow_dynamic_attributes(const NodeRequest& r, const kernel::KernelPlan* plan, const CallOperands& ops, BoundCall& call) {
  if (r.value_names.size() != ops.values.size()) return false;
  const std::vector<kernel::DynamicPlan::Attribute> none;
  const auto& attributes = plan->dynamic ? plan->dynamic->attributes : none;
  call.dynamic_values.assign(attributes.size(), 0);
  for (const std::string& name : r.value_names) {
    const auto it =
        std::find_if(attributes.begin(), attributes.end(), [&](const auto& a) { return !name.empty() && a.name == name; });
    call.value_attribute.push_back(it == attributes.end() ? -1 : static_cast<int>(it - attributes.begin()));
  }
  return true;
}

constexpr int64_t kHostElements = 4096;

// Whether every call with r's input dtypes and shapes goes to the GPU as this one did: some input
// is no index, or they hold too many elements to be host arithmetic (computes_on_host).
bool gpu_by_signature(const NodeRequest& r) {
  int64_t elements = 0;
  for (const auto& [name, t] : r.inputs) {
    if (!is_index_dtype(t.dtype())) return true;
    elements += t.numel();
  }
  return elements > kHostElements;
}

// Keeps what the call `r` worked out for `target`'s later calls, where they can repeat it from
// slots alone: no input was cast or read on the host, and calls of its signature run on the GPU.
void bind_call(const WebGpuState& state, const BindTarget& target, const NodeRequest& r,
               std::shared_ptr<const kernel::KernelPlan> plan, const std::string& op) {
  if (!target.instruction || r.cast || !r.request.input_values.empty() || !gpu_by_signature(r)) return;
  BoundCall call;
  call.signature = state.bound->last_signature();
  call.values_begin = state.bound->last_values_begin();
  for (const kernel::PlanTensor& t : plan->tensors) {
    int operand = -1;
    if (t.is_output) {
      for (const auto& [name, slot] : r.outputs)
        if (name == t.name) operand = index_of(target.operands->outputs, slot);
    } else if (!t.is_scratch) {
      const auto slot = r.input_slots.find(t.name);
      if (slot != r.input_slots.end()) operand = index_of(target.operands->inputs, slot->second);
    }
    if (operand < 0 && !t.is_scratch) return state.bound->unbind(target.instruction);
    call.operand.push_back(operand);
  }
  call.kernels = kernels_of(*state.gpu, *plan);
  for (const kernel::PlanPass& pass : plan->passes) {
    call.params.push_back(pass.params);
    call.dispatch.push_back(pass.dispatch);
  }
  if (!follow_dynamic_attributes(r, plan.get(), *target.operands, call)) return state.bound->unbind(target.instruction);
  call.plan = std::move(plan);
  call.calls = &state.placement->on_gpu[op];
  state.bound->bind(target.instruction, std::move(call));
}

std::optional<std::string> run_on_gpu(ExecContext& ctx, const WebGpuState& state, const kernel::KernelSpec& spec,
                                      const std::string& op, NodeRequest& r, const BindTarget& target = {}) {
  if (!r.unadaptable.empty()) return r.unadaptable;
  if (auto why_not = read_host_values(spec, r)) return why_not;
  if (auto why_not = promote_operands(state, spec, r)) return why_not;
  if (auto why_not = cast_like_operands(state, spec, r)) return why_not;
  if (auto why_not = float_operands(state, spec, r)) return why_not;
  if (auto why_not = widen_operands(state, spec, r)) return why_not;
  NarrowTypes narrowed;
  if (auto why_not = widen_narrow_types(state, spec, r, narrowed)) return why_not;
  allow_in_place(ctx, r);
  std::shared_ptr<const kernel::KernelPlan> plan;
  auto result = plan_and_record(state, spec, r.request, r.inputs, &plan);
  if (auto* why_not = std::get_if<std::string>(&result)) return *why_not;
  auto& outputs = std::get<std::map<std::string, Tensor>>(result);
  if (auto why_not = narrow_outputs(state, spec, narrowed, outputs)) return why_not;
  if (narrowed.empty()) bind_call(state, target, r, std::move(plan), op);
  ++state.placement->on_gpu[op];
  r.inputs.clear();
  for (auto& [name, slot] : r.outputs) ctx.set_tensor(slot, std::move(outputs.at(name)));
  return std::nullopt;
}

// Whether the node computes on the host, where its inputs (slots) are: positions or shape
// arithmetic (at most kHostElements integers, which ItemInt nodes read back: a GPU kernel would cost
// a round trip), or a few floats made from them this run (RoPE's cos and sin rows from the cache
// position: a dozen dispatches of a few dozen values each, every step). Floats need an input made
// on the host this run (a temp; constants alone fold at load) and none a program input (floats
// the model is given are its arithmetic, which runs on the device). Read from the slots, before a
// request is made: it is decided at every call.
bool computes_on_host(const ExecContext& ctx, std::span<const ir::Tid> inputs) {
  int64_t elements = 0;
  bool indices = true, made_on_host = false, given = false;
  for (const ir::Tid slot : inputs) {
    const Tensor& t = ctx.tensor(slot);
    if (!TensorDeviceAccess::has_host_bytes(t)) return false;
    const ir::TensorClass made_as = ctx.program().tensor_class(slot);
    indices = indices && is_index_dtype(t.dtype());
    made_on_host = made_on_host || made_as == ir::TensorClass::Temp;
    given = given || made_as == ir::TensorClass::Input;
    elements += t.numel();
  }
  return !inputs.empty() && elements <= kHostElements && (indices || (made_on_host && !given));
}

// Whether a node without inputs makes integers from its attributes (ARange, Full): host
// arithmetic as computes_on_host's.
bool makes_host_indices(const ExecContext& ctx, const NodeRequest& r) {
  if (!r.inputs.empty() || r.outputs.empty()) return false;
  // Temps carry no metadata; a generator names its dtype in its scalar_type attribute.
  const auto type = r.request.attributes.find("scalar_type");
  const std::optional<DType> made = type != r.request.attributes.end() && type->second.is_int()
                                        ? dtype_from_scalar_type(static_cast<int>(type->second.as_int()))
                                        : std::nullopt;
  for (const auto& [name, slot] : r.outputs) {
    const ir::TensorMeta* meta = ctx.program().meta(slot);
    const std::optional<DType> dtype = meta ? std::optional(meta->dtype) : made;
    if (!dtype || !is_index_dtype(*dtype)) return false;
  }
  return true;
}

template <class N>
void run_node(const ir::Node& node, ExecContext& ctx) {
  const auto& state = ctx.backend_state<WebGpuState>();
  CallOperands& operands = state.bound->operands();
  operands.clear();
  OperandReader read(ctx, operands);
  ir::for_each_field(std::get<N>(node), read);
  if (state.bound->launch(ctx, state.gpu, &node, operands)) return;
  const std::string op(spec_op_name(N::kName));
  const auto on_host = [&] {
    ++state.placement->on_host[op];
    timed(state.placement->host_ms[op], [&] { state.cpu->find(N::kUnionId)(node, ctx); });
  };
  if (state.small_values_on_host && computes_on_host(ctx, operands.inputs)) return on_host();
  NodeRequest r;
  FieldCollector collect(ctx, r);
  ir::for_each_field(std::get<N>(node), collect);
  if (state.small_values_on_host && r.unadaptable.empty() && makes_host_indices(ctx, r)) return on_host();
  const auto why_not = run_on_gpu(ctx, state, *state.gpu->engine().find("mlx", op), op, r, {&node, &operands});
  if (why_not) run_on_cpu(state, op, *why_not, [&] { state.cpu->find(N::kUnionId)(node, ctx); });
}

// A node without a spec runs on the CPU reference, counted and timed for profiles.
template <class N>
void run_without_spec(const ir::Node& node, ExecContext& ctx) {
  const auto& state = ctx.backend_state<WebGpuState>();
  run_on_cpu(state, std::string(spec_op_name(N::kName)), "no GPU kernel yet", [&] { state.cpu->find(N::kUnionId)(node, ctx); });
}

// A view (its spec says "view": true): a device tensor is always contiguous, so the CPU kernel
// only relabels the shape of the same buffer and never reads the data.
template <class N>
void run_as_view(const ir::Node& node, ExecContext& ctx) {
  const auto& state = ctx.backend_state<WebGpuState>();
  ++state.placement->views[std::string(spec_op_name(N::kName))];
  state.cpu->find(N::kUnionId)(node, ctx);
}

// A transpose that moves only axes of size 1 out of order leaves every element in place: its
// output is the same buffer under the permuted shape (a decode step's [1, 1, H, D] heads becoming
// [1, H, 1, D]), so no kernel runs.
void run_transpose(const ir::Node& node, ExecContext& ctx) {
  const auto& n = std::get<ir::TransposeNode>(node);
  const Tensor& x = ctx.tensor(n.x);
  const Shape perm = cpu::checked_permutation(n.perm, x.rank());
  if (!cpu::keeps_memory_order(x.shape(), perm)) return run_node<ir::TransposeNode>(node, ctx);
  Shape shape;
  for (const int64_t a : perm) shape.push_back(x.dim(static_cast<int>(a)));
  ++ctx.backend_state<WebGpuState>().placement->views["Transpose"];
  ctx.set_tensor(n.out, x.reshaped(shape));
}

// ---- UpdateAndAttend: ExecuTorch's cache update and attention in one node -------------------
// Its KV cache lives off the graph (cpu::KvCache, shared with the CPU reference). On the GPU each
// layer's K and V are device tensors [1, H, S, D]: SliceUpdate writes a step's rows in place, Pad
// grows S (doubling) when a step writes past it, and Sdpa reads the first position + T rows
// (kvStop), so a decode step copies no cache. A step that does not fit the GPU runs the CPU kernel
// on the same cache; its writes repeat the same rows, so one whose writes ran here is still right.

// `cache` grown to hold `rows` along axis 2 (zeros after what it held), or made for `update`.
std::variant<Tensor, std::string> grown_cache(const WebGpuState& state, const Tensor& cache, const Tensor& update, int64_t rows) {
  if (!cache.defined()) {
    const kernel::Value shape = kernel::Value::int_list({1, update.dim(1), rows, update.dim(3)});
    return run_mlx_op(
        state, "Full", {},
        {{"shape", shape}, {"v", kernel::Value(0.0)}, {"scalar_type", kernel::Value(int64_t{scalar_type_of(update.dtype())})}});
  }
  const int64_t capacity = std::max(rows, 2 * cache.dim(2));
  return run_mlx_op(state, "Pad", {{"x", cache}},
                    {{"pad_width", kernel::Value::int_list({0, 0, 0, 0, 0, capacity - cache.dim(2), 0, 0})},
                     {"mode", kernel::Value("constant")},
                     {"constant_value", kernel::Value(0.0)}});
}

// Writes `update` [1, H, T, D] into `cache` at `position`, growing it first as needed.
std::optional<std::string> write_cache_rows(const WebGpuState& state, Tensor& cache, const Tensor& update, int64_t position) {
  const int64_t end = position + update.dim(2);
  if (!cache.defined() || cache.dim(2) < end) {
    auto grown = grown_cache(state, cache, update, end);
    if (auto* why_not = std::get_if<std::string>(&grown)) return *why_not;
    cache = std::move(std::get<Tensor>(grown));
  }
  // The cache moves into the request, so that the write may take its buffer.
  std::map<std::string, Tensor> inputs{{"dst", std::move(cache)}, {"update", update}};
  auto written = run_mlx_op(state, "SliceUpdate", inputs,
                            {{"axis", kernel::Value(int64_t{2})},
                             {"start", kernel::Value(position)},
                             {"stop", kernel::Value(end)},
                             {"step", kernel::Value(int64_t{1})}},
                            "dst");
  if (auto* why_not = std::get_if<std::string>(&written)) {
    cache = std::move(inputs.at("dst"));
    return *why_not;
  }
  cache = std::move(std::get<Tensor>(written));
  return std::nullopt;
}

// Runs the node on the GPU; returns the reason when it does not fit (the CPU kernel then runs, and
// reports what is invalid).
std::optional<std::string> update_and_attend_on_gpu(const ir::UpdateAndAttendNode& n, ExecContext& ctx,
                                                    const WebGpuState& state) {
  const Tensor& q = ctx.tensor(n.q);
  const Tensor& k = ctx.tensor(n.k);
  const Tensor& v = ctx.tensor(n.v);
  const Tensor& pos = ctx.tensor(n.position);
  if (!n.layer_id || !n.scale || pos.numel() < 1 || (pos.dtype() != DType::Int32 && pos.dtype() != DType::Int64))
    return "a field the CPU reference checks is invalid";
  if (k.rank() != 4 || k.dim(0) != 1 || k.shape() != v.shape() || q.dtype() != k.dtype() || v.dtype() != k.dtype())
    return "q, k and v of different dtypes, or k and v not [1, H, T, D] alike";
  const int64_t position = load_as_int64(pos.dtype(), pos.data(), 0);
  cpu::KvCache::Layer& layer = ctx.persistent_state<cpu::KvCache>().layers[*n.layer_id];
  for (const Tensor* cache : {&layer.k, &layer.v})
    if (cache->defined() && (cache->dim(1) != k.dim(1) || cache->dim(3) != k.dim(3) || cache->dtype() != k.dtype()))
      return "the cache's heads, head size or dtype differ from this step's";
  if (position < 0) return "a negative position";
  if (auto why_not = write_cache_rows(state, layer.k, k, position)) return why_not;
  if (auto why_not = write_cache_rows(state, layer.v, v, position)) return why_not;
  const int64_t steps = k.dim(2);
  auto attended = run_mlx_op(state, "Sdpa", {{"q", q}, {"k", layer.k}, {"v", layer.v}},
                             {{"scale", kernel::Value(double{*n.scale})},
                              {"causal", kernel::Value(steps > 1)},
                              {"kvStop", kernel::Value(position + steps)}});
  if (auto* why_not = std::get_if<std::string>(&attended)) return *why_not;
  Tensor out = std::move(std::get<Tensor>(attended));
  if (n.out_dtype) {
    const auto dtype = dtype_from_scalar_type(*n.out_dtype);
    if (!dtype) return "an out_dtype that is no dtype";
    auto cast = cast_on_gpu(state, out, *dtype);
    if (auto* why_not = std::get_if<std::string>(&cast)) return *why_not;
    out = std::move(std::get<Tensor>(cast));
  }
  ++state.placement->on_gpu["UpdateAndAttend"];
  ctx.set_tensor(n.out, std::move(out));
  return std::nullopt;
}

void run_update_and_attend(const ir::Node& node, ExecContext& ctx) {
  const auto& state = ctx.backend_state<WebGpuState>();
  const auto why_not = update_and_attend_on_gpu(std::get<ir::UpdateAndAttendNode>(node), ctx, state);
  if (why_not)
    run_on_cpu(state, "UpdateAndAttend", *why_not, [&] { state.cpu->find(ir::UpdateAndAttendNode::kUnionId)(node, ctx); });
}

// Checks that a spec takes every field of node type N as FieldCollector passes it: a tensor as
// the input or output of its name, a list of tensors as the spec's list of that name, anything
// else as an attribute; and that each required input and output of the spec is some field's.
class FieldMappingCheck {
 public:
  explicit FieldMappingCheck(const kernel::KernelSpec& spec) : spec_(spec) {}

  void operator()(std::string_view name, const ir::Tid&, ir::FieldRole role) {
    const kernel::TensorSpec* t = role == ir::FieldRole::Write ? spec_.output(name) : spec_.input(name);
    if (role == ir::FieldRole::ReadWrite) fail(name, "is read and written in place, which no spec can take");
    if (!t || !t->list.empty())
      fail(name, std::string("is a tensor, and the spec has no ") + (role == ir::FieldRole::Write ? "output" : "input") +
                     " of that name");
    mapped_.push_back(t->name);
  }
  void operator()(std::string_view name, const std::vector<ir::Tid>&, ir::FieldRole role) {
    bool found = false;
    for (const auto* list : {&spec_.inputs, &spec_.outputs})
      for (const kernel::TensorSpec& t : *list)
        if (t.list == name && (list == &spec_.outputs) == (role == ir::FieldRole::Write)) {
          found = true;
          mapped_.push_back(t.name);
        }
    if (!found) fail(name, "is a list of tensors, and the spec declares no list of that name (\"list\": N)");
  }
  // A field that is a tensor or an int at run time (a value slot, a literal): the spec needs an
  // optional input and an attribute of that name.
  void operator()(std::string_view name, const ir::VidOrTid&, ir::FieldRole role) { expect_tensor_or_int(name, role); }
  void operator()(std::string_view name, const ir::IntOrVidOrTid&, ir::FieldRole role) { expect_tensor_or_int(name, role); }
  template <class T>
  void operator()(std::string_view name, const std::optional<T>&, ir::FieldRole role) {
    (*this)(name, T{}, role);
  }
  template <class T>
  void operator()(std::string_view name, const T&, ir::FieldRole) {
    if constexpr (!std::is_invocable_v<FieldCollector, std::string_view, const T&, ir::FieldRole>)
      fail(name, "has a type no spec can take");
    if (!spec_.attribute(name)) fail(name, "is a value, and the spec has no attribute of that name");
  }

  void check_every_tensor_mapped() const {
    for (const auto* list : {&spec_.inputs, &spec_.outputs})
      for (const kernel::TensorSpec& t : *list)
        if (!t.optional && std::find(mapped_.begin(), mapped_.end(), t.name) == mapped_.end())
          throw Error(ErrorCode::InvalidFormat, where() + ": '" + t.name + "' is no field of the IR node");
  }

 private:
  void expect_tensor_or_int(std::string_view name, ir::FieldRole role) const {
    const kernel::TensorSpec* t = spec_.input(name);
    if (!t || !t->optional || !t->list.empty() || !spec_.attribute(name) || role != ir::FieldRole::Read)
      fail(name, "is an int or a tensor, and the spec lacks an optional input or an attribute of that name");
  }
  std::string where() const { return spec_.qualified_name() + " (" + spec_.file + ")"; }
  [[noreturn]] void fail(std::string_view field, const std::string& what) const {
    throw Error(ErrorCode::InvalidFormat, where() + ": IR field '" + std::string(field) + "' " + what);
  }

  const kernel::KernelSpec& spec_;
  std::vector<std::string> mapped_;
};

// The tensor fields of node type N, by name.
struct TensorFieldNames {
  std::vector<std::string> names;
  void operator()(std::string_view name, const ir::Tid&, ir::FieldRole) { names.emplace_back(name); }
  template <class T>
  void operator()(std::string_view, const T&, ir::FieldRole) {}
};

// The node's value fields as `attrs`, its input tensors' shapes and ranks: what a decomposition's
// expressions read.
kernel::ObjectScope decomposition_scope(const NodeRequest& r) {
  kernel::Object attrs(r.request.attributes.begin(), r.request.attributes.end()), shapes, ranks;
  for (const auto& [name, desc] : r.request.inputs) {
    shapes[name] = kernel::Value::int_list(desc.shape);
    ranks[name] = kernel::Value(static_cast<int64_t>(desc.shape.size()));
  }
  return kernel::ObjectScope(
      kernel::Object{{"attrs", kernel::Value(attrs)}, {"shapes", kernel::Value(shapes)}, {"ranks", kernel::Value(ranks)}});
}

// Runs one step of a decomposition on `previous` (and the node's tensors); returns its output, or
// the reason it does not fit the GPU.
std::variant<Tensor, std::string> run_step(const WebGpuState& state, const kernel::DecompositionStep& step,
                                           const kernel::Scope& scope, const NodeRequest& r, const Tensor& previous) {
  std::map<std::string, Tensor> inputs;
  for (const auto& [input, field] : step.inputs) inputs[input] = field == "previous" ? previous : r.inputs.at(field);
  std::map<std::string, kernel::Value> attributes;
  for (const auto& [name, e] : step.attributes) attributes[name] = e.evaluate(scope);
  return run_mlx_op(state, step.op, inputs, std::move(attributes));
}

// Runs `d` step by step, each step's output the next one's "previous"; the last is the node's
// output. Returns the reason when a step does not fit the GPU (the node then runs on the CPU).
std::optional<std::string> run_decomposition(ExecContext& ctx, const WebGpuState& state, const kernel::Decomposition& d,
                                             const std::string& op, NodeRequest& r) {
  if (!r.unadaptable.empty()) return r.unadaptable;
  const kernel::ObjectScope base = decomposition_scope(r);
  Tensor previous = r.inputs.at(d.input);
  const kernel::Value once(kernel::List{kernel::Value(false)});  // a step without `for` runs once
  for (const kernel::DecompositionStep& step : d.steps) {
    const kernel::Value list = step.loop_list ? step.loop_list->evaluate(base) : once;
    if (!list.is_list()) return step.path + ": `in` is not a list";
    for (const kernel::Value& element : list.as_list()) {
      const kernel::ObjectScope scope(
          step.loop_variable.empty() ? kernel::Object{} : kernel::Object{{step.loop_variable, element}}, &base);
      auto result = run_step(state, step, scope, r, previous);
      if (auto* why_not = std::get_if<std::string>(&result)) return *why_not;
      previous = std::move(std::get<Tensor>(result));
    }
  }
  ++state.placement->on_gpu[op];
  for (const auto& [name, slot] : r.outputs)
    if (name == d.output) ctx.set_tensor(slot, previous);
  return std::nullopt;
}

template <class N>
void run_decomposed(const ir::Node& node, ExecContext& ctx) {
  const auto& state = ctx.backend_state<WebGpuState>();
  const std::string op(spec_op_name(N::kName));
  NodeRequest r;
  FieldCollector collect(ctx, r);
  ir::for_each_field(std::get<N>(node), collect);
  const auto why_not = run_decomposition(ctx, state, *state.gpu->decomposition("mlx", op), op, r);
  if (why_not) run_on_cpu(state, op, *why_not, [&] { state.cpu->find(N::kUnionId)(node, ctx); });
}

// A decomposition must name the node's tensor fields and ops that have specs.
template <class N>
void check_decomposition(const kernel::Decomposition& d, const kernel::Engine& engine) {
  TensorFieldNames fields;
  ir::for_each_field(N{}, fields);
  const auto is_field = [&](const std::string& n) {
    return std::find(fields.names.begin(), fields.names.end(), n) != fields.names.end();
  };
  const auto fail = [&](const std::string& what) {
    throw Error(ErrorCode::InvalidFormat, d.file + ": " + d.domain + "." + d.op + ": " + what);
  };
  if (!is_field(d.input) || !is_field(d.output))
    fail("input '" + d.input + "' and output '" + d.output + "' must be tensor fields of the node");
  for (const kernel::DecompositionStep& step : d.steps) {
    const kernel::KernelSpec* spec = engine.find(d.domain, step.op);
    if (!spec || spec->view) fail(step.path + ": '" + step.op + "' has no kernel spec");
    for (const auto& [input, field] : step.inputs) {
      if (!spec->input(input)) fail(step.path + ": " + step.op + " has no input '" + input + "'");
      if (field != "previous" && !is_field(field)) fail(step.path + ": '" + field + "' is no tensor field of the node");
    }
    for (const auto& [name, e] : step.attributes)
      if (!spec->attribute(name)) fail(step.path + ": " + step.op + " has no attribute '" + name + "'");
  }
}

template <class N>
void register_node(const GpuContext& gpu, runtime::KernelTable& table) {
  if (!table.find(N::kUnionId)) return;
  const std::string op(spec_op_name(N::kName));
  if constexpr (std::is_same_v<N, ir::UpdateAndAttendNode>) return table.set(N::kUnionId, run_update_and_attend);
  const kernel::KernelSpec* spec = gpu.engine().find("mlx", op);
  if (!spec && gpu.decomposition("mlx", op)) {
    check_decomposition<N>(*gpu.decomposition("mlx", op), gpu.engine());
    return table.set(N::kUnionId, run_decomposed<N>);
  }
  if (!spec) return table.set(N::kUnionId, run_without_spec<N>);
  if (spec->view) return table.set(N::kUnionId, run_as_view<N>);
  FieldMappingCheck check(*spec);
  ir::for_each_field(N{}, check);
  check.check_every_tensor_mapped();
  if constexpr (std::is_same_v<N, ir::TransposeNode>)
    table.set(N::kUnionId, run_transpose);
  else
    table.set(N::kUnionId, run_node<N>);
}

kernel::Value attribute_value(const ir::OnnxAttribute::Value& v) {
  return std::visit(
      [](const auto& a) -> kernel::Value {
        using A = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<A, std::vector<int64_t>>)
          return kernel::Value::int_list(a);
        else if constexpr (std::is_same_v<A, std::vector<double>> || std::is_same_v<A, std::vector<std::string>>)
          return kernel::Value(kernel::List(a.begin(), a.end()));
        else
          return kernel::Value(a);
      },
      v);
}

// A kept ONNX op's operands by position, named as the spec declares its inputs and outputs.
NodeRequest onnx_request(const ir::OnnxOp& op, const kernel::KernelSpec& spec, const ExecContext& ctx) {
  NodeRequest r;
  FieldCollector collect(ctx, r);
  if (op.inputs.size() > spec.inputs.size() || op.outputs.size() > spec.outputs.size())
    r.unadaptable = "more operands than the spec declares";
  for_each_onnx_operand(op, spec, collect);
  for (const ir::OnnxAttribute& a : op.attributes) r.request.attributes[a.name] = attribute_value(a.value);
  for (const auto& [name, vid] : op.value_attributes) {
    r.request.attributes[name] = kernel::Value(ctx.int_value(vid));
    r.value_names.push_back(name);
    r.request.dynamic_attributes.push_back(name);
  }
  return r;
}

// Runs `op` (a kept ONNX op or a fused op) with the spec of its domain and type, operands by
// position; returns the reason when it does not fit the GPU.
std::optional<std::string> run_op_on_gpu(const ir::OnnxOp& op, const kernel::KernelSpec& spec, ExecContext& ctx) {
  // An older opset may order or mean the operands differently (Resize-10 has no roi input).
  if (op.opset < spec.since_version)
    return "opset " + std::to_string(op.opset) + " predates the spec's sinceVersion " + std::to_string(spec.since_version);
  const auto& state = ctx.backend_state<WebGpuState>();
  CallOperands& operands = state.bound->operands();
  operands.clear();
  read_onnx_operands(op, spec, ctx, operands);
  if (state.bound->launch(ctx, state.gpu, &op, operands)) return std::nullopt;
  NodeRequest r = onnx_request(op, spec, ctx);
  return run_on_gpu(ctx, state, spec, op.domain + "." + op.op_type, r, {&op, &operands});
}

void run_onnx_op(const ir::OnnxOp& op, ExecContext& ctx) {
  const auto& state = ctx.backend_state<WebGpuState>();
  const auto why_not = run_op_on_gpu(op, *state.gpu->engine().find(op.domain, op.op_type), ctx);
  if (why_not)
    run_on_cpu(state, op.domain + "." + op.op_type, *why_not, [&] { state.cpu->find_onnx(op.domain, op.op_type)(op, ctx); });
}

// A fused op (runtime/fusion.h) on the GPU: the spec of its domain and type, operands by position
// as for kept ONNX ops; false when there is none or the request does not fit it (its parts run).
bool run_fused_op(const ir::OnnxOp& op, ExecContext& ctx) {
  const kernel::KernelSpec* spec = ctx.backend_state<WebGpuState>().gpu->engine().find(op.domain, op.op_type);
  return spec && !run_op_on_gpu(op, *spec, ctx);
}

// A kept ONNX op whose spec is a view (a Reshape to a shape computed at run time): its CPU kernel
// reads the shape operand, a few values, and relabels the same GPU buffer without reading it.
void run_onnx_as_view(const ir::OnnxOp& op, ExecContext& ctx) {
  const auto& state = ctx.backend_state<WebGpuState>();
  ++state.placement->views[op.domain + "." + op.op_type];
  state.cpu->find_onnx(op.domain, op.op_type)(op, ctx);
}

// A kept ONNX op without a spec (LSTM, NonZero, ...) runs on the CPU reference, counted and timed
// like any fallback so that profiles show it.
void run_onnx_without_spec(const ir::OnnxOp& op, ExecContext& ctx) {
  const auto& state = ctx.backend_state<WebGpuState>();
  run_on_cpu(state, op.domain + "." + op.op_type, "no GPU kernel yet",
             [&] { state.cpu->find_onnx(op.domain, op.op_type)(op, ctx); });
}

}  // namespace

void register_node_kernels(const GpuContext& gpu, const runtime::KernelTable& cpu, runtime::KernelTable& table) {
  [&]<size_t... I>(std::index_sequence<I...>) { (register_node<std::variant_alternative_t<I, ir::Node>>(gpu, table), ...); }
  (std::make_index_sequence<std::variant_size_v<ir::Node>>{});
  for (const auto& [key, kernel] : cpu.onnx_kernels()) {
    const kernel::KernelSpec* spec = gpu.engine().find(key.first, key.second);
    table.add_onnx(key.first, key.second, !spec ? run_onnx_without_spec : spec->view ? run_onnx_as_view : run_onnx_op);
  }
  table.set_fused(run_fused_op);
}

}  // namespace wgml::backend::webgpu
