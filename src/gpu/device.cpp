#include "gpu/device.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <mutex>
#include <thread>

#include "gpu/gpu_error.h"
#include "gpu/webgpu_strings.h"

namespace wgml::gpu {

// Written by the implementation's callbacks, which get a pointer to it as userdata.
struct Device::State {
  // Atomic: a buffer freed on another thread than the one using the device reads it for its fence.
  std::atomic<uint64_t> submitted = 0;
  uint64_t completed = 0;  // on_work_done runs inside pump_events, on the thread using the device
  // The device-lost callback (AllowSpontaneous) and the uncaptured-error callback may run on any
  // thread at any time (webgpu.h), so what they write is read under this lock.
  std::mutex callbacks_mutex;
  bool lost = false;
  std::string lost_message;
  bool has_uncaptured_error = false;
  WGPUErrorType uncaptured_type = WGPUErrorType_NoError;
  std::string uncaptured_message;
};

namespace {

using Clock = std::chrono::steady_clock;
// How long wgml waits for the GPU before it reports a hang. Generous: lavapipe runs kernels on
// the CPU, and one big submission can take many seconds there.
constexpr auto kWaitLimit = std::chrono::seconds(300);

// ---- adapters --------------------------------------------------------------------------------

AdapterKind kind_of(WGPUAdapterType type) {
  switch (type) {
    case WGPUAdapterType_DiscreteGPU:
      return AdapterKind::DiscreteGpu;
    case WGPUAdapterType_IntegratedGPU:
      return AdapterKind::IntegratedGpu;
    case WGPUAdapterType_CPU:
      return AdapterKind::Cpu;
    default:
      return AdapterKind::Other;
  }
}

const char* backend_name(WGPUBackendType backend) {
  switch (backend) {
    case WGPUBackendType_Null:
      return "Null";
    case WGPUBackendType_WebGPU:
      return "WebGPU";
    case WGPUBackendType_D3D11:
      return "D3D11";
    case WGPUBackendType_D3D12:
      return "D3D12";
    case WGPUBackendType_Metal:
      return "Metal";
    case WGPUBackendType_Vulkan:
      return "Vulkan";
    case WGPUBackendType_OpenGL:
      return "OpenGL";
    case WGPUBackendType_OpenGLES:
      return "OpenGLES";
    default:
      return "unknown";
  }
}

AdapterDescription describe(const api::Functions& fn, WGPUAdapter adapter, size_t index) {
  AdapterDescription d;
  d.index = index;
  WGPUAdapterInfo info{};
  if (fn.AdapterGetInfo(adapter, &info) != WGPUStatus_Success) {
    d.name = "(no adapter information)";
    return d;
  }
  d.name = to_string(info.device);
  d.vendor = to_string(info.vendor);
  d.driver = to_string(info.description);
  d.backend = backend_name(info.backendType);
  d.kind = kind_of(info.adapterType);
  d.real_device = info.backendType != WGPUBackendType_Null && info.backendType != WGPUBackendType_Undefined;
  fn.AdapterInfoFreeMembers(info);
  return d;
}

// An instance restricted to the native APIs wgml supports, with its adapters.
struct AdapterSet {
  const api::Functions& fn;
  WGPUInstance instance = nullptr;
  std::vector<WGPUAdapter> adapters;
  std::vector<AdapterDescription> descriptions;

  explicit AdapterSet(const api::Functions& functions) : fn(functions) {
    WGPUInstanceExtras extras{};
    // wgpu-native's own structure types are a separate enum numbered in WGPUSType's space.
    extras.chain.sType = static_cast<WGPUSType>(WGPUSType_InstanceExtras);
    extras.backends = WGPUInstanceBackend_Primary;
    WGPUInstanceDescriptor desc{};
    desc.nextInChain = &extras.chain;
    instance = fn.CreateInstance(&desc);
    if (!instance)
      throw GpuError(GpuErrorKind::Internal, "creating the WebGPU instance", "wgpuCreateInstance returned no instance");
    WGPUInstanceEnumerateAdapterOptions options{nullptr, WGPUInstanceBackend_Primary};
    adapters.resize(fn.InstanceEnumerateAdapters(instance, &options, nullptr));
    adapters.resize(fn.InstanceEnumerateAdapters(instance, &options, adapters.data()));
    for (size_t i = 0; i < adapters.size(); ++i) descriptions.push_back(describe(fn, adapters[i], i));
  }
  ~AdapterSet() {
    for (WGPUAdapter a : adapters)
      if (a) fn.AdapterRelease(a);
    if (instance) fn.InstanceRelease(instance);
  }
  AdapterSet(const AdapterSet&) = delete;
  AdapterSet& operator=(const AdapterSet&) = delete;

  // Hands the instance and one adapter over to the caller; the rest are released.
  std::pair<WGPUInstance, WGPUAdapter> take(size_t index) {
    std::pair<WGPUInstance, WGPUAdapter> taken{instance, adapters[index]};
    adapters[index] = nullptr;
    instance = nullptr;
    return taken;
  }
};

int preference_rank(AdapterKind kind) {
  switch (kind) {
    case AdapterKind::DiscreteGpu:
      return 0;
    case AdapterKind::IntegratedGpu:
      return 1;
    case AdapterKind::Cpu:
      return 2;
    case AdapterKind::Other:
      return 3;
  }
  return 3;
}

std::string adapter_list(const std::vector<AdapterDescription>& adapters) {
  if (adapters.empty()) return "the implementation found no adapters";
  std::string s = "available adapters:";
  for (const auto& a : adapters) s += "\n  " + a.summary();
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_index(std::string_view s) {
  return !s.empty() && s.size() < 9 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The best real adapter among those `accept` allows, or adapters.size() if there is none.
template <class Accept>
size_t best_adapter(const std::vector<AdapterDescription>& adapters, Accept accept) {
  size_t best = adapters.size();
  for (size_t i = 0; i < adapters.size(); ++i) {
    if (!adapters[i].real_device || !accept(adapters[i])) continue;
    if (best == adapters.size() || preference_rank(adapters[i].kind) < preference_rank(adapters[best].kind)) best = i;
  }
  return best;
}

// ---- callbacks -------------------------------------------------------------------------------

void on_device_lost(const WGPUDevice*, WGPUDeviceLostReason reason, WGPUStringView message, void* userdata, void*) {
  // Destroyed / CallbackCancelled: wgml released the device itself.
  if (reason == WGPUDeviceLostReason_Destroyed || reason == WGPUDeviceLostReason_CallbackCancelled) return;
  auto* state = static_cast<Device::State*>(userdata);
  const std::lock_guard lock(state->callbacks_mutex);
  state->lost = true;
  state->lost_message = to_string(message);
}

void on_uncaptured_error(const WGPUDevice*, WGPUErrorType type, WGPUStringView message, void* userdata, void*) {
  auto* state = static_cast<Device::State*>(userdata);
  const std::lock_guard lock(state->callbacks_mutex);
  if (state->has_uncaptured_error) return;  // the first error explains the ones after it
  state->has_uncaptured_error = true;
  state->uncaptured_type = type;
  state->uncaptured_message = to_string(message);
}

void on_work_done(WGPUQueueWorkDoneStatus, WGPUStringView, void* userdata, void* serial) {
  auto* state = static_cast<Device::State*>(userdata);
  state->completed = std::max<uint64_t>(state->completed, reinterpret_cast<uintptr_t>(serial));
}

struct RequestDeviceResult {
  bool done = false;
  WGPUDevice device = nullptr;
  std::string message;
};

void on_request_device(WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView message, void* userdata, void*) {
  auto* result = static_cast<RequestDeviceResult*>(userdata);
  result->done = true;
  if (status == WGPURequestDeviceStatus_Success) result->device = device;
  result->message = to_string(message);
}

struct PopResult {
  bool done = false;
  WGPUErrorType type = WGPUErrorType_NoError;
  std::string message;
};

void on_pop_error_scope(WGPUPopErrorScopeStatus status, WGPUErrorType type, WGPUStringView message, void* userdata, void*) {
  auto* result = static_cast<PopResult*>(userdata);
  result->done = true;
  result->type = status == WGPUPopErrorScopeStatus_Success ? type : WGPUErrorType_NoError;
  result->message = to_string(message);
}

GpuErrorKind kind_of(WGPUErrorType type) {
  switch (type) {
    case WGPUErrorType_Validation:
      return GpuErrorKind::Validation;
    case WGPUErrorType_OutOfMemory:
      return GpuErrorKind::OutOfMemory;
    default:
      return GpuErrorKind::Internal;
  }
}

// The filters each ErrorScope pushes, in push order. wgpu-native has no Internal filter (it
// aborts the process when asked for one); internal errors reach the uncaptured-error callback,
// which check() reports.
constexpr WGPUErrorFilter kScopeFilters[] = {WGPUErrorFilter_Validation, WGPUErrorFilter_OutOfMemory};

}  // namespace

const char* adapter_kind_name(AdapterKind kind) {
  switch (kind) {
    case AdapterKind::DiscreteGpu:
      return "discrete GPU";
    case AdapterKind::IntegratedGpu:
      return "integrated GPU";
    case AdapterKind::Cpu:
      return "CPU";
    case AdapterKind::Other:
      return "other";
  }
  return "other";
}

std::string AdapterDescription::summary() const {
  std::string s = "#" + std::to_string(index) + " " + name + " (" + adapter_kind_name(kind) + ", " + backend +
                  (driver.empty() ? "" : ", " + driver) + ")";
  if (!real_device) s += " [not a real device]";
  return s;
}

std::vector<AdapterDescription> list_adapters() { return AdapterSet(webgpu_library().fn).descriptions; }

size_t choose_adapter(const std::vector<AdapterDescription>& adapters, std::string_view selector) {
  const std::string op = "choosing the WebGPU adapter";
  if (best_adapter(adapters, [](const AdapterDescription&) { return true; }) == adapters.size())
    throw GpuError(GpuErrorKind::NoAdapter, op,
                   "no GPU or CPU device (is a Vulkan driver installed? lavapipe comes with "
                   "Debian's mesa-vulkan-drivers); " +
                       adapter_list(adapters));
  if (selector.empty()) return best_adapter(adapters, [](const AdapterDescription&) { return true; });
  if (is_index(selector)) {
    const size_t index = std::stoul(std::string(selector));
    if (index >= adapters.size())
      throw GpuError(GpuErrorKind::BadSelection, op,
                     "there is no adapter #" + std::string(selector) + "; " + adapter_list(adapters));
    if (!adapters[index].real_device)
      throw GpuError(
          GpuErrorKind::BadSelection, op,
          "adapter " + adapters[index].summary() + " uses the " + adapters[index].backend + " backend, which computes nothing");
    return index;
  }
  const std::string wanted = lower(selector);
  const size_t match =
      best_adapter(adapters, [&](const AdapterDescription& a) { return lower(a.name).find(wanted) != std::string::npos; });
  if (match == adapters.size())
    throw GpuError(GpuErrorKind::BadSelection, op,
                   "no usable adapter's name contains '" + std::string(selector) + "'; " + adapter_list(adapters));
  return match;
}

// ---- Device ----------------------------------------------------------------------------------

Device::Device(const DeviceOptions& options) : library_(&webgpu_library()), state_(std::make_unique<State>()) {
  open_adapter(options);
  try {
    open_device(options);
  } catch (...) {
    release();  // the destructor does not run for a constructor that throws
    throw;
  }
}

Device::~Device() { release(); }

void Device::release() noexcept {
  const auto& f = fn();
  drain();
  if (queue_) f.QueueRelease(queue_);
  if (device_) {
    f.DeviceDestroy(device_);
    f.DeviceRelease(device_);
  }
  if (adapter_handle_) f.AdapterRelease(adapter_handle_);
  if (instance_) f.InstanceRelease(instance_);
}

void Device::open_adapter(const DeviceOptions& options) {
  AdapterSet set(fn());
  const size_t chosen = choose_adapter(set.descriptions, options.adapter);
  adapter_ = set.descriptions[chosen];
  std::tie(instance_, adapter_handle_) = set.take(chosen);
}

std::vector<WGPUFeatureName> Device::wanted_features(const DeviceOptions& options) {
  WGPUSupportedFeatures supported{};
  fn().AdapterGetFeatures(adapter_handle_, &supported);
  const std::vector<WGPUFeatureName> offered_features(supported.features, supported.features + supported.featureCount);
  fn().SupportedFeaturesFreeMembers(supported);
  auto offered = [&](WGPUFeatureName f) {
    return std::find(offered_features.begin(), offered_features.end(), f) != offered_features.end();
  };
  std::vector<WGPUFeatureName> wanted;
  auto want = [&](WGPUFeatureName f) {
    if (!offered(f)) return false;
    wanted.push_back(f);
    return true;
  };
  // wgpu-native's own features are numbered in the standard enum's space, from 0x30000.
  const auto native = [](WGPUNativeFeature f) { return static_cast<WGPUFeatureName>(f); };
  if (options.timestamps) {
    features_.timestamp_query = want(WGPUFeatureName_TimestampQuery);
    features_.timestamps_inside_passes = features_.timestamp_query &&
                                         offered(native(WGPUNativeFeature_TimestampQueryInsideEncoders)) &&
                                         want(native(WGPUNativeFeature_TimestampQueryInsidePasses));
    if (features_.timestamps_inside_passes) want(native(WGPUNativeFeature_TimestampQueryInsideEncoders));
  }
  features_.shader_f16 = want(WGPUFeatureName_ShaderF16);
  const bool native_subgroups = want(native(WGPUNativeFeature_Subgroup));
  features_.subgroups = want(WGPUFeatureName_Subgroups) || native_subgroups;
  return wanted;
}

void Device::open_device(const DeviceOptions& options) {
  const auto& f = fn();
  const std::string op = "opening device " + adapter_.summary();
  if (f.AdapterGetLimits(adapter_handle_, &limits_) != WGPUStatus_Success)
    throw GpuError(GpuErrorKind::Internal, op, "wgpuAdapterGetLimits failed");
  limits_.nextInChain = nullptr;
  const std::vector<WGPUFeatureName> features = wanted_features(options);

  WGPUDeviceDescriptor desc{};
  desc.label = view("wgml");
  desc.requiredFeatureCount = features.size();
  desc.requiredFeatures = features.data();
  desc.requiredLimits = &limits_;  // everything the adapter offers
  desc.defaultQueue.label = view("wgml queue");
  desc.deviceLostCallbackInfo = {nullptr, WGPUCallbackMode_AllowSpontaneous, on_device_lost, state_.get(), nullptr};
  desc.uncapturedErrorCallbackInfo = {nullptr, on_uncaptured_error, state_.get(), nullptr};
  RequestDeviceResult result;
  f.AdapterRequestDevice(adapter_handle_, &desc,
                         {nullptr, WGPUCallbackMode_AllowProcessEvents, on_request_device, &result, nullptr});
  wait_for_callback(result.done, op);
  if (!result.device) throw GpuError(GpuErrorKind::Internal, op, result.message);
  device_ = result.device;
  queue_ = f.DeviceGetQueue(device_);
}

double Device::timestamp_period_ns() const { return fn().QueueGetTimestampPeriod(queue_); }

void Device::pump_events(bool block) {
  if (device_) fn().DevicePoll(device_, block ? 1 : 0, nullptr);
  fn().InstanceProcessEvents(instance_);
}

void Device::wait_for_callback(const bool& done, std::string_view op) {
  pump_events(false);
  const auto deadline = Clock::now() + kWaitLimit;
  while (!done) {
    if (lost()) check(op);
    if (Clock::now() > deadline) throw GpuError(GpuErrorKind::Timeout, op, "no answer from the implementation in 300 s");
    std::this_thread::yield();
    pump_events(true);
  }
}

void Device::check(std::string_view op) {
  const std::lock_guard lock(state_->callbacks_mutex);
  if (state_->lost) throw GpuError(GpuErrorKind::DeviceLost, op, "the device was lost: " + state_->lost_message);
  if (state_->has_uncaptured_error) {
    state_->has_uncaptured_error = false;
    throw GpuError(kind_of(state_->uncaptured_type), op, state_->uncaptured_message);
  }
}

bool Device::lost() const {
  const std::lock_guard lock(state_->callbacks_mutex);
  return state_->lost;
}

WGPUBuffer Device::create_buffer(uint64_t size, WGPUFlags usage, std::string_view label, std::string_view op) {
  if (size > limits_.maxBufferSize)
    throw GpuError(GpuErrorKind::TooLarge, op,
                   "a buffer of " + std::to_string(size) + " bytes is above maxBufferSize (" +
                       std::to_string(limits_.maxBufferSize) + ") of " + adapter_.name);
  ErrorScope scope(*this, op);
  WGPUBufferDescriptor desc{};
  desc.label = view(label);
  desc.usage = usage;
  desc.size = size;
  WGPUBuffer buffer = fn().DeviceCreateBuffer(device_, &desc);
  try {
    scope.close();
  } catch (...) {
    if (buffer) fn().BufferRelease(buffer);
    throw;
  }
  return buffer;
}

uint64_t Device::submit(WGPUCommandBuffer commands, std::string_view op) {
  const auto& f = fn();
  const WGPUSubmissionIndex index = f.QueueSubmitForIndex(queue_, 1, &commands);
  f.CommandBufferRelease(commands);
  const uint64_t serial = ++state_->submitted;
  in_flight_.emplace_back(serial, index);
  f.QueueOnSubmittedWorkDone(queue_, {nullptr, WGPUCallbackMode_AllowProcessEvents, on_work_done, state_.get(),
                                      reinterpret_cast<void*>(uintptr_t(serial))});
  check(op);
  return serial;
}

uint64_t Device::last_submitted() const { return state_->submitted; }
uint64_t Device::last_completed() const { return state_->completed; }

void Device::drain() noexcept {
  if (device_ && !lost()) fn().DevicePoll(device_, 1, nullptr);
}

uint64_t Device::completed() {
  pump_events(false);
  const auto unfinished =
      std::find_if(in_flight_.begin(), in_flight_.end(), [&](const auto& entry) { return entry.first > state_->completed; });
  in_flight_.erase(in_flight_.begin(), unfinished);
  return state_->completed;
}

void Device::wait(uint64_t serial, std::string_view op) {
  const auto deadline = Clock::now() + kWaitLimit;
  while (completed() < serial) {
    check(op);
    if (Clock::now() > deadline)
      throw GpuError(GpuErrorKind::Timeout, op, "submission " + std::to_string(serial) + " did not finish in 300 s");
    const auto pending =
        std::find_if(in_flight_.begin(), in_flight_.end(), [&](const auto& entry) { return entry.first >= serial; });
    fn().DevicePoll(device_, 1, pending == in_flight_.end() ? nullptr : &pending->second);
  }
  check(op);
}

// ---- ErrorScope ------------------------------------------------------------------------------

Device::ErrorScope::ErrorScope(Device& device, std::string_view op) : device_(device), op_(op) {
  for (WGPUErrorFilter filter : kScopeFilters) device_.fn().DevicePushErrorScope(device_.device_, filter);
}

Device::ErrorScope::~ErrorScope() {
  if (!open_) return;
  try {
    close();
  } catch (const std::exception&) {
    // Already unwinding from another error, which explains more than this one.
  }
}

void Device::ErrorScope::close() {
  open_ = false;
  PopResult results[std::size(kScopeFilters)];
  for (PopResult& r : results)  // pops the innermost scope (OutOfMemory) first
    device_.fn().DevicePopErrorScope(device_.device_,
                                     {nullptr, WGPUCallbackMode_AllowProcessEvents, on_pop_error_scope, &r, nullptr});
  for (PopResult& r : results) device_.wait_for_callback(r.done, op_);
  // Validation (popped last) explains most failures; report it before the others.
  for (auto r = std::rbegin(results); r != std::rend(results); ++r)
    if (r->type != WGPUErrorType_NoError) throw GpuError(kind_of(r->type), op_, r->message);
}

}  // namespace wgml::gpu
