#include "wgml/session.h"

#include <algorithm>
#include <map>

#include "backend/cpu/cpu_backend.h"
#include "backend/webgpu/webgpu_backend.h"
#include "frontend/load_model.h"
#include "frontend/summary.h"
#include "gpu/trace_writer.h"
#include "runtime/executor.h"

namespace wgml {
namespace {

std::vector<IoInfo> io_infos(const std::vector<frontend::IoSummary>& list) {
  std::vector<IoInfo> out;
  for (const auto& s : list) {
    IoInfo info{s.name, s.kind, dtype_from_name(s.dtype).value_or(DType::Float32), {}, {}};
    for (const ir::Dim& d : s.shape) {
      info.shape.push_back(d.is_static() ? d.value : -1);
      info.max_shape.push_back(d.is_static() ? d.value : d.max_value);
    }
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
    return std::make_unique<backend::webgpu::WebGpuBackend>(gpu);
  }
  throw Error(ErrorCode::InvalidArgument, "device \"" + options.device + "\": expected \"cpu\" or \"webgpu\"");
}

}  // namespace

struct Session::Impl {
  std::unique_ptr<runtime::Backend> backend;
  std::unique_ptr<runtime::Executor> executor;
  std::vector<IoInfo> inputs, outputs;
  backend::webgpu::Placement placement_seen;  // placement counts already reported
  RunStats last_run;

  const backend::webgpu::WebGpuBackend* gpu() const { return dynamic_cast<const backend::webgpu::WebGpuBackend*>(backend.get()); }
};

Session::Session(const std::string& path, SessionOptions options) : impl_(std::make_unique<Impl>()) {
  auto model = std::make_shared<ir::Model>(frontend::load_model(path, frontend::LoadOptions{options.constants_path}));
  const frontend::ModelSummary summary = frontend::summarize(*model);
  impl_->inputs = io_infos(summary.inputs);
  impl_->outputs = io_infos(summary.outputs);
  impl_->backend = make_backend(options);
  impl_->executor = std::make_unique<runtime::Executor>(std::move(model), *impl_->backend);
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

const std::vector<IoInfo>& Session::inputs() const { return impl_->inputs; }
const std::vector<IoInfo>& Session::outputs() const { return impl_->outputs; }

namespace {

RunStats run_stats(const backend::webgpu::GpuContext::Counters& c) {
  return RunStats{c.plans_made, c.kernels_rendered, c.pipelines_compiled, c.buffers_created, c.bind_groups_created,
                  c.submits,    c.dispatches,       c.bytes_uploaded,     c.bytes_read};
}

}  // namespace

RunStats operator-(const RunStats& after, const RunStats& before) {
  return RunStats{after.plans_made - before.plans_made,
                  after.kernels_rendered - before.kernels_rendered,
                  after.pipelines_compiled - before.pipelines_compiled,
                  after.buffers_created - before.buffers_created,
                  after.bind_groups_created - before.bind_groups_created,
                  after.submits - before.submits,
                  after.dispatches - before.dispatches,
                  after.bytes_uploaded - before.bytes_uploaded,
                  after.bytes_read - before.bytes_read};
}

std::vector<Value> Session::run(const std::vector<Value>& inputs) {
  if (!impl_->gpu()) return impl_->executor->run(inputs);
  const RunStats before = totals();
  std::vector<Value> outputs = impl_->executor->run(inputs);
  impl_->last_run = totals() - before;
  return outputs;
}

void Session::reset() { impl_->executor->reset(); }

RunStats Session::totals() const {
  const auto* gpu = impl_->gpu();
  return gpu ? run_stats(gpu->context()->counters()) : RunStats{};
}

const RunStats& Session::last_run_stats() const { return impl_->last_run; }

std::string Session::device_description() const {
  const auto* gpu = impl_->gpu();
  return gpu ? "webgpu: " + gpu->context()->device().adapter().summary() : "cpu";
}

std::vector<OpProfile> Session::profile(const std::string& trace_path) {
  const auto* gpu = impl_->gpu();
  if (!gpu) return {};
  std::map<std::pair<std::string, std::string>, OpProfile> by_op;
  if (gpu::Profiler* profiler = gpu->context()->profiler()) {
    gpu->context()->recorder().finish();
    const std::vector<gpu::GpuTiming> timings = profiler->collect();
    if (!trace_path.empty()) gpu::write_chrome_trace(trace_path, gpu::trace_slices(timings));
    for (const gpu::GpuTiming& t : timings) {
      if (t.kind != gpu::TimingKind::Op) continue;
      OpProfile& p = by_op[{t.name, "webgpu"}];
      p.op = t.name;
      p.device = "webgpu";
      ++p.calls;
      p.total_ms += t.duration_ns / 1e6;
    }
  }
  const backend::webgpu::Placement& placement = gpu->placement();
  for (const auto& [op, count] : placement.on_cpu) {
    const uint64_t seen = impl_->placement_seen.on_cpu[op];
    if (count == seen) continue;
    OpProfile& p = by_op[{op, "cpu"}];
    const double ms = placement.cpu_ms.at(op) - impl_->placement_seen.cpu_ms[op];
    p = OpProfile{op, "cpu", count - seen, ms, placement.fallback_reason.at(op)};
  }
  for (const auto& [op, count] : placement.on_host) {
    const uint64_t seen = impl_->placement_seen.on_host[op];
    if (count != seen)
      by_op[{op, "host"}] =
          OpProfile{op, "host", count - seen, 0, "positions or shape arithmetic from values the host holds: computed there"};
  }
  for (const auto& [op, count] : placement.views) {
    const uint64_t seen = impl_->placement_seen.views[op];
    if (count != seen) by_op[{op, "view"}] = OpProfile{op, "view", count - seen, 0, "a shape change: the GPU buffer is shared"};
  }
  impl_->placement_seen = placement;
  std::vector<OpProfile> out;
  for (auto& [key, p] : by_op) out.push_back(std::move(p));
  std::stable_sort(out.begin(), out.end(), [](const OpProfile& a, const OpProfile& b) { return a.total_ms > b.total_ms; });
  return out;
}

}  // namespace wgml
