#pragma once
// The WebGPU adapter and device: choosing the adapter, requesting its limits and the features
// that help, turning the implementation's errors into GpuErrors, and tracking submissions so
// that other parts know when the GPU has finished with a piece of work.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/webgpu_api.h"
#include "gpu/webgpu_library.h"

namespace wgml::gpu {

enum class AdapterKind { DiscreteGpu, IntegratedGpu, Cpu, Other };
const char* adapter_kind_name(AdapterKind kind);

struct AdapterDescription {
  size_t index = 0;  // position in the implementation's enumeration
  std::string name;  // "NVIDIA H200", "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string vendor;
  std::string driver;   // the implementation's description: driver version, Mesa version
  std::string backend;  // "Vulkan", "Metal", ...
  AdapterKind kind = AdapterKind::Other;
  bool real_device = false;     // false for null or unknown backends, which wgml refuses
  std::string summary() const;  // "#0 NVIDIA H200 (discrete GPU, Vulkan, 580.159.04)"
};

struct DeviceFeatures {
  bool timestamp_query = false;
  bool timestamps_inside_passes = false;  // wgpu-native: timestamps between dispatches
  bool shader_f16 = false;
  bool subgroups = false;
};

struct DeviceOptions {
  // Which adapter: empty for the best (discrete GPU, then integrated, then CPU), a number for the
  // adapter at that index of list_adapters(), otherwise a case-insensitive part of its name.
  std::string adapter;
  bool timestamps = true;  // request timestamp queries where offered (needed for profiling)
};

// Every adapter the implementation offers, usable or not, in its order.
std::vector<AdapterDescription> list_adapters();

// Picks from `adapters` as DeviceOptions::adapter describes; throws GpuError (NoAdapter or
// BadSelection) naming what was available.
size_t choose_adapter(const std::vector<AdapterDescription>& adapters, std::string_view selector);

class Device {
 public:
  explicit Device(const DeviceOptions& options = {});
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const api::Functions& fn() const { return library_->fn; }
  const WebGpuLibrary& library() const { return *library_; }
  const AdapterDescription& adapter() const { return adapter_; }
  const WGPULimits& limits() const { return limits_; }
  const DeviceFeatures& features() const { return features_; }
  WGPUDevice handle() const { return device_; }
  WGPUQueue queue() const { return queue_; }
  double timestamp_period_ns() const;

  // Creates a buffer, checking the size against the device's limits first. Throws GpuError
  // (TooLarge, OutOfMemory, Validation) naming `op`.
  WGPUBuffer create_buffer(uint64_t size, WGPUFlags usage, std::string_view label, std::string_view op);

  // Throws the error the device reported outside any error scope, or DeviceLost, naming `op`.
  void check(std::string_view op);
  // Whether the implementation reported the device lost: nothing can run on it any more.
  bool lost() const;

  // Submits one command buffer (releasing it) and returns the submission's serial number.
  // Serials start at 1 and increase by one per submission.
  uint64_t submit(WGPUCommandBuffer commands, std::string_view op);
  uint64_t last_submitted() const;
  // The last serial whose work the GPU has finished: as last known, or after polling (which
  // does not block).
  uint64_t last_completed() const;
  uint64_t completed();
  // Blocks until submission `serial` is finished, then checks for errors.
  void wait(uint64_t serial, std::string_view op);
  void wait_idle(std::string_view op) { wait(last_submitted(), op); }
  // Waits for all submitted work and reports nothing: for destructors, which must not throw.
  void drain() noexcept;

  // A recorder tells the device while it holds commands not yet submitted, so that work_fence()
  // covers them: a buffer released now is free once submission work_fence() has finished.
  void set_unsubmitted_work(bool pending) { unsubmitted_work_.store(pending); }
  uint64_t work_fence() const { return last_submitted() + (unsubmitted_work_ ? 1 : 0); }

  // Drives the implementation's callbacks until `done` is set (by a callback). Throws Timeout or
  // DeviceLost naming `op`.
  void wait_for_callback(const bool& done, std::string_view op);

  // Collects the errors of everything done between construction and close(), which throws the
  // first as a GpuError naming `op`. Scopes nest. If close() is never reached (an exception),
  // the destructor pops the scopes and drops their errors.
  class ErrorScope {
   public:
    // `op` names the work in errors; the caller keeps it alive while the scope is open.
    ErrorScope(Device& device, std::string_view op);
    ~ErrorScope();
    ErrorScope(const ErrorScope&) = delete;
    ErrorScope& operator=(const ErrorScope&) = delete;
    void close();

   private:
    Device& device_;
    std::string_view op_;
    bool open_ = true;
  };

  struct State;  // what the implementation's callbacks write into

 private:
  void create_instance();
  void open_adapter(const DeviceOptions& options);
  void open_device(const DeviceOptions& options);
  std::vector<WGPUFeatureName> wanted_features(const DeviceOptions& options);
  void pump_events(bool block);
  void release() noexcept;

  const WebGpuLibrary* library_;
  std::unique_ptr<State> state_;
  WGPUInstance instance_ = nullptr;
  WGPUAdapter adapter_handle_ = nullptr;
  WGPUDevice device_ = nullptr;
  WGPUQueue queue_ = nullptr;
  AdapterDescription adapter_;
  WGPULimits limits_{};
  DeviceFeatures features_;
  // Atomic, as State::submitted: read by work_fence() on the thread that frees a buffer.
  std::atomic<bool> unsubmitted_work_ = false;
  // Submissions not yet known to be finished, with the implementation's index for DevicePoll, in
  // submission order (a vector: a few entries, whose capacity the first steps set).
  std::vector<std::pair<uint64_t, WGPUSubmissionIndex>> in_flight_;
};

// Rounds `value` up to a multiple of `alignment` (a power of two or any positive number).
constexpr uint64_t align_up(uint64_t value, uint64_t alignment) { return (value + alignment - 1) / alignment * alignment; }

}  // namespace wgml::gpu
