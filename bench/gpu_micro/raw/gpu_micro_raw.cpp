// gpu_micro_raw: the program that compared WebGPU implementations (docs/webgpu-implementations.md)
// by calling each one's C API directly, without wgml's device layer. It stays outside the CMake
// build: Dawn and wgpu-native speak different versions of webgpu.h, and wgml's layer (src/gpu)
// declares and loads only wgpu-native's. bench/gpu_micro/gpu_micro.cpp measures through the layer.
//
// Build from the repository root (headers: fetch with tools/webgpu/fetch_webgpu.sh --dawn first).
// One source, compiled once per implementation (see dawn_subset.h for the differences):
//
//   Dawn (npm bun-webgpu-linux-x64, declarations from bench/gpu_micro/raw/dawn_subset.h):
//     g++ -O2 -std=c++20 -DWGML_IMPL_DAWN -Isrc -Ibench/gpu_micro/raw -o gpu_micro_dawn bench/gpu_micro/raw/gpu_micro_raw.cpp
//     -ldl
//   wgpu-native (PyPI wgpu, declarations from the headers in its wheel):
//     g++ -O2 -std=c++20 -DWGML_IMPL_WGPU -Isrc -I.cache/webgpu/wgpu-native-py0.32.0/wgpu/resources -o gpu_micro_wgpu
//     bench/gpu_micro/raw/gpu_micro_raw.cpp -ldl
//
// Run:
//   gpu_micro_dawn --lib .cache/webgpu/dawn-0.1.7/package/libwebgpu_wrapper.so [options]
//   (or set WGML_WEBGPU_LIBRARY). Options, all optional:
//     --copy-mib N        copy-kernel buffer size in MiB (default 1024; clamped to the
//                         adapter's maxStorageBufferBindingSize / maxBufferSize)
//     --copy-reps N       copy dispatches per timed batch (default 10)
//     --runs N            timed batches per measurement; the best is reported (default 5)
//     --dispatches N      tiny dispatches per batch (default 2000)
//     --fma-workgroups N  workgroups of 256 threads for the FMA kernel (default 8192)
//     --fma-iters N       loop trips of the FMA kernel; 128 flop per thread per trip (default 1024)
//
// Prints one JSON object on stdout; diagnostics go to stderr. Exits non-zero on any failure,
// including when the adapter is Dawn's Null backend (no real device).
//
// Timing: wall clock around Submit .. queue-work-done for a batch of repeats, best of --runs,
// after one warm-up batch. Copy bandwidth counts bytes read + bytes written.

#include <dlfcn.h>

#include "backend/webgpu/roofline_wgsl.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#if defined(WGML_IMPL_DAWN)
#include "dawn_subset.h"
static const char* const kImplName = "dawn";
#elif defined(WGML_IMPL_WGPU)
#include "webgpu.h"
#include "wgpu.h"
static const char* const kImplName = "wgpu-native";
#else
#error "define WGML_IMPL_DAWN or WGML_IMPL_WGPU"
#endif

namespace {

// ---------------------------------------------------------------------------------------
// Function table: every entry point is resolved from the loaded library by name.
// ---------------------------------------------------------------------------------------
// clang-format does not settle on one layout of these lists.
// clang-format off
#define WGML_COMMON_FUNCS(X)               \
  X(CreateInstance)                        \
  X(InstanceRequestAdapter)                \
  X(InstanceWaitAny)                       \
  X(InstanceProcessEvents)                 \
  X(InstanceRelease)                       \
  X(AdapterGetInfo)                        \
  X(AdapterInfoFreeMembers)                \
  X(AdapterGetLimits)                      \
  X(AdapterGetFeatures)                    \
  X(AdapterHasFeature)                     \
  X(SupportedFeaturesFreeMembers)          \
  X(AdapterRequestDevice)                  \
  X(AdapterRelease)                        \
  X(DeviceGetQueue)                        \
  X(DeviceCreateBuffer)                    \
  X(DeviceCreateShaderModule)              \
  X(DeviceCreateComputePipeline)           \
  X(ComputePipelineGetBindGroupLayout)     \
  X(DeviceCreateBindGroup)                 \
  X(DeviceCreateCommandEncoder)            \
  X(DeviceDestroy)                         \
  X(DeviceRelease)                         \
  X(CommandEncoderBeginComputePass)        \
  X(CommandEncoderCopyBufferToBuffer)      \
  X(CommandEncoderFinish)                  \
  X(CommandEncoderRelease)                 \
  X(CommandBufferRelease)                  \
  X(ComputePassEncoderSetPipeline)         \
  X(ComputePassEncoderSetBindGroup)        \
  X(ComputePassEncoderDispatchWorkgroups)  \
  X(ComputePassEncoderEnd)                 \
  X(ComputePassEncoderRelease)             \
  X(QueueSubmit)                           \
  X(QueueWriteBuffer)                      \
  X(QueueOnSubmittedWorkDone)              \
  X(QueueRelease)                          \
  X(BufferMapAsync)                        \
  X(BufferGetConstMappedRange)             \
  X(BufferUnmap)                           \
  X(BufferDestroy)                         \
  X(BufferRelease)                         \
  X(ShaderModuleRelease)                   \
  X(ComputePipelineRelease)                \
  X(BindGroupRelease)                      \
  X(BindGroupLayoutRelease)
// clang-format on

#if defined(WGML_IMPL_WGPU)
#define WGML_IMPL_FUNCS(X) X(DevicePoll) X(GetVersion)
#else
#define WGML_IMPL_FUNCS(X)
#endif

struct Api {
#define WGML_DECLARE_PTR(name) decltype(&::wgpu##name) name = nullptr;
  WGML_COMMON_FUNCS(WGML_DECLARE_PTR)
  WGML_IMPL_FUNCS(WGML_DECLARE_PTR)
#undef WGML_DECLARE_PTR
};

Api g;
WGPUInstance g_instance = nullptr;
WGPUDevice g_device = nullptr;
int g_error_count = 0;

[[noreturn]] void die(const char* fmt, ...) {
  std::va_list ap;
  va_start(ap, fmt);
  std::fprintf(stderr, "gpu_micro: ");
  std::vfprintf(stderr, fmt, ap);
  std::fprintf(stderr, "\n");
  va_end(ap);
  std::exit(1);
}

WGPUStringView sv(const char* s) { return WGPUStringView{s, WGPU_STRLEN}; }

std::string str(WGPUStringView v) {
  if (!v.data) return {};
  if (v.length == WGPU_STRLEN) return std::string(v.data);
  return std::string(v.data, v.length);
}

void load_library(const char* path) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) die("dlopen(%s) failed: %s", path, dlerror());
  using ProcLookup = void (*(*)(WGPUStringView))();
  auto lookup = reinterpret_cast<ProcLookup>(dlsym(lib, "wgpuGetProcAddress"));
  auto resolve = [&](const char* name) -> void* {
    void* p = dlsym(lib, name);
    if (!p && lookup) p = reinterpret_cast<void*>(lookup(sv(name)));
    if (!p) die("%s: missing entry point %s", path, name);
    return p;
  };
#define WGML_RESOLVE(name) g.name = reinterpret_cast<decltype(g.name)>(resolve("wgpu" #name));
  WGML_COMMON_FUNCS(WGML_RESOLVE)
  WGML_IMPL_FUNCS(WGML_RESOLVE)
#undef WGML_RESOLVE
}

double now_s() {
  using clk = std::chrono::steady_clock;
  return std::chrono::duration<double>(clk::now().time_since_epoch()).count();
}

// ---------------------------------------------------------------------------------------
// Waiting for futures. Dawn: instance created with timed WaitAny, callbacks WaitAnyOnly.
// wgpu-native: callbacks AllowProcessEvents, driven by wgpuDevicePoll(wait) + ProcessEvents.
// ---------------------------------------------------------------------------------------
#if defined(WGML_IMPL_DAWN)
constexpr WGPUCallbackMode kMode = WGPUCallbackMode_WaitAnyOnly;
#else
constexpr WGPUCallbackMode kMode = WGPUCallbackMode_AllowProcessEvents;
#endif

void wait_future(WGPUFuture f, const bool& done, const char* what) {
#if defined(WGML_IMPL_DAWN)
  WGPUFutureWaitInfo info{f, 0};
  WGPUWaitStatus st = g.InstanceWaitAny(g_instance, 1, &info, UINT64_MAX);
  if (st != WGPUWaitStatus_Success || !done)
    die("waiting for %s failed (wait status %d, completed %d, callback seen %d)", what, int(st), int(info.completed), int(done));
#else
  (void)f;
  const double deadline = now_s() + 300.0;
  while (!done) {
    if (g_device) g.DevicePoll(g_device, 1, nullptr);
    g.InstanceProcessEvents(g_instance);
    if (now_s() > deadline) die("timed out waiting for %s", what);
  }
#endif
}

void on_work_done(WGPUQueueWorkDoneStatus status, WGPUStringView, void* ud1, void*) {
  if (status != WGPUQueueWorkDoneStatus_Success) die("queue work done status %d", int(status));
  *static_cast<bool*>(ud1) = true;
}

void wait_queue(WGPUQueue queue) {
  bool done = false;
  WGPUQueueWorkDoneCallbackInfo cb{};
  cb.mode = kMode;
  cb.callback = on_work_done;
  cb.userdata1 = &done;
  wait_future(g.QueueOnSubmittedWorkDone(queue, cb), done, "queue work done");
}

// ---------------------------------------------------------------------------------------
// Setup
// ---------------------------------------------------------------------------------------
struct Setup {
  WGPUAdapter adapter = nullptr;
  WGPUDevice device = nullptr;
  WGPUQueue queue = nullptr;
  WGPULimits limits{};
  std::vector<WGPUFeatureName> features;
  std::string vendor, architecture, device_name, description;
  WGPUBackendType backend{};
  WGPUAdapterType adapter_type{};
  uint32_t vendor_id = 0, device_id = 0, subgroup_min = 0, subgroup_max = 0;
};

const char* backend_name(WGPUBackendType b) {
  switch (b) {
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
      return "Undefined";
  }
}

const char* adapter_type_name(WGPUAdapterType t) {
  switch (t) {
    case WGPUAdapterType_DiscreteGPU:
      return "DiscreteGPU";
    case WGPUAdapterType_IntegratedGPU:
      return "IntegratedGPU";
    case WGPUAdapterType_CPU:
      return "CPU";
    default:
      return "Unknown";
  }
}

// Feature ids this program knows by name (values differ between the two headers).
struct NamedFeature {
  uint32_t id;
  const char* name;
};
const NamedFeature kNamedFeatures[] = {
    {uint32_t(WGPUFeatureName_TimestampQuery), "timestamp-query"},
    {uint32_t(WGPUFeatureName_ShaderF16), "shader-f16"},
    {uint32_t(WGPUFeatureName_Subgroups), "subgroups"},
    {uint32_t(WGPUFeatureName_CoreFeaturesAndLimits), "core-features-and-limits"},
#if defined(WGML_IMPL_DAWN)
    {uint32_t(WGPUFeatureName_ChromiumExperimentalTimestampQueryInsidePasses),
     "chromium-experimental-timestamp-query-inside-passes"},
    {uint32_t(WGPUFeatureName_SubgroupsF16), "subgroups-f16"},
    {uint32_t(WGPUFeatureName_ChromiumExperimentalSubgroupMatrix), "chromium-experimental-subgroup-matrix"},
#else
    {uint32_t(WGPUNativeFeature_Subgroup), "native:subgroup"},
    {uint32_t(WGPUNativeFeature_SubgroupBarrier), "native:subgroup-barrier"},
    {uint32_t(WGPUNativeFeature_TimestampQueryInsideEncoders), "native:timestamp-query-inside-encoders"},
    {uint32_t(WGPUNativeFeature_TimestampQueryInsidePasses), "native:timestamp-query-inside-passes"},
    {uint32_t(WGPUNativeFeature_CooperativeMatrix), "native:cooperative-matrix"},
    {uint32_t(WGPUNativeFeature_ShaderInt64), "native:shader-int64"},
    {uint32_t(WGPUNativeFeature_ShaderI16), "native:shader-i16"},
    {uint32_t(WGPUNativeFeature_ShaderF64), "native:shader-f64"},
    {uint32_t(WGPUNativeFeature_Immediates), "native:immediates"},
    {uint32_t(WGPUNativeFeature_MappablePrimaryBuffers), "native:mappable-primary-buffers"},
    {uint32_t(WGPUNativeFeature_PipelineCache), "native:pipeline-cache"},
    {uint32_t(WGPUNativeFeature_ShaderFloat32Atomic), "native:shader-float32-atomic"},
#endif
};

bool has_feature(const Setup& s, uint32_t id) {
  for (auto f : s.features)
    if (uint32_t(f) == id) return true;
  return false;
}

// Subgroup-matrix style feature of each implementation (0 when none exists in the header).
uint32_t subgroup_matrix_feature_id() {
#if defined(WGML_IMPL_DAWN)
  return uint32_t(WGPUFeatureName_ChromiumExperimentalSubgroupMatrix);
#else
  return uint32_t(WGPUNativeFeature_CooperativeMatrix);
#endif
}

void on_adapter(WGPURequestAdapterStatus status, WGPUAdapter adapter, WGPUStringView message, void* ud1, void* ud2) {
  if (status != WGPURequestAdapterStatus_Success) die("requestAdapter failed (status %d): %s", int(status), str(message).c_str());
  *static_cast<WGPUAdapter*>(ud1) = adapter;
  *static_cast<bool*>(ud2) = true;
}

void on_device(WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView message, void* ud1, void* ud2) {
  if (status != WGPURequestDeviceStatus_Success) die("requestDevice failed (status %d): %s", int(status), str(message).c_str());
  *static_cast<WGPUDevice*>(ud1) = device;
  *static_cast<bool*>(ud2) = true;
}

void on_device_lost(const WGPUDevice*, WGPUDeviceLostReason reason, WGPUStringView message, void*, void*) {
  if (reason == WGPUDeviceLostReason_Destroyed || reason == WGPUDeviceLostReason_CallbackCancelled) return;
  std::fprintf(stderr, "gpu_micro: device lost (reason %d): %s\n", int(reason), str(message).c_str());
}

void on_error(const WGPUDevice*, WGPUErrorType type, WGPUStringView message, void*, void*) {
  ++g_error_count;
  std::fprintf(stderr, "gpu_micro: WebGPU error (type %d): %s\n", int(type), str(message).c_str());
}

Setup setup() {
  Setup s;

  WGPUInstanceDescriptor idesc{};
#if defined(WGML_IMPL_DAWN)
  idesc.capabilities.timedWaitAnyEnable = 1;  // lets WaitAny block with a timeout
#else
  WGPUInstanceExtras extras{};
  extras.chain.sType = static_cast<WGPUSType>(WGPUSType_InstanceExtras);
  extras.backends = WGPUInstanceBackend_Vulkan;
  idesc.nextInChain = &extras.chain;
#endif
  g_instance = g.CreateInstance(&idesc);
  if (!g_instance) die("wgpuCreateInstance returned NULL");

  WGPURequestAdapterOptions opts{};
  opts.featureLevel = WGPUFeatureLevel_Core;
  opts.powerPreference = WGPUPowerPreference_HighPerformance;
  opts.backendType = WGPUBackendType_Vulkan;
  bool got = false;
  WGPURequestAdapterCallbackInfo acb{};
  acb.mode = kMode;
  acb.callback = on_adapter;
  acb.userdata1 = &s.adapter;
  acb.userdata2 = &got;
  wait_future(g.InstanceRequestAdapter(g_instance, &opts, acb), got, "adapter");

  WGPUAdapterInfo info{};
  if (g.AdapterGetInfo(s.adapter, &info) != WGPUStatus_Success) die("wgpuAdapterGetInfo failed");
  s.vendor = str(info.vendor);
  s.architecture = str(info.architecture);
  s.device_name = str(info.device);
  s.description = str(info.description);
  s.backend = info.backendType;
  s.adapter_type = info.adapterType;
  s.vendor_id = info.vendorID;
  s.device_id = info.deviceID;
  s.subgroup_min = info.subgroupMinSize;
  s.subgroup_max = info.subgroupMaxSize;
  g.AdapterInfoFreeMembers(info);
  if (s.backend == WGPUBackendType_Null || s.backend == WGPUBackendType_Undefined)
    die("adapter '%s' has backend %s: no real device (is a Vulkan driver installed?)", s.device_name.c_str(),
        backend_name(s.backend));

  if (g.AdapterGetLimits(s.adapter, &s.limits) != WGPUStatus_Success) die("wgpuAdapterGetLimits failed");
  WGPUSupportedFeatures sf{};
  g.AdapterGetFeatures(s.adapter, &sf);
  s.features.assign(sf.features, sf.features + sf.featureCount);
  g.SupportedFeaturesFreeMembers(sf);

  // Device: all of the adapter's limits (the copy buffer needs more than the defaults),
  // plus shader-f16 when offered so that the f16 compile check below can run.
  std::vector<WGPUFeatureName> want;
  if (has_feature(s, uint32_t(WGPUFeatureName_ShaderF16))) want.push_back(WGPUFeatureName_ShaderF16);
  WGPULimits req = s.limits;
  req.nextInChain = nullptr;
  WGPUDeviceDescriptor ddesc{};
  ddesc.label = sv("gpu_micro");
  ddesc.requiredFeatureCount = want.size();
  ddesc.requiredFeatures = want.data();
  ddesc.requiredLimits = &req;
  ddesc.defaultQueue.label = sv("gpu_micro queue");
  ddesc.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowSpontaneous;
  ddesc.deviceLostCallbackInfo.callback = on_device_lost;
  ddesc.uncapturedErrorCallbackInfo.callback = on_error;
  bool dgot = false;
  WGPURequestDeviceCallbackInfo dcb{};
  dcb.mode = kMode;
  dcb.callback = on_device;
  dcb.userdata1 = &s.device;
  dcb.userdata2 = &dgot;
  wait_future(g.AdapterRequestDevice(s.adapter, &ddesc, dcb), dgot, "device");
  g_device = s.device;
  s.queue = g.DeviceGetQueue(s.device);
  return s;
}

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------
WGPUBuffer make_buffer(const Setup& s, uint64_t size, WGPUBufferUsage usage, const char* label) {
  WGPUBufferDescriptor d{};
  d.label = sv(label);
  d.usage = usage;
  d.size = size;
  WGPUBuffer b = g.DeviceCreateBuffer(s.device, &d);
  if (!b) die("createBuffer(%s, %" PRIu64 " bytes) failed", label, size);
  return b;
}

WGPUComputePipeline make_pipeline(const Setup& s, const char* wgsl, const char* label) {
  WGPUShaderSourceWGSL src{};
  src.chain.sType = WGPUSType_ShaderSourceWGSL;
  src.code = sv(wgsl);
  WGPUShaderModuleDescriptor md{};
  md.nextInChain = &src.chain;
  md.label = sv(label);
  WGPUShaderModule mod = g.DeviceCreateShaderModule(s.device, &md);
  if (!mod) die("createShaderModule(%s) failed", label);
  WGPUComputePipelineDescriptor pd{};
  pd.label = sv(label);
  pd.compute.module = mod;
  pd.compute.entryPoint = sv("main");
  WGPUComputePipeline p = g.DeviceCreateComputePipeline(s.device, &pd);
  g.ShaderModuleRelease(mod);
  if (!p) die("createComputePipeline(%s) failed", label);
  return p;
}

struct Binding {
  WGPUBuffer buffer;
  uint64_t size;
};

WGPUBindGroup make_bind_group(const Setup& s, WGPUComputePipeline p, std::vector<Binding> bs) {
  std::vector<WGPUBindGroupEntry> es(bs.size());
  for (size_t i = 0; i < bs.size(); ++i) {
    es[i] = WGPUBindGroupEntry{};
    es[i].binding = uint32_t(i);
    es[i].buffer = bs[i].buffer;
    es[i].offset = 0;
    es[i].size = bs[i].size;
  }
  WGPUBindGroupLayout layout = g.ComputePipelineGetBindGroupLayout(p, 0);
  WGPUBindGroupDescriptor d{};
  d.layout = layout;
  d.entryCount = es.size();
  d.entries = es.data();
  WGPUBindGroup bg = g.DeviceCreateBindGroup(s.device, &d);
  g.BindGroupLayoutRelease(layout);
  if (!bg) die("createBindGroup failed");
  return bg;
}

void on_mapped(WGPUMapAsyncStatus status, WGPUStringView message, void* ud1, void*) {
  if (status != WGPUMapAsyncStatus_Success) die("mapAsync failed (%d): %s", int(status), str(message).c_str());
  *static_cast<bool*>(ud1) = true;
}

std::vector<uint8_t> read_back(const Setup& s, WGPUBuffer src, uint64_t offset, uint64_t size) {
  WGPUBuffer rb = make_buffer(s, size, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, "readback");
  WGPUCommandEncoder enc = g.DeviceCreateCommandEncoder(s.device, nullptr);
  g.CommandEncoderCopyBufferToBuffer(enc, src, offset, rb, 0, size);
  WGPUCommandBuffer cmd = g.CommandEncoderFinish(enc, nullptr);
  g.QueueSubmit(s.queue, 1, &cmd);
  g.CommandBufferRelease(cmd);
  g.CommandEncoderRelease(enc);
  bool mapped = false;
  WGPUBufferMapCallbackInfo cb{};
  cb.mode = kMode;
  cb.callback = on_mapped;
  cb.userdata1 = &mapped;
  wait_future(g.BufferMapAsync(rb, WGPUMapMode_Read, 0, size, cb), mapped, "mapAsync");
  auto p = static_cast<const uint8_t*>(g.BufferGetConstMappedRange(rb, 0, size));
  if (!p) die("getConstMappedRange failed");
  std::vector<uint8_t> out(p, p + size);
  g.BufferUnmap(rb);
  g.BufferRelease(rb);
  return out;
}

// One timed batch: encode (record) on the CPU, then submit and wait for the queue.
struct BatchTime {
  double encode_s, gpu_s;
};

template <class Record>
BatchTime run_batch(const Setup& s, Record record) {
  const double t0 = now_s();
  WGPUCommandEncoder enc = g.DeviceCreateCommandEncoder(s.device, nullptr);
  record(enc);
  WGPUCommandBuffer cmd = g.CommandEncoderFinish(enc, nullptr);
  const double t1 = now_s();
  g.QueueSubmit(s.queue, 1, &cmd);
  wait_queue(s.queue);
  const double t2 = now_s();
  g.CommandBufferRelease(cmd);
  g.CommandEncoderRelease(enc);
  return {t1 - t0, t2 - t1};
}

// Records `n` dispatches of one pipeline in a single compute pass.
auto one_pass(WGPUComputePipeline p, WGPUBindGroup bg, uint32_t n, uint32_t x, uint32_t y) {
  return [=](WGPUCommandEncoder enc) {
    WGPUComputePassEncoder pass = g.CommandEncoderBeginComputePass(enc, nullptr);
    g.ComputePassEncoderSetPipeline(pass, p);
    g.ComputePassEncoderSetBindGroup(pass, 0, bg, 0, nullptr);
    for (uint32_t i = 0; i < n; ++i) g.ComputePassEncoderDispatchWorkgroups(pass, x, y, 1);
    g.ComputePassEncoderEnd(pass);
    g.ComputePassEncoderRelease(pass);
  };
}

// ---------------------------------------------------------------------------------------
// Kernels (the copy and the FMA kernel are the rooflines' own: src/backend/webgpu/roofline_wgsl.h)
// ---------------------------------------------------------------------------------------
using wgml::backend::webgpu::kCopyWgsl;
using wgml::backend::webgpu::kFmaWgsl;

const char* const kTinyWgsl = R"(
@group(0) @binding(0) var<storage, read_write> counter : array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lid : u32) {
  if (lid == 0u) {
    counter[0] = counter[0] + 1u;
  }
}
)";

const char* const kF16Wgsl = R"(
enable f16;
@group(0) @binding(0) var<storage, read_write> data : array<vec2<f16>>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid : vec3<u32>) {
  data[gid.x] = data[gid.x] * vec2<f16>(2.0h, 0.5h);
}
)";

// ---------------------------------------------------------------------------------------
// Measurements
// ---------------------------------------------------------------------------------------
struct Options {
  const char* lib = nullptr;
  uint64_t copy_mib = 1024;
  uint32_t copy_reps = 10;
  uint32_t runs = 5;
  uint32_t dispatches = 2000;
  uint32_t fma_workgroups = 8192;
  uint32_t fma_iters = 1024;
};

struct CopyResult {
  uint64_t bytes = 0;
  double best_s = 0, gbps = 0;
  bool verified = false;
};

CopyResult measure_copy(const Setup& s, const Options& o) {
  CopyResult r;
  uint64_t n = o.copy_mib << 20;
  n = std::min<uint64_t>(n, s.limits.maxStorageBufferBindingSize);
  n = std::min<uint64_t>(n, s.limits.maxBufferSize);
  n = n / 4096 * 4096;  // whole workgroups of 256 vec4
  if (n == 0) die("copy buffer size rounds to 0");
  r.bytes = n;
  const uint64_t groups = n / 4096;
  const uint32_t maxdim = s.limits.maxComputeWorkgroupsPerDimension;
  const uint32_t gx = uint32_t(std::min<uint64_t>(groups, maxdim));
  const uint32_t gy = uint32_t((groups + gx - 1) / gx);

  auto usage = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
  WGPUBuffer src = make_buffer(s, n, usage, "copy src");
  WGPUBuffer dst = make_buffer(s, n, usage, "copy dst");
  // Known words at both ends of the source; the rest stays zero.
  const uint64_t probe = std::min<uint64_t>(n / 2, 65536);
  std::vector<uint32_t> head(probe / 4), tail(probe / 4);
  for (size_t i = 0; i < head.size(); ++i) {
    head[i] = 0x9E3779B9u * uint32_t(i + 1);
    tail[i] = 0x85EBCA6Bu * uint32_t(i + 7);
  }
  g.QueueWriteBuffer(s.queue, src, 0, head.data(), probe);
  g.QueueWriteBuffer(s.queue, src, n - probe, tail.data(), probe);

  WGPUComputePipeline p = make_pipeline(s, kCopyWgsl, "copy");
  WGPUBindGroup bg = make_bind_group(s, p, {{src, n}, {dst, n}});
  auto rec = one_pass(p, bg, o.copy_reps, gx, gy);
  run_batch(s, rec);  // warm-up
  r.best_s = 1e30;
  for (uint32_t i = 0; i < o.runs; ++i) r.best_s = std::min(r.best_s, run_batch(s, rec).gpu_s);
  r.gbps = 2.0 * double(n) * o.copy_reps / r.best_s / 1e9;

  auto h = read_back(s, dst, 0, probe);
  auto t = read_back(s, dst, n - probe, probe);
  const bool head_ok = std::memcmp(h.data(), head.data(), probe) == 0;
  const bool tail_ok = std::memcmp(t.data(), tail.data(), probe) == 0;
  r.verified = head_ok && tail_ok;
  if (!r.verified)
    std::fprintf(stderr, "gpu_micro: copy of %" PRIu64 " bytes wrong: first 64 KiB %s, last 64 KiB %s\n", n,
                 head_ok ? "ok" : "WRONG", tail_ok ? "ok" : "WRONG");
  g.BindGroupRelease(bg);
  g.ComputePipelineRelease(p);
  g.BufferDestroy(src);
  g.BufferDestroy(dst);
  g.BufferRelease(src);
  g.BufferRelease(dst);
  return r;
}

struct DispatchResult {
  double us_total = 0, us_encode = 0, us_gpu = 0, us_pass_each = 0;
  bool verified = false;
};

DispatchResult measure_dispatch(const Setup& s, const Options& o) {
  DispatchResult r;
  WGPUBuffer buf = make_buffer(s, 256, WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst, "counter");
  WGPUComputePipeline p = make_pipeline(s, kTinyWgsl, "tiny");
  WGPUBindGroup bg = make_bind_group(s, p, {{buf, 256}});
  const uint32_t n = o.dispatches;
  auto rec = one_pass(p, bg, n, 1, 1);
  // Same work, but one compute pass per dispatch.
  auto rec_each = [&](WGPUCommandEncoder enc) {
    for (uint32_t i = 0; i < n; ++i) one_pass(p, bg, 1, 1, 1)(enc);
  };
  uint64_t batches = 0;
  run_batch(s, rec);
  ++batches;
  double best_total = 1e30, best_enc = 1e30, best_gpu = 1e30, best_each = 1e30;
  for (uint32_t i = 0; i < o.runs; ++i) {
    BatchTime t = run_batch(s, rec);
    ++batches;
    best_total = std::min(best_total, t.encode_s + t.gpu_s);
    best_enc = std::min(best_enc, t.encode_s);
    best_gpu = std::min(best_gpu, t.gpu_s);
  }
  for (uint32_t i = 0; i < o.runs; ++i) {
    BatchTime t = run_batch(s, rec_each);
    ++batches;
    best_each = std::min(best_each, t.encode_s + t.gpu_s);
  }
  r.us_total = best_total / n * 1e6;
  r.us_encode = best_enc / n * 1e6;
  r.us_gpu = best_gpu / n * 1e6;
  r.us_pass_each = best_each / n * 1e6;
  auto v = read_back(s, buf, 0, 4);
  uint32_t count;
  std::memcpy(&count, v.data(), 4);
  r.verified = uint64_t(count) == batches * n;
  if (!r.verified) std::fprintf(stderr, "gpu_micro: dispatch counter %u, expected %" PRIu64 "\n", count, batches * n);
  g.BindGroupRelease(bg);
  g.ComputePipelineRelease(p);
  g.BufferDestroy(buf);
  g.BufferRelease(buf);
  return r;
}

struct FmaResult {
  double flop = 0, best_s = 0, tflops = 0;
  bool verified = false;
};

FmaResult measure_fma(const Setup& s, const Options& o) {
  FmaResult r;
  const uint32_t wg = std::min(o.fma_workgroups, s.limits.maxComputeWorkgroupsPerDimension);
  const uint64_t threads = uint64_t(wg) * 256;
  WGPUBuffer out = make_buffer(s, threads * 16, WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc, "fma out");
  WGPUBuffer par = make_buffer(s, 16, WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst, "fma params");
  const uint32_t params[4] = {o.fma_iters, 0, 0, 0};
  g.QueueWriteBuffer(s.queue, par, 0, params, sizeof params);
  WGPUComputePipeline p = make_pipeline(s, kFmaWgsl, "fma");
  WGPUBindGroup bg = make_bind_group(s, p, {{out, threads * 16}, {par, 16}});
  auto rec = one_pass(p, bg, 1, wg, 1);
  run_batch(s, rec);
  r.best_s = 1e30;
  for (uint32_t i = 0; i < o.runs; ++i) r.best_s = std::min(r.best_s, run_batch(s, rec).gpu_s);
  r.flop = double(threads) * o.fma_iters * 128.0;
  r.tflops = r.flop / r.best_s / 1e12;

  // Check thread 0 against the same recurrence on the CPU (single-precision fma).
  auto v = read_back(s, out, 0, 16);
  float got[4];
  std::memcpy(got, v.data(), 16);
  const float m[4] = {0.9999f, 0.9998f, 0.9997f, 0.9996f}, k[4] = {1e-4f, 2e-4f, 3e-4f, 4e-4f};
  r.verified = true;
  for (int lane = 0; lane < 4; ++lane) {
    float ch[4] = {float(lane), float(lane) + 0.5f, float(lane) + 0.25f, float(lane) + 0.125f};
    for (uint32_t i = 0; i < o.fma_iters * 4; ++i)
      for (float& x : ch) x = std::fma(x, m[lane], k[lane]);
    const float want = ch[0] + ch[1] + ch[2] + ch[3];
    if (std::fabs(got[lane] - want) > 1e-3f * std::max(1.0f, std::fabs(want))) {
      r.verified = false;
      std::fprintf(stderr, "gpu_micro: fma lane %d got %g want %g\n", lane, got[lane], want);
    }
  }
  g.BindGroupRelease(bg);
  g.ComputePipelineRelease(p);
  g.BufferDestroy(out);
  g.BufferRelease(out);
  g.BufferDestroy(par);
  g.BufferRelease(par);
  return r;
}

// Compiles (and runs once) a tiny `enable f16;` kernel when the device has shader-f16.
const char* check_f16(const Setup& s) {
  if (!has_feature(s, uint32_t(WGPUFeatureName_ShaderF16))) return "not-offered";
  const int before = g_error_count;
  WGPUBuffer buf = make_buffer(s, 256, WGPUBufferUsage_Storage, "f16 data");
  WGPUComputePipeline p = make_pipeline(s, kF16Wgsl, "f16");
  WGPUBindGroup bg = make_bind_group(s, p, {{buf, 256}});
  run_batch(s, one_pass(p, bg, 1, 1, 1));
  g.BindGroupRelease(bg);
  g.ComputePipelineRelease(p);
  g.BufferDestroy(buf);
  g.BufferRelease(buf);
  return g_error_count == before ? "ok" : "failed";
}

// ---------------------------------------------------------------------------------------
// JSON output
// ---------------------------------------------------------------------------------------
std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (uint8_t(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else
      o += c;
  }
  return o + "\"";
}

uint32_t parse_u32(const char* v) { return uint32_t(std::strtoul(v, nullptr, 0)); }

}  // namespace

int main(int argc, char** argv) {
  Options o;
  o.lib = std::getenv("WGML_WEBGPU_LIBRARY");
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) die("%s needs a value", a.c_str());
      return argv[++i];
    };
    if (a == "--lib")
      o.lib = next();
    else if (a == "--copy-mib")
      o.copy_mib = std::strtoull(next(), nullptr, 0);
    else if (a == "--copy-reps")
      o.copy_reps = parse_u32(next());
    else if (a == "--runs")
      o.runs = parse_u32(next());
    else if (a == "--dispatches")
      o.dispatches = parse_u32(next());
    else if (a == "--fma-workgroups")
      o.fma_workgroups = parse_u32(next());
    else if (a == "--fma-iters")
      o.fma_iters = parse_u32(next());
    else
      die("unknown argument %s (see the comment at the top of gpu_micro_raw.cpp)", a.c_str());
  }
  if (!o.lib) die("give the webgpu library with --lib PATH or WGML_WEBGPU_LIBRARY");
  if (o.runs == 0 || o.copy_reps == 0 || o.dispatches == 0) die("counts must be positive");

  load_library(o.lib);
  Setup s = setup();
  std::fprintf(stderr, "gpu_micro: %s on '%s' (%s)\n", kImplName, s.device_name.c_str(), backend_name(s.backend));

  const char* f16 = check_f16(s);
  CopyResult copy = measure_copy(s, o);
  DispatchResult disp = measure_dispatch(s, o);
  FmaResult fma = measure_fma(s, o);

  std::string impl_version;
#if defined(WGML_IMPL_WGPU)
  {
    const uint32_t v = g.GetVersion();
    char b[32];
    std::snprintf(b, sizeof b, "%u.%u.%u.%u", v >> 24, (v >> 16) & 0xFF, (v >> 8) & 0xFF, v & 0xFF);
    impl_version = b;
  }
#endif

  auto yn = [](bool b) { return b ? "true" : "false"; };
  std::string feats;
  for (auto f : s.features) {
    const char* name = nullptr;
    for (const auto& nf : kNamedFeatures)
      if (nf.id == uint32_t(f)) name = nf.name;
    char b[96];
    if (name)
      std::snprintf(b, sizeof b, "%s\"%s\"", feats.empty() ? "" : ", ", name);
    else
      std::snprintf(b, sizeof b, "%s\"0x%08x\"", feats.empty() ? "" : ", ", uint32_t(f));
    feats += b;
  }
  const uint32_t sgm = subgroup_matrix_feature_id();
  // wgpu-native offers subgroups as its own native feature, not the standard one.
  const bool sg_std = has_feature(s, uint32_t(WGPUFeatureName_Subgroups));
#if defined(WGML_IMPL_WGPU)
  const bool sg_native = has_feature(s, uint32_t(WGPUNativeFeature_Subgroup));
#else
  const bool sg_native = false;
#endif

  std::printf("{\n");
  std::printf("  \"implementation\": \"%s\",\n", kImplName);
  std::printf("  \"implementation_version\": %s,\n", json_str(impl_version).c_str());
  std::printf("  \"library\": %s,\n", json_str(o.lib).c_str());
  std::printf(
      "  \"adapter\": {\"device\": %s, \"vendor\": %s, \"architecture\": %s, "
      "\"description\": %s, \"backend\": \"%s\", \"adapter_type\": \"%s\", "
      "\"vendor_id\": %u, \"device_id\": %u, \"subgroup_min_size\": %u, "
      "\"subgroup_max_size\": %u},\n",
      json_str(s.device_name).c_str(), json_str(s.vendor).c_str(), json_str(s.architecture).c_str(),
      json_str(s.description).c_str(), backend_name(s.backend), adapter_type_name(s.adapter_type), s.vendor_id, s.device_id,
      s.subgroup_min, s.subgroup_max);
  std::printf("  \"limits\": {\"maxStorageBufferBindingSize\": %" PRIu64 ", \"maxBufferSize\": %" PRIu64
              ", \"maxComputeWorkgroupsPerDimension\": %u, \"maxComputeWorkgroupStorageSize\": %u, "
              "\"maxComputeInvocationsPerWorkgroup\": %u, \"maxStorageBuffersPerShaderStage\": %u},\n",
              s.limits.maxStorageBufferBindingSize, s.limits.maxBufferSize, s.limits.maxComputeWorkgroupsPerDimension,
              s.limits.maxComputeWorkgroupStorageSize, s.limits.maxComputeInvocationsPerWorkgroup,
              s.limits.maxStorageBuffersPerShaderStage);
  std::printf(
      "  \"features\": {\"shader-f16\": %s, \"subgroups\": %s, \"subgroups_via\": \"%s\", "
      "\"timestamp-query\": %s, "
      "\"subgroup-matrix\": %s, \"subgroup_matrix_feature\": \"%s\", \"shader_f16_kernel\": \"%s\", "
      "\"all\": [%s]},\n",
      yn(has_feature(s, uint32_t(WGPUFeatureName_ShaderF16))), yn(sg_std || sg_native),
      sg_std ? "standard" : (sg_native ? "native" : "none"), yn(has_feature(s, uint32_t(WGPUFeatureName_TimestampQuery))),
      yn(sgm && has_feature(s, sgm)),
#if defined(WGML_IMPL_DAWN)
      "chromium-experimental-subgroup-matrix",
#else
      "native:cooperative-matrix",
#endif
      f16, feats.c_str());
  std::printf("  \"copy\": {\"bytes\": %" PRIu64
              ", \"reps_per_batch\": %u, \"runs\": %u, "
              "\"best_ms_per_copy\": %.4f, \"gb_per_s_read_plus_write\": %.1f, \"verified\": %s},\n",
              copy.bytes, o.copy_reps, o.runs, copy.best_s / o.copy_reps * 1e3, copy.gbps, yn(copy.verified));
  std::printf(
      "  \"dispatch\": {\"dispatches_per_batch\": %u, \"runs\": %u, "
      "\"us_per_dispatch_one_pass\": %.3f, \"us_encode_per_dispatch\": %.3f, "
      "\"us_submit_to_done_per_dispatch\": %.3f, \"us_per_dispatch_pass_each\": %.3f, "
      "\"verified\": %s},\n",
      o.dispatches, o.runs, disp.us_total, disp.us_encode, disp.us_gpu, disp.us_pass_each, yn(disp.verified));
  std::printf(
      "  \"fma\": {\"workgroups\": %u, \"iters\": %u, \"flop\": %.4g, \"best_ms\": %.4f, "
      "\"tflop_per_s\": %.2f, \"verified\": %s},\n",
      std::min(o.fma_workgroups, s.limits.maxComputeWorkgroupsPerDimension), o.fma_iters, fma.flop, fma.best_s * 1e3, fma.tflops,
      yn(fma.verified));
  std::printf("  \"webgpu_errors\": %d\n}\n", g_error_count);
  std::fflush(stdout);

  g.QueueRelease(s.queue);
  g.DeviceDestroy(s.device);
  g.DeviceRelease(s.device);
  g.AdapterRelease(s.adapter);
  g.InstanceRelease(g_instance);
  const bool ok = copy.verified && disp.verified && fma.verified && g_error_count == 0;
  return ok ? 0 : 2;
}
