#include "runtime/executor.h"

#include <chrono>
#include <limits>

#include "core/elements.h"
#include "runtime/copy_drops.h"
#include "runtime/fusion.h"
#include "runtime/native_ops.h"
#include "runtime/release_plan.h"

namespace wgml::runtime {
namespace {

Shape static_shape(const ir::TensorMeta& meta) {
  Shape s;
  for (const ir::Dim& d : meta.shape) s.push_back(d.value);
  return s;
}

std::string describe_shape(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

void check_input_tensor(const Tensor& t, const ir::TensorMeta& meta, const InputLabel& name) {
  if (t.dtype() != meta.dtype)
    throw Error(ErrorCode::InvalidArgument, name.str() + ": expected dtype " + std::string(dtype_name(meta.dtype)) + ", found " +
                                                std::string(dtype_name(t.dtype())));
  if (static_cast<size_t>(t.rank()) != meta.shape.size())
    throw Error(ErrorCode::InvalidArgument, name.str() + ": expected rank " + std::to_string(meta.shape.size()) +
                                                ", found shape " + describe_shape(t.shape()));
  // A dynamic dim's lower bound is informational, as in ExecuTorch: torch.export raises a minimum of
  // 1 to 2 and the runner still decodes one token. The upper bound is the memory plan's capacity.
  for (size_t d = 0; d < meta.shape.size(); ++d) {
    const ir::Dim& dim = meta.shape[d];
    const int64_t n = t.shape()[d];
    const bool ok = dim.is_static() ? n == dim.value : dim.max_value < 0 || n <= dim.max_value;
    if (!ok)
      throw Error(ErrorCode::InvalidArgument,
                  name.str() + ": dimension " + std::to_string(d) + " is " + std::to_string(n) + ", expected " +
                      (dim.is_static() ? std::to_string(dim.value)
                                       : "at most " + std::to_string(dim.max_value) + " (the program's upper bound)"));
  }
}

// An input the delegate never reads is still checked as ExecuTorch's Method::set_input would.
void check_unused_input(const Value& v, const ir::MethodInput& declared, const InputLabel& name) {
  if (declared.type == ir::SlotType::Int) {
    if (!std::holds_alternative<int64_t>(v)) throw Error(ErrorCode::InvalidArgument, name.str() + ": expected an int value");
    return;
  }
  const Tensor* t = std::get_if<Tensor>(&v);
  if (!t || !t->defined()) throw Error(ErrorCode::InvalidArgument, name.str() + ": expected a tensor");
  check_input_tensor(*t, declared.meta, name);
}

void check_input_count(size_t found, size_t expected, const std::string& path) {
  if (found != expected)
    throw Error(ErrorCode::InvalidArgument,
                path + ": expected " + std::to_string(expected) + " inputs, found " + std::to_string(found));
}

// The model as `backend` runs it: with fused ops where it has a kernel for them.
std::shared_ptr<const ir::Model> for_backend(std::shared_ptr<const ir::Model> model, const Backend& backend) {
  if (!backend.kernels().fused()) return model;
  auto fused = std::make_shared<ir::Model>(*model);
  fuse_instructions(fused->program);
  return fused;
}

}  // namespace

Executor::Executor(std::shared_ptr<const ir::Model> model, const Backend& backend)
    : model_(for_backend(std::move(model), backend)),
      backend_(backend),
      ctx_(model_->program),
      releases_(plan_releases(model_->program).after),
      copy_drops_(plan_copy_drops(model_->program, backend)) {
  backend_.attach(ctx_);
  bind_constants();
  reset();
  fold_constants();
}

void Executor::reset() {
  zero_mutable_buffers();
  const ir::Program& p = model_->program;
  if (p.has_init_chain()) {
    run_chain(static_cast<uint32_t>(p.init_chain_idx));
    reset_transients();
  }
}

void Executor::fold_constants() {
  const ir::Program& p = model_->program;
  folding_ = plan_constant_folding(p);
  const auto& main = p.chains[p.main_chain_idx].instructions;
  folded_results_.resize(main.size());
  for (size_t i = 0; i < main.size(); ++i) {
    if (!folding_.folded[i]) continue;
    run_instruction(p.main_chain_idx, i, main[i]);
    for (ir::Tid t : tensors_written(main[i])) folded_results_[i].emplace_back(t, ctx_.tensor(t));
    // Each result in its compact form once the fold has read it as made; each weight a product
    // reads transposed let go: held once, not twice or three times, while the rest fold.
    for (const auto& [writer, slot] : folding_.settle_after[i])
      for (const auto& [written, tensor] : folded_results_[writer])
        if (written == slot) backend_.settle_folded(tensor);
    for (uint32_t t : folding_.dead_after[i]) ctx_.clear_tensor(ir::Tid{t});
  }
  backend_.end_run(ctx_);
  reset_transients();
  for (uint32_t t : folding_.dead_constants) ctx_.clear_tensor(ir::Tid{t});
  backend_.end_load();
}

bool Executor::handles_natively(size_t union_id) { return is_native_op(union_id); }

void Executor::bind_constants() {
  const ir::Program& p = model_->program;
  for (uint32_t tid = 0; tid < p.num_constant_tensors; ++tid) {
    const ir::TensorMeta& meta = *p.meta(ir::Tid{tid});
    const io::ByteView& bytes = model_->constants[tid];
    const Tensor view = Tensor::view(meta.dtype, static_shape(meta), bytes.owner, bytes.data);
    // Constants the init chain computes may carry placeholder bytes; it writes them before use.
    if (view.nbytes() != bytes.size) continue;
    // Kernels read elements in place: bytes at an address unaligned for the dtype (a malformed
    // container; ExecuTorch aligns its segments) are copied first.
    const bool aligned = reinterpret_cast<uintptr_t>(bytes.data) % dtype_size(meta.dtype) == 0;
    ctx_.set_tensor(ir::Tid{tid}, aligned ? view : Tensor::from_bytes(meta.dtype, view.shape(), bytes.data));
  }
}

void Executor::zero_mutable_buffers() {
  for (const ir::Slot& s : model_->program.mutable_buffers) {
    const ir::TensorMeta& meta = *model_->program.meta(ir::Tid{s.idx});
    ctx_.set_tensor(ir::Tid{s.idx}, Tensor(meta.dtype, static_shape(meta)));
  }
}

std::vector<Value> Executor::run(const std::vector<Value>& inputs) {
  std::vector<Value> outputs;
  run(inputs, outputs);
  return outputs;
}

void Executor::run(const std::vector<Value>& inputs, std::vector<Value>& outputs) {
  const ir::Program& p = model_->program;
  bind_inputs(inputs);
  if (profiling_) memory_watch_.start_run();
  outputs.clear();
  try {
    run_chain(p.main_chain_idx);
    backend_.end_run(ctx_);
    if (model_->method_outputs.empty())
      for (size_t i = 0; i < p.outputs.size(); ++i) outputs.push_back(take_output(i));
    for (size_t i : model_->method_outputs) outputs.push_back(take_output(i));
  } catch (...) {
    reset_transients();
    throw;
  }
  reset_transients();
}

void Executor::bind_inputs(const std::vector<Value>& inputs) {
  const auto& declared = model_->method_inputs;
  if (declared.empty()) {
    check_input_count(inputs.size(), model_->program.inputs.size(), model_->path);
    for (size_t i = 0; i < inputs.size(); ++i) bind_input(i, inputs[i], InputLabel{model_->path, i});
    return;
  }
  check_input_count(inputs.size(), declared.size(), model_->path);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (declared[i].program_input)
      bind_input(*declared[i].program_input, inputs[i], InputLabel{model_->path, i});
    else
      check_unused_input(inputs[i], declared[i], InputLabel{model_->path, i, true});
  }
}

std::string InputLabel::str() const {
  return path + ": input " + std::to_string(index) + (unused ? " (unused by the program)" : "");
}

void Executor::bind_input(size_t i, const Value& v, const InputLabel& name) {
  const ir::Slot& slot = model_->program.inputs[i];
  if (slot.type == ir::SlotType::Tensor) {
    const Tensor* t = std::get_if<Tensor>(&v);
    if (!t || !t->defined()) throw Error(ErrorCode::InvalidArgument, name.str() + ": expected a tensor");
    if (const ir::TensorMeta* meta = model_->program.meta(ir::Tid{slot.idx})) check_input_tensor(*t, *meta, name);
    ctx_.set_tensor(ir::Tid{slot.idx}, *t);
    return;
  }
  const int64_t* n = std::get_if<int64_t>(&v);
  if (slot.type != ir::SlotType::Int || !n)
    throw Error(ErrorCode::InvalidArgument,
                name.str() + ": expected an int value (the MLX runtime accepts only int value inputs)");
  if (!model_->program.int64_values && (*n < std::numeric_limits<int32_t>::min() || *n > std::numeric_limits<int32_t>::max()))
    throw Error(ErrorCode::InvalidArgument, name.str() + ": value " + std::to_string(*n) + " does not fit in int32");
  ctx_.set_value(ir::Vid{slot.idx}, *n);
}

Value Executor::take_output(size_t i) {
  const ir::Slot& slot = model_->program.outputs[i];
  if (slot.type != ir::SlotType::Tensor) {
    const ScalarValue& s = ctx_.value(ir::Vid{slot.idx});
    if (const auto* f = std::get_if<float>(&s)) return double{*f};
    if (const auto* b = std::get_if<bool>(&s)) return *b;
    return std::get<int64_t>(s);
  }
  const Tensor& t = ctx_.tensor(ir::Tid{slot.idx});
  const ir::TensorMeta* meta = model_->program.meta(ir::Tid{slot.idx});
  if (meta && meta->dtype != t.dtype()) return cast(t, meta->dtype);
  return t;
}

void Executor::reset_transients() {
  const ir::Program& p = model_->program;
  const uint64_t first_io = p.num_constant_tensors;
  const uint64_t first_buffer = first_io + p.num_input_tensors + p.num_output_tensors;
  for (uint64_t t = first_io; t < p.num_tensors(); ++t) {
    const bool is_buffer = t >= first_buffer && t < first_buffer + p.num_mutable_buffer_tensors;
    if (!is_buffer) ctx_.clear_tensor(ir::Tid{static_cast<uint32_t>(t)});
  }
  ctx_.clear_values();
}

void Executor::run_chain(uint32_t chain) {
  const auto& instructions = model_->program.chains[chain].instructions;
  const bool main = chain == model_->program.main_chain_idx && !folded_results_.empty();
  for (size_t i = 0; i < instructions.size(); ++i) {
    if (main && folding_.folded[i]) {
      for (const auto& [slot, tensor] : folded_results_[i]) ctx_.set_tensor(slot, tensor);
    } else {
      run_instruction(chain, i, instructions[i]);
      drop_dead_copies(chain, i);
    }
    for (ir::Tid t : releases_[chain][i]) ctx_.clear_tensor(t);
    if (profiling_) memory_watch_.after_instruction(ctx_, backend_, chain, i);
  }
}

// Below this size a second copy costs little, and a small integer tensor's host copy is what lets
// a WebGPU run compute positions on the host (see the backend's small_values_on_host).
constexpr size_t kSmallestDroppedCopy = 64 << 10;

void Executor::drop_dead_copies(uint32_t chain, size_t index) {
  for (const CopyDrop& d : copy_drops_[chain][index])
    if (ctx_.has_tensor(d.tensor)) drop_dead_copy(ctx_.tensor(d.tensor), d.keep, kSmallestDroppedCopy);
}

std::string Executor::where(uint32_t chain, size_t index, const ir::Instruction& instruction) const {
  std::string place = model_->path + ": chain " + std::to_string(chain) + ", instruction " + std::to_string(index) + " (" +
                      ir::instruction_name(instruction);
  const auto& origins = model_->program.chains[chain].origins;
  if (index < origins.size() && !origins[index].empty()) place += ", from " + origins[index];
  return place + ")";
}

void Executor::run_instruction(uint32_t chain, size_t index, const ir::Instruction& instruction) {
  const ir::Node* node = ir::as_node(instruction);
  // Control flow and fused ops' parts report errors from inside their chains, already located.
  if (node) {
    if (const auto* scan = std::get_if<ir::ScanNode>(node)) return run_scan(*scan);
    if (const auto* branch = std::get_if<ir::IfNode>(node)) return run_if(*branch);
  }
  const auto start = std::chrono::steady_clock::now();
  if (const auto* op = std::get_if<ir::OnnxOp>(&instruction); op && op->parts_chain) {
    // Timed when fused (recording it, pipeline compiles included); its parts time themselves.
    if (!run_fused_kernel(chain, index, *op)) return run_chain(*op->parts_chain);
  } else {
    run_located(chain, index, instruction);
  }
  if (!profiling_) return;
  OpTime& time = op_times_[ir::instruction_name(instruction)];
  ++time.calls;
  time.ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  time.native = node && is_native_op(node->index() + 1);
}

void Executor::run_located(uint32_t chain, size_t index, const ir::Instruction& instruction) {
  try {
    if (const ir::Node* node = ir::as_node(instruction))
      run_node(*node);
    else
      run_onnx_op(std::get<ir::OnnxOp>(instruction));
  } catch (const Error& e) {
    throw Error(e.code(), where(chain, index, instruction) + ": " + e.what());
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::Runtime, where(chain, index, instruction) + ": out of memory");
  }
}

bool Executor::run_fused_kernel(uint32_t chain, size_t index, const ir::OnnxOp& op) {
  const FusedKernelFn kernel = backend_.kernels().fused();
  try {
    return kernel && kernel(op, ctx_);
  } catch (const Error& e) {
    throw Error(e.code(), where(chain, index, op) + ": " + e.what());
  }
}

void Executor::run_node(const ir::Node& node) {
  const size_t id = node.index() + 1;
  if (is_native_op(id)) return run_native_op(node, ctx_);
  KernelFn kernel = backend_.kernels().find(id);
  if (!kernel)
    throw Error(ErrorCode::Unsupported, "the " + std::string(backend_.name()) + " backend has no kernel for this node");
  kernel(node, ctx_);
}

void Executor::run_onnx_op(const ir::OnnxOp& op) {
  OnnxKernelFn kernel = backend_.kernels().find_onnx(op.domain, op.op_type);
  if (!kernel)
    throw Error(ErrorCode::Unsupported, "the " + std::string(backend_.name()) + " backend has no kernel for this ONNX op");
  kernel(op, ctx_);
}

void Executor::run_if(const ir::IfNode& node) {
  run_chain(ctx_.resolve(node.cond) != 0 ? node.then_chain_idx : node.else_chain_idx);
}

void Executor::run_scan(const ir::ScanNode& scan) {
  if (scan.originals.empty() || scan.originals.size() != scan.sliced.size())
    throw Error(ErrorCode::InvalidProgram, model_->path + ": ScanNode: expected as many sliced slots as originals (>= 1)");
  const Tensor& first = ctx_.tensor(scan.originals[0]);
  const int axis = normalize_axis(scan.scan_axis, first.rank());
  const int64_t steps = first.dim(axis);
  std::vector<std::vector<Tensor>> collected(scan.outputs.size());
  for (int64_t t = 0; t < steps; ++t) {
    for (size_t i = 0; i < scan.originals.size(); ++i)
      ctx_.set_tensor(scan.sliced[i], take_index(ctx_.tensor(scan.originals[i]), axis, t));
    run_chain(static_cast<uint32_t>(scan.body_chain_idx));
    for (size_t i = 0; i < scan.outputs.size(); ++i) collected[i].push_back(ctx_.tensor(scan.outputs[i]));
  }
  for (size_t i = 0; i < scan.outputs.size(); ++i) ctx_.set_tensor(scan.outputs[i], stack(collected[i], axis));
}

}  // namespace wgml::runtime
