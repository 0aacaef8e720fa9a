#include "backend/webgpu/gpu_context.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>

#include "wgml/error.h"

namespace wgml::backend::webgpu {
namespace {

gpu::DeviceOptions device_options(const GpuOptions& options) {
  gpu::DeviceOptions d;
  d.adapter = options.adapter;
  d.timestamps = options.profile;
  return d;
}

gpu::RecorderOptions recorder_options(const GpuOptions& options) {
  gpu::RecorderOptions r;
  if (options.dispatches_per_submit > 0) r.dispatches_per_submit = options.dispatches_per_submit;
  return r;
}

std::string kernels_dir(const GpuOptions& options) {
  return options.kernels_dir.empty() ? default_kernels_dir() : options.kernels_dir;
}

// "NVIDIA H200" -> "nvidia-h200": the adapter's file name under kernels/tunables.
std::string adapter_slug(const std::string& name) {
  std::string slug;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      slug += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!slug.empty() && slug.back() != '-')
      slug += '-';
  }
  while (!slug.empty() && slug.back() == '-') slug.pop_back();
  return slug;
}

// The tunables file: the one given, else kernels/tunables/<adapter>.json where it exists.
std::string tunables_file(const GpuOptions& options, const gpu::AdapterDescription& adapter) {
  if (!options.tunables_file.empty()) return options.tunables_file;
  const std::string path = kernels_dir(options) + "/tunables/" + adapter_slug(adapter.name) + ".json";
  return std::filesystem::exists(path) ? path : "";
}

// Everything a plan depends on besides the spec and the device, in an encoding that is cheap to
// build: it is made for every dispatch (kernel::Value::append_key).
std::string request_key(const kernel::KernelSpec& spec, const kernel::KernelRequest& r) {
  std::string key;
  key.reserve(256);
  auto add = [&](char tag, const std::string& name) {
    const auto size = static_cast<uint32_t>(name.size());
    key += tag;
    key.append(reinterpret_cast<const char*>(&size), sizeof size);
    key += name;
  };
  auto add_tensors = [&](char tag, const std::map<std::string, kernel::TensorDesc>& tensors) {
    for (const auto& [name, t] : tensors) {
      add(tag, name);
      key += static_cast<char>(t.dtype);
      key += static_cast<char>(t.shape.size());
      key.append(reinterpret_cast<const char*>(t.shape.data()), t.shape.size() * sizeof(int64_t));
    }
  };
  add('s', spec.file);
  add('n', spec.qualified_name());
  add_tensors('i', r.inputs);
  add_tensors('o', r.outputs);
  for (const std::string& name : r.wanted_outputs) add('w', name);
  for (const auto& [name, value] : r.attributes) {
    add('a', name);
    value.append_key(key);
  }
  for (const auto& [name, values] : r.input_values) {
    add('v', name);
    kernel::Value(values).append_key(key);
  }
  for (const auto& [input, output] : r.may_alias) {
    add('m', input);
    add('>', output);
  }
  // A plan made with dynamic attributes carries how it follows them (KernelPlan::dynamic).
  for (const std::string& name : r.dynamic_attributes) add('d', name);
  return key;
}

constexpr size_t kMaxCachedPlans = 8192;
constexpr size_t kMaxOwnPlans = 64;  // shapes repacked or picked from; a linear search stays cheap

}  // namespace

std::string default_kernels_dir() {
  if (const char* env = std::getenv("WGML_KERNELS_DIR"); env && *env) return env;
  return WGML_KERNELS_DIR;
}

GpuContext::GpuContext(const GpuOptions& options)
    : device_(device_options(options)), pool_(device_), pipelines_(device_), engine_(kernels_dir(options) + "/wgsl") {
  if (options.profile) profiler_ = std::make_unique<gpu::Profiler>(device_, pool_);
  recorder_ = std::make_unique<gpu::Recorder>(device_, pool_, recorder_options(options), profiler_.get());
  engine_.load_directory(kernels_dir(options) + "/specs");
  decompositions_ = kernel::load_decomposition_directory(kernels_dir(options) + "/decompositions");
  caps_.shader_f16 = device_.features().shader_f16;
  caps_.subgroups = device_.features().subgroups;
  caps_.max_workgroups_per_dimension = device_.limits().maxComputeWorkgroupsPerDimension;
  caps_.max_storage_binding_bytes = device_.limits().maxStorageBufferBindingSize;
  for (const std::string& setting : options.tunables) tunables_.add_run_override(setting);
  if (const std::string file = tunables_file(options, device_.adapter()); !file.empty()) tunables_.load_adapter_file(file);
  check_tunables();
}

// A mistyped override must be an error now, not a kernel that silently falls back to the CPU.
void GpuContext::check_tunables() const {
  for (const std::string& op : tunables_.named_ops()) {
    const bool known = std::any_of(engine_.specs().begin(), engine_.specs().end(), [&](const auto& entry) {
      return entry.second->name == op || entry.second->qualified_name() == op;
    });
    if (!known) throw Error(ErrorCode::InvalidArgument, "tunable override for '" + op + "': there is no kernel of that name");
  }
  for (const auto& entry : engine_.specs()) tunables_.resolve(*entry.second);
}

std::shared_ptr<const kernel::KernelPlan> GpuContext::shared_plan(const kernel::KernelSpec& spec,
                                                                  const kernel::KernelRequest& request) {
  const std::string key = request_key(spec, request);
  ++plan_keys_built_;
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    if (plans_.size() >= kMaxCachedPlans) plans_.clear();
    CachedPlan entry;
    ++plans_made_;
    try {
      entry.plan = std::make_shared<const kernel::KernelPlan>(engine_.plan(spec, request, caps_, tunables_, &renders_));
    } catch (const Error& e) {
      entry.error_code = e.code();
      entry.error = e.what();
    }
    it = plans_.emplace(key, std::move(entry)).first;
  }
  if (!it->second.plan) throw Error(it->second.error_code, it->second.error);
  return it->second.plan;
}

const kernel::Decomposition* GpuContext::decomposition(const std::string& domain, const std::string& op) const {
  const auto it = decompositions_.find({domain, op});
  return it == decompositions_.end() ? nullptr : &it->second;
}

const gpu::Kernel* GpuContext::find_kernel(const kernel::PlanPass& pass) const {
  const auto it = kernels_.find(pass.wgsl);
  return it == kernels_.end() ? nullptr : it->second;
}

const gpu::Kernel& GpuContext::add_kernel(const kernel::PlanPass& pass, const gpu::KernelSource& kernel) {
  if (kernels_.size() >= kMaxCachedPlans) kernels_.clear();
  const gpu::Kernel& compiled = pipelines_.get(kernel);
  kernels_.emplace(pass.wgsl, &compiled);
  return compiled;
}

std::shared_ptr<const kernel::KernelPlan> GpuContext::own_plan(std::string_view op, std::string_view input, DType dtype,
                                                               const Shape& shape) {
  for (const OwnPlan& planned : own_plans_)
    if (planned.op == op && planned.dtype == dtype && planned.shape == shape) return planned.plan;
  const kernel::KernelSpec* spec = engine_.find("wgml", std::string(op));
  if (!spec) return nullptr;
  kernel::KernelRequest request;
  request.inputs[std::string(input)] = kernel::TensorDesc{dtype, shape};
  if (own_plans_.size() >= kMaxOwnPlans) own_plans_.clear();
  return own_plans_.emplace_back(OwnPlan{std::string(op), dtype, shape, shared_plan(*spec, request)}).plan;
}

GpuContext::Counters GpuContext::counters() const {
  const gpu::Recorder::Traffic& traffic = recorder_->traffic();
  return Counters{plans_made_,
                  plan_keys_built_,
                  renders_.renders(),
                  pipelines_.compiles(),
                  pool_.stats().created,
                  recorder_->bind_groups_created(),
                  recorder_->submissions(),
                  traffic.dispatches,
                  traffic.bytes_uploaded,
                  traffic.bytes_read};
}

GpuContext::~GpuContext() {
  recorder_.reset();
  profiler_.reset();
  device_.drain();
}

}  // namespace wgml::backend::webgpu
