#include "wgml/session.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>

#include "backend/cpu/cpu_backend.h"
#include "backend/webgpu/webgpu_backend.h"
#include "core/device_data.h"
#include "core/elements.h"
#include "core/host_memory.h"
#include "core/memory_budget.h"
#include "frontend/load_model.h"
#include "frontend/summary.h"
#include "gpu/trace_writer.h"
#include "runtime/executor.h"
#include "runtime/memory_limit.h"

namespace wgml {
namespace {

void add_dims(IoInfo& info, const std::vector<ir::Dim>& shape) {
  for (const ir::Dim& d : shape) {
    info.shape.push_back(d.is_static() ? d.value : -1);
    info.max_shape.push_back(d.is_static() ? d.value : d.max_value);
  }
}

std::vector<IoInfo> io_infos(const std::vector<frontend::IoSummary>& list) {
  std::vector<IoInfo> out;
  for (const auto& s : list) {
    IoInfo info{s.name, s.kind, dtype_from_name(s.dtype).value_or(DType::Float32), {}, {}};
    add_dims(info, s.shape);
    out.push_back(std::move(info));
  }
  return out;
}

std::vector<IoInfo> mutable_buffer_infos(const ir::Program& program) {
  std::vector<IoInfo> out;
  for (const ir::Slot& slot : program.mutable_buffers) {
    const ir::TensorMeta* meta = slot.type == ir::SlotType::Tensor ? program.meta(ir::Tid{slot.idx}) : nullptr;
    if (!meta) continue;
    const ir::NamedSlot* named = program.named_slot_of_tensor(slot.idx);
    IoInfo info{named ? named->name : "mutable_buffer " + std::to_string(slot.idx), "tensor", meta->dtype, {}, {}};
    add_dims(info, meta->shape);
    out.push_back(std::move(info));
  }
  return out;
}

std::unique_ptr<runtime::Backend> make_backend(const SessionOptions& options) {
  if (options.device == "cpu") return std::make_unique<backend::cpu::CpuBackend>();
  if (options.device == "webgpu") {
    backend::webgpu::GpuOptions gpu;
    gpu.adapter = options.adapter;
    gpu.tunables = options.tunables;
    gpu.tunables_file = options.tunables_file;
    gpu.profile = options.profile;
    gpu.dispatches_per_submit = options.dispatches_per_submit;
    return std::make_unique<backend::webgpu::WebGpuBackend>(gpu);
  }
  throw Error(ErrorCode::InvalidArgument, "device \"" + options.device + "\": expected \"cpu\" or \"webgpu\"");
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

struct Session::Impl {
  std::shared_ptr<MemoryBudget> memory;  // every tensor the session makes counts against it
  std::unique_ptr<runtime::Backend> backend;
  std::unique_ptr<runtime::Executor> executor;
  std::vector<IoInfo> inputs, outputs, mutable_buffers;
  std::map<std::string, int64_t> metadata;
  backend::webgpu::Placement placement_seen;  // placement counts already reported
  std::map<std::string, runtime::Executor::OpTime> op_times_seen;
  RunStats last_run;
  double load_ms = 0;
  uint64_t runs_unreported = 0;  // runs since the last profile()
  double wall_unreported_ms = 0;
  double compile_unreported_ms = 0;  // compiling pipelines during those runs
  uint64_t compiles_unreported = 0;
  std::map<std::string, gpu::CompileTime> compile_times_seen;  // by kernel label, already reported
  ProfileTotals totals_reported;
  double load_gpu_ms = 0;  // the load's own kernels, timed while profiling (set_aside_load_timings)
  uint64_t load_dispatches = 0;

  const backend::webgpu::WebGpuBackend* gpu() const { return dynamic_cast<const backend::webgpu::WebGpuBackend*>(backend.get()); }
  std::vector<OpProfile> executor_ops(ProfileTotals& totals);
  std::vector<OpProfile> placement_ops(ProfileTotals& totals);
  void add_compile_times(std::map<std::string, OpProfile>& kernels);
  void set_aside_load_timings();
};

Session::Session(const std::string& path, SessionOptions options) : impl_(std::make_unique<Impl>()) {
  const auto start = std::chrono::steady_clock::now();
  const uint64_t memory_limit = options.max_memory_bytes ? options.max_memory_bytes : default_memory_limit();
  impl_->memory = std::make_shared<MemoryBudget>(memory_limit);
  const MemoryBudget::Scope counted(impl_->memory);
  auto model = std::make_shared<ir::Model>(frontend::load_model(path, frontend::LoadOptions{options.constants_path}));
  runtime::check_declared_tensor_sizes(*model, memory_limit);
  const frontend::ModelSummary summary = frontend::summarize(*model);
  impl_->inputs = io_infos(summary.inputs);
  impl_->outputs = io_infos(summary.outputs);
  impl_->mutable_buffers = mutable_buffer_infos(model->program);
  impl_->metadata = model->constant_methods;
  impl_->backend = make_backend(options);
  impl_->executor = std::make_unique<runtime::Executor>(std::move(model), *impl_->backend);
  impl_->executor->profile(options.profile);
  if (options.profile) impl_->set_aside_load_timings();
  impl_->load_ms = ms_since(start);
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

const std::vector<IoInfo>& Session::inputs() const { return impl_->inputs; }
const std::vector<IoInfo>& Session::outputs() const { return impl_->outputs; }
const std::vector<IoInfo>& Session::mutable_buffers() const { return impl_->mutable_buffers; }
const std::map<std::string, int64_t>& Session::metadata() const { return impl_->metadata; }

namespace {

RunStats run_stats(const backend::webgpu::GpuContext::Counters& c) {
  RunStats s;
  s.plans_made = c.plans_made;
  s.plan_keys_built = c.plan_keys_built;
  s.kernels_rendered = c.kernels_rendered;
  s.pipelines_compiled = c.pipelines_compiled;
  s.buffers_created = c.buffers_created;
  s.bind_groups_created = c.bind_groups_created;
  s.submits = c.submits;
  s.dispatches = c.dispatches;
  s.bytes_uploaded = c.bytes_uploaded;
  s.bytes_read = c.bytes_read;
  return s;
}

}  // namespace

RunStats operator-(const RunStats& after, const RunStats& before) {
  RunStats d = after;
  d.plans_made -= before.plans_made;
  d.plan_keys_built -= before.plan_keys_built;
  d.kernels_rendered -= before.kernels_rendered;
  d.pipelines_compiled -= before.pipelines_compiled;
  d.buffers_created -= before.buffers_created;
  d.bind_groups_created -= before.bind_groups_created;
  d.submits -= before.submits;
  d.dispatches -= before.dispatches;
  d.bytes_uploaded -= before.bytes_uploaded;
  d.bytes_read -= before.bytes_read;
  return d;
}

std::vector<Value> Session::run(const std::vector<Value>& inputs) {
  std::vector<Value> outputs;
  run(inputs, outputs);
  return outputs;
}

void Session::run(const std::vector<Value>& inputs, std::vector<Value>& outputs) {
  if (!usable())
    throw Error(ErrorCode::Runtime, "the session cannot run any more: its WebGPU device was lost (make a new Session)");
  const MemoryBudget::Scope counted(impl_->memory);
  const RunStats before = totals();
  host_tensor_memory().reset_peak();
  impl_->backend->reset_device_peaks();
  const auto* gpu = impl_->gpu();
  const double compile_before_ms = gpu ? gpu->context()->pipelines().compile_ms() : 0;
  const auto start = std::chrono::steady_clock::now();
  impl_->executor->run(inputs, outputs);
  const double wall = ms_since(start);
  if (gpu) impl_->compile_unreported_ms += gpu->context()->pipelines().compile_ms() - compile_before_ms;
  RunStats& last = impl_->last_run;
  last = totals() - before;
  last.wall_ms = wall;
  last.peak_host_bytes = host_tensor_memory().peak();
  const runtime::DeviceMemory device = impl_->backend->device_memory();
  last.peak_device_bytes = device.peak_allocated;
  last.device_buffers_in_use = device.buffers_in_use;
  ++impl_->runs_unreported;
  impl_->wall_unreported_ms += wall;
  impl_->compiles_unreported += last.pipelines_compiled;
}

Tensor Session::greedy_token(const Tensor& logits) {
  if (!logits.defined() || !is_floating(logits.dtype()) || logits.rank() < 1 || logits.shape().back() < 1)
    throw Error(ErrorCode::InvalidArgument, "greedy_token: expected float logits whose last axis holds at least one value");
  if (!usable())
    throw Error(ErrorCode::Runtime, "the session cannot run any more: its WebGPU device was lost (make a new Session)");
  const MemoryBudget::Scope counted(impl_->memory);
  if (const auto* gpu = impl_->gpu(); gpu && !TensorDeviceAccess::has_host_bytes(logits)) return gpu->greedy_token(logits);
  const int64_t row = logits.shape().back();
  Tensor token(DType::Int64, {1, 1});
  token.mutable_data_as<int64_t>()[0] = greedy_index(to_floats(logits.flat_range(logits.numel() - row, row)));
  return token;
}

void Session::reset() { impl_->executor->reset(); }

RunStats Session::totals() const {
  const auto* gpu = impl_->gpu();
  RunStats t = gpu ? run_stats(gpu->context()->counters()) : RunStats{};
  const RunStats& last = impl_->last_run;
  t.peak_host_bytes = last.peak_host_bytes;
  t.peak_device_bytes = last.peak_device_bytes;
  t.device_buffers_in_use = last.device_buffers_in_use;
  t.wall_ms = last.wall_ms;
  return t;
}

const RunStats& Session::last_run_stats() const { return impl_->last_run; }

double Session::load_ms() const { return impl_->load_ms; }

bool Session::usable() const {
  const auto* gpu = impl_->gpu();
  return !gpu || !gpu->context()->device().lost();
}

std::string Session::device_description() const {
  const auto* gpu = impl_->gpu();
  return gpu ? "webgpu: " + gpu->context()->device().adapter().summary() : "cpu";
}

// The instructions the executor timed since the last report: on the CPU backend every op; on
// WebGPU the ones it runs itself (the rest are reported by the backend's placement and the GPU's
// timestamps), the others' CPU time being what recording their GPU work cost.
std::vector<OpProfile> Session::Impl::executor_ops(ProfileTotals& totals) {
  const bool on_gpu = gpu() != nullptr;
  std::vector<OpProfile> out;
  double instructions_ms = 0;
  for (const auto& [op, time] : executor->op_times()) {
    const runtime::Executor::OpTime& seen = op_times_seen[op];
    if (time.calls == seen.calls) continue;
    const double ms = time.ms - seen.ms;
    instructions_ms += ms;
    if (time.native) {
      totals.executor_ms += ms;
      out.push_back(
          {op, "executor", time.calls - seen.calls, ms, "value arithmetic or a slot copy: the executor does it on the CPU"});
    } else if (!on_gpu) {
      totals.cpu_ops_ms += ms;
      out.push_back({op, "cpu", time.calls - seen.calls, ms, ""});
    }
  }
  op_times_seen = executor->op_times();
  if (on_gpu) totals.gpu_recording_ms = instructions_ms - totals.executor_ms;  // fallbacks and host ops come off in placement_ops
  return out;
}

// A WebGPU run's ops that ran on the CPU (fallbacks with their reason, host arithmetic) and views.
std::vector<OpProfile> Session::Impl::placement_ops(ProfileTotals& totals) {
  const backend::webgpu::Placement& placement = gpu()->placement();
  std::vector<OpProfile> out;
  for (const auto& [op, count] : placement.on_cpu) {
    const uint64_t seen = placement_seen.on_cpu[op];
    if (count == seen) continue;
    const double ms = placement.cpu_ms.at(op) - placement_seen.cpu_ms[op];
    totals.cpu_ops_ms += ms;
    out.push_back({op, "cpu", count - seen, ms, placement.fallback_reason.at(op)});
  }
  for (const auto& [op, count] : placement.on_host) {
    const uint64_t seen = placement_seen.on_host[op];
    if (count == seen) continue;
    const double ms = placement.host_ms.at(op) - placement_seen.host_ms[op];
    totals.host_ms += ms;
    out.push_back(
        {op, "host", count - seen, ms, "positions, shape arithmetic or a few floats made from them on the host: computed there"});
  }
  for (const auto& [op, count] : placement.views) {
    const uint64_t seen = placement_seen.views[op];
    if (count != seen) out.push_back({op, "view", count - seen, 0, "a shape change: the GPU buffer is shared"});
  }
  placement_seen = placement;
  totals.gpu_recording_ms -= totals.cpu_ops_ms + totals.host_ms;
  return out;
}

// The pipelines compiled per kernel pass since the last report (also those compiled at load, for
// instructions computing from constants), added to that pass's row.
void Session::Impl::add_compile_times(std::map<std::string, OpProfile>& kernels) {
  const std::map<std::string, gpu::CompileTime>& times = gpu()->context()->pipelines().compile_times();
  for (const auto& [label, time] : times) {
    const gpu::CompileTime& seen = compile_times_seen[label];
    if (time.compiles == seen.compiles) continue;
    OpProfile& p = kernels[label];
    p.op = label;
    p.device = "webgpu";
    p.compiles = time.compiles - seen.compiles;
    p.compile_ms = time.ms - seen.ms;
  }
  compile_times_seen = times;
}

// The load's GPU work (the init chain, constants folded at load) is timed like a run's when
// profiling; it is summed here and left out of the per-op profile and its trace, which report what
// the runs do.
void Session::Impl::set_aside_load_timings() {
  const auto* webgpu = gpu();
  gpu::Profiler* profiler = webgpu ? webgpu->context()->profiler() : nullptr;
  if (!profiler) return;
  webgpu->context()->recorder().finish();
  for (const gpu::GpuTiming& t : profiler->collect()) {
    if (t.kind != gpu::TimingKind::Op) continue;
    load_gpu_ms += t.duration_ns / 1e6;
    ++load_dispatches;
  }
}

std::vector<OpProfile> Session::profile(const std::string& trace_path) {
  ProfileTotals totals;
  totals.runs = std::exchange(impl_->runs_unreported, 0);
  totals.wall_ms = std::exchange(impl_->wall_unreported_ms, 0);
  totals.compile_ms = std::exchange(impl_->compile_unreported_ms, 0);
  totals.pipelines_compiled = std::exchange(impl_->compiles_unreported, 0);
  totals.load_gpu_ms = std::exchange(impl_->load_gpu_ms, 0);
  totals.load_dispatches = std::exchange(impl_->load_dispatches, 0);
  std::vector<OpProfile> out = impl_->executor_ops(totals);
  if (const auto* gpu = impl_->gpu()) {
    std::map<std::string, OpProfile> kernels;
    if (gpu::Profiler* profiler = gpu->context()->profiler()) {
      gpu->context()->recorder().finish();
      const std::vector<gpu::GpuTiming> timings = profiler->collect();
      if (!trace_path.empty()) gpu::write_chrome_trace(trace_path, gpu::trace_slices(timings));
      for (const gpu::GpuTiming& t : timings) {
        if (t.kind != gpu::TimingKind::Op) continue;
        OpProfile& p = kernels[t.name];
        p.op = t.name;
        p.device = "webgpu";
        ++p.calls;
        p.total_ms += t.duration_ns / 1e6;
        totals.gpu_busy_ms += t.duration_ns / 1e6;
      }
    }
    impl_->add_compile_times(kernels);
    for (auto& [name, p] : kernels) out.push_back(std::move(p));
    for (OpProfile& p : impl_->placement_ops(totals)) out.push_back(std::move(p));
    totals.gpu_recording_ms -= totals.compile_ms;  // compiles happen while recording
  }
  totals.other_ms =
      totals.wall_ms - totals.cpu_ops_ms - totals.host_ms - totals.executor_ms - totals.gpu_recording_ms - totals.compile_ms;
  impl_->totals_reported = totals;
  std::stable_sort(out.begin(), out.end(),
                   [](const OpProfile& a, const OpProfile& b) { return a.total_ms + a.compile_ms > b.total_ms + b.compile_ms; });
  return out;
}

const ProfileTotals& Session::profile_totals() const { return impl_->totals_reported; }

MemoryProfile Session::memory_profile() const {
  const runtime::MemorySnapshot& peak = impl_->executor->memory_peak();
  MemoryProfile out{peak.host_bytes, peak.device_bytes, peak.after, {}};
  for (const runtime::LiveTensor& t : peak.largest) {
    std::string shape = std::string(dtype_name(t.dtype)) + " [";
    for (size_t d = 0; d < t.shape.size(); ++d) shape += (d ? ", " : "") + std::to_string(t.shape[d]);
    out.largest.push_back({std::string(ir::tensor_class_name(t.slot_class)) + " " + std::to_string(t.slot), shape + "]",
                           t.host_bytes, t.device_bytes, t.written_by});
  }
  return out;
}

}  // namespace wgml
