#pragma once
// wgml's declarations of the part of the WebGPU C API (webgpu.h plus wgpu-native's wgpu.h) that
// the device layer calls. The library is opened at run time (webgpu_library.h), so nothing here
// is linked: these are layouts, values and function signatures only.
//
// The binary interface is that of wgpu-native 29 as shipped in the PyPI wheel `wgpu` 0.32.0. The
// facts that matter, and that tests/gpu/webgpu_abi_test.cpp checks against the wheel's headers:
//  * strings are {data, length} views; a length of kNullTerminated means "up to the NUL".
//  * flags are 64-bit, booleans 32-bit, enums 32-bit.
//  * callback-info structs are {next, mode, callback, userdata1, userdata2}; every callback gets
//    a message view.
//  * wgpu-native's own additions (features from 0x30000, InstanceExtras, DevicePoll,
//    QueueSubmitForIndex, timestamps inside passes) follow the standard ones.
// Only the fields wgml sets or reads have meaningful names; structs whose members wgml never
// touches are declared with their size only, so that zero-initialising them means "unused".
#include <cstddef>
#include <cstdint>

namespace wgml::gpu::api {

using Flags = uint64_t;
using Bool = uint32_t;

struct StringView {
  const char* data;
  size_t length;
};
inline constexpr size_t kNullTerminated = SIZE_MAX;

// Object handles: opaque pointers owned by the library.
using Adapter = struct AdapterImpl*;
using BindGroup = struct BindGroupImpl*;
using BindGroupLayout = struct BindGroupLayoutImpl*;
using Buffer = struct BufferImpl*;
using CommandBuffer = struct CommandBufferImpl*;
using CommandEncoder = struct CommandEncoderImpl*;
using ComputePassEncoder = struct ComputePassEncoderImpl*;
using ComputePipeline = struct ComputePipelineImpl*;
using Device = struct DeviceImpl*;
using Instance = struct InstanceImpl*;
using PipelineLayout = struct PipelineLayoutImpl*;
using QuerySet = struct QuerySetImpl*;
using Queue = struct QueueImpl*;
using Sampler = struct SamplerImpl*;
using ShaderModule = struct ShaderModuleImpl*;
using TextureView = struct TextureViewImpl*;

// Standard submissions are numbered by wgpu-native so that DevicePoll can wait for one.
using SubmissionIndex = uint64_t;

// ---- enumerations ----------------------------------------------------------------------------
enum class AdapterType : uint32_t { DiscreteGPU = 1, IntegratedGPU = 2, CPU = 3, Unknown = 4 };

enum class BackendType : uint32_t {
  Undefined = 0, Null = 1, WebGPU = 2, D3D11 = 3, D3D12 = 4, Metal = 5, Vulkan = 6, OpenGL = 7,
  OpenGLES = 8,
};

enum class BufferBindingType : uint32_t {
  NotUsed = 0, Undefined = 1, Uniform = 2, Storage = 3, ReadOnlyStorage = 4,
};

enum class CallbackMode : uint32_t { WaitAnyOnly = 1, AllowProcessEvents = 2, AllowSpontaneous = 3 };

enum class DeviceLostReason : uint32_t {
  Unknown = 1, Destroyed = 2, CallbackCancelled = 3, FailedCreation = 4,
};

enum class ErrorFilter : uint32_t { Validation = 1, OutOfMemory = 2, Internal = 3 };

enum class ErrorType : uint32_t {
  NoError = 1, Validation = 2, OutOfMemory = 3, Internal = 4, Unknown = 5,
};

// Feature names are an open set (each implementation adds its own), so they are plain numbers.
using FeatureName = uint32_t;
namespace feature {
inline constexpr FeatureName kTimestampQuery = 0x09;
inline constexpr FeatureName kShaderF16 = 0x0B;
inline constexpr FeatureName kSubgroups = 0x12;  // the standard name; wgpu-native uses kNativeSubgroup
inline constexpr FeatureName kNativeSubgroup = 0x30021;
inline constexpr FeatureName kNativeTimestampQueryInsideEncoders = 0x30024;
inline constexpr FeatureName kNativeTimestampQueryInsidePasses = 0x30025;
}  // namespace feature

enum class MapAsyncStatus : uint32_t { Success = 1, CallbackCancelled = 2, Error = 3, Aborted = 4 };
enum class PopErrorScopeStatus : uint32_t { Success = 1, CallbackCancelled = 2, Error = 3 };
enum class QueryType : uint32_t { Occlusion = 1, Timestamp = 2 };
enum class QueueWorkDoneStatus : uint32_t { Success = 1, CallbackCancelled = 2, Error = 3 };
enum class RequestDeviceStatus : uint32_t { Success = 1, CallbackCancelled = 2, Error = 3 };
enum class Status : uint32_t { Success = 1, Error = 2 };

enum class SType : uint32_t { ShaderSourceWGSL = 0x02, NativeInstanceExtras = 0x30004 };

// ---- flags -----------------------------------------------------------------------------------
namespace buffer_usage {
inline constexpr Flags kMapRead = 0x001;
inline constexpr Flags kMapWrite = 0x002;
inline constexpr Flags kCopySrc = 0x004;
inline constexpr Flags kCopyDst = 0x008;
inline constexpr Flags kUniform = 0x040;
inline constexpr Flags kStorage = 0x080;
inline constexpr Flags kQueryResolve = 0x200;
}  // namespace buffer_usage

inline constexpr Flags kMapModeRead = 0x1;
inline constexpr Flags kShaderStageCompute = 0x4;

// wgpu-native: which native APIs an instance may use. "Primary" = Vulkan, Metal, DX12, browser;
// it leaves out OpenGL, whose adapters cannot run wgml's compute shaders reliably.
inline constexpr Flags kNativeBackendsPrimary = 0x1 | 0x4 | 0x8 | 0x20;

// ---- plain structures ------------------------------------------------------------------------
struct ChainedStruct {
  const ChainedStruct* next;
  SType sType;
};

struct Future {
  uint64_t id;
};

struct InstanceDescriptor {
  const ChainedStruct* nextInChain;
  size_t requiredFeatureCount;
  const void* requiredFeatures;  // instance features: none used
  const void* requiredLimits;
};

// wgpu-native's instance options (chained to InstanceDescriptor). wgml sets `backends` only.
struct NativeInstanceExtras {
  ChainedStruct chain;
  Flags backends;
  Flags flags;
  uint32_t dx12ShaderCompiler;
  uint32_t gles3MinorVersion;
  uint32_t glFenceBehaviour;
  StringView dxcPath;
  uint32_t dxcMaxShaderModel;
  uint32_t dx12PresentationSystem;
  const uint8_t* budgetForDeviceCreation;
  const uint8_t* budgetForDeviceLoss;
  struct {
    uint32_t type;  // 0: no display connection
    void* handle[2];
  } displayHandle;
};

struct EnumerateAdapterOptions {  // wgpu-native
  const ChainedStruct* nextInChain;
  Flags backends;
};

struct AdapterInfo {
  ChainedStruct* nextInChain;
  StringView vendor;
  StringView architecture;
  StringView device;
  StringView description;
  BackendType backendType;
  AdapterType adapterType;
  uint32_t vendorID;
  uint32_t deviceID;
  uint32_t subgroupMinSize;
  uint32_t subgroupMaxSize;
};

struct Limits {
  ChainedStruct* nextInChain;
  uint32_t maxTextureDimension1D;
  uint32_t maxTextureDimension2D;
  uint32_t maxTextureDimension3D;
  uint32_t maxTextureArrayLayers;
  uint32_t maxBindGroups;
  uint32_t maxBindGroupsPlusVertexBuffers;
  uint32_t maxBindingsPerBindGroup;
  uint32_t maxDynamicUniformBuffersPerPipelineLayout;
  uint32_t maxDynamicStorageBuffersPerPipelineLayout;
  uint32_t maxSampledTexturesPerShaderStage;
  uint32_t maxSamplersPerShaderStage;
  uint32_t maxStorageBuffersPerShaderStage;
  uint32_t maxStorageTexturesPerShaderStage;
  uint32_t maxUniformBuffersPerShaderStage;
  uint64_t maxUniformBufferBindingSize;
  uint64_t maxStorageBufferBindingSize;
  uint32_t minUniformBufferOffsetAlignment;
  uint32_t minStorageBufferOffsetAlignment;
  uint32_t maxVertexBuffers;
  uint64_t maxBufferSize;
  uint32_t maxVertexAttributes;
  uint32_t maxVertexBufferArrayStride;
  uint32_t maxInterStageShaderVariables;
  uint32_t maxColorAttachments;
  uint32_t maxColorAttachmentBytesPerSample;
  uint32_t maxComputeWorkgroupStorageSize;
  uint32_t maxComputeInvocationsPerWorkgroup;
  uint32_t maxComputeWorkgroupSizeX;
  uint32_t maxComputeWorkgroupSizeY;
  uint32_t maxComputeWorkgroupSizeZ;
  uint32_t maxComputeWorkgroupsPerDimension;
  uint32_t maxImmediateSize;
};

struct SupportedFeatures {
  size_t featureCount;
  const FeatureName* features;
};

// ---- callbacks -------------------------------------------------------------------------------
using RequestDeviceCallback = void (*)(RequestDeviceStatus status, Device device,
                                       StringView message, void* userdata1, void* userdata2);
using QueueWorkDoneCallback = void (*)(QueueWorkDoneStatus status, StringView message,
                                       void* userdata1, void* userdata2);
using BufferMapCallback = void (*)(MapAsyncStatus status, StringView message, void* userdata1,
                                   void* userdata2);
using PopErrorScopeCallback = void (*)(PopErrorScopeStatus status, ErrorType type,
                                       StringView message, void* userdata1, void* userdata2);
using DeviceLostCallback = void (*)(const Device* device, DeviceLostReason reason,
                                    StringView message, void* userdata1, void* userdata2);
using UncapturedErrorCallback = void (*)(const Device* device, ErrorType type, StringView message,
                                         void* userdata1, void* userdata2);

template <class Callback>
struct CallbackInfo {
  const ChainedStruct* nextInChain;
  CallbackMode mode;
  Callback callback;
  void* userdata1;
  void* userdata2;
};

struct UncapturedErrorCallbackInfo {  // the one callback info without a mode
  const ChainedStruct* nextInChain;
  UncapturedErrorCallback callback;
  void* userdata1;
  void* userdata2;
};

// ---- descriptors -----------------------------------------------------------------------------
struct QueueDescriptor {
  const ChainedStruct* nextInChain;
  StringView label;
};

struct DeviceDescriptor {
  const ChainedStruct* nextInChain;
  StringView label;
  size_t requiredFeatureCount;
  const FeatureName* requiredFeatures;
  const Limits* requiredLimits;
  QueueDescriptor defaultQueue;
  CallbackInfo<DeviceLostCallback> deviceLostCallbackInfo;
  UncapturedErrorCallbackInfo uncapturedErrorCallbackInfo;
};

struct BufferDescriptor {
  const ChainedStruct* nextInChain;
  StringView label;
  Flags usage;
  uint64_t size;
  Bool mappedAtCreation;
};

struct ShaderModuleDescriptor {
  const ChainedStruct* nextInChain;
  StringView label;
};

struct ShaderSourceWGSL {  // chained to ShaderModuleDescriptor
  ChainedStruct chain;
  StringView code;
};

struct ConstantEntry {  // a pipeline-overridable constant
  const ChainedStruct* nextInChain;
  StringView key;
  double value;
};

struct ComputeState {
  const ChainedStruct* nextInChain;
  ShaderModule module;
  StringView entryPoint;
  size_t constantCount;
  const ConstantEntry* constants;
};

struct ComputePipelineDescriptor {
  const ChainedStruct* nextInChain;
  StringView label;
  PipelineLayout layout;
  ComputeState compute;
};

struct BufferBindingLayout {
  const ChainedStruct* nextInChain;
  BufferBindingType type;
  Bool hasDynamicOffset;
  uint64_t minBindingSize;
};

// A bind group layout entry; wgml binds buffers only, so the sampler, texture and storage
// texture parts stay zero ("not used").
struct BindGroupLayoutEntry {
  const ChainedStruct* nextInChain;
  uint32_t binding;
  Flags visibility;
  uint32_t bindingArraySize;
  BufferBindingLayout buffer;
  struct {
    const ChainedStruct* nextInChain;
    uint32_t type;
  } sampler;
  struct {
    const ChainedStruct* nextInChain;
    uint32_t sampleType;
    uint32_t viewDimension;
    Bool multisampled;
  } texture;
  struct {
    const ChainedStruct* nextInChain;
    uint32_t access;
    uint32_t format;
    uint32_t viewDimension;
  } storageTexture;
};

struct BindGroupLayoutDescriptor {
  const ChainedStruct* nextInChain;
  StringView label;
  size_t entryCount;
  const BindGroupLayoutEntry* entries;
};

struct PipelineLayoutDescriptor {
  const ChainedStruct* nextInChain;
  StringView label;
  size_t bindGroupLayoutCount;
  const BindGroupLayout* bindGroupLayouts;
  uint32_t immediateSize;
};

struct BindGroupEntry {
  const ChainedStruct* nextInChain;
  uint32_t binding;
  Buffer buffer;
  uint64_t offset;
  uint64_t size;
  Sampler sampler;
  TextureView textureView;
};

struct BindGroupDescriptor {
  const ChainedStruct* nextInChain;
  StringView label;
  BindGroupLayout layout;
  size_t entryCount;
  const BindGroupEntry* entries;
};

struct CommandEncoderDescriptor {
  const ChainedStruct* nextInChain;
  StringView label;
};

struct PassTimestampWrites {
  const ChainedStruct* nextInChain;
  QuerySet querySet;
  uint32_t beginningOfPassWriteIndex;
  uint32_t endOfPassWriteIndex;
};

struct ComputePassDescriptor {
  const ChainedStruct* nextInChain;
  StringView label;
  const PassTimestampWrites* timestampWrites;
};

struct CommandBufferDescriptor {
  const ChainedStruct* nextInChain;
  StringView label;
};

struct QuerySetDescriptor {
  const ChainedStruct* nextInChain;
  StringView label;
  QueryType type;
  uint32_t count;
};

// ---- functions -------------------------------------------------------------------------------
// X(return type, name without the "wgpu" prefix, parameter types...). The loader resolves
// "wgpu" #name for every entry; a library that lacks one is refused.
#define WGML_WEBGPU_FUNCTIONS(X)                                                                  \
  X(Instance, CreateInstance, const InstanceDescriptor*)                                          \
  X(size_t, InstanceEnumerateAdapters, Instance, const EnumerateAdapterOptions*, Adapter*)        \
  X(void, InstanceProcessEvents, Instance)                                                        \
  X(void, InstanceRelease, Instance)                                                              \
  X(uint32_t, GetVersion)                                                                         \
  X(Status, AdapterGetInfo, Adapter, AdapterInfo*)                                                \
  X(void, AdapterInfoFreeMembers, AdapterInfo)                                                    \
  X(Status, AdapterGetLimits, Adapter, Limits*)                                                   \
  X(void, AdapterGetFeatures, Adapter, SupportedFeatures*)                                        \
  X(void, SupportedFeaturesFreeMembers, SupportedFeatures)                                        \
  X(Future, AdapterRequestDevice, Adapter, const DeviceDescriptor*,                               \
    CallbackInfo<RequestDeviceCallback>)                                                          \
  X(void, AdapterRelease, Adapter)                                                                \
  X(Queue, DeviceGetQueue, Device)                                                                \
  X(Buffer, DeviceCreateBuffer, Device, const BufferDescriptor*)                                  \
  X(ShaderModule, DeviceCreateShaderModule, Device, const ShaderModuleDescriptor*)                \
  X(BindGroupLayout, DeviceCreateBindGroupLayout, Device, const BindGroupLayoutDescriptor*)       \
  X(PipelineLayout, DeviceCreatePipelineLayout, Device, const PipelineLayoutDescriptor*)          \
  X(ComputePipeline, DeviceCreateComputePipeline, Device, const ComputePipelineDescriptor*)       \
  X(BindGroup, DeviceCreateBindGroup, Device, const BindGroupDescriptor*)                         \
  X(CommandEncoder, DeviceCreateCommandEncoder, Device, const CommandEncoderDescriptor*)          \
  X(QuerySet, DeviceCreateQuerySet, Device, const QuerySetDescriptor*)                            \
  X(void, DevicePushErrorScope, Device, ErrorFilter)                                              \
  X(Future, DevicePopErrorScope, Device, CallbackInfo<PopErrorScopeCallback>)                     \
  X(Bool, DevicePoll, Device, Bool, const SubmissionIndex*)                                       \
  X(void, DeviceDestroy, Device)                                                                  \
  X(void, DeviceRelease, Device)                                                                  \
  X(ComputePassEncoder, CommandEncoderBeginComputePass, CommandEncoder,                           \
    const ComputePassDescriptor*)                                                                 \
  X(void, CommandEncoderCopyBufferToBuffer, CommandEncoder, Buffer, uint64_t, Buffer, uint64_t,   \
    uint64_t)                                                                                     \
  X(void, CommandEncoderResolveQuerySet, CommandEncoder, QuerySet, uint32_t, uint32_t, Buffer,    \
    uint64_t)                                                                                     \
  X(CommandBuffer, CommandEncoderFinish, CommandEncoder, const CommandBufferDescriptor*)          \
  X(void, CommandEncoderRelease, CommandEncoder)                                                  \
  X(void, CommandBufferRelease, CommandBuffer)                                                    \
  X(void, ComputePassEncoderSetPipeline, ComputePassEncoder, ComputePipeline)                     \
  X(void, ComputePassEncoderSetBindGroup, ComputePassEncoder, uint32_t, BindGroup, size_t,        \
    const uint32_t*)                                                                              \
  X(void, ComputePassEncoderDispatchWorkgroups, ComputePassEncoder, uint32_t, uint32_t, uint32_t) \
  X(void, ComputePassEncoderWriteTimestamp, ComputePassEncoder, QuerySet, uint32_t)               \
  X(void, ComputePassEncoderEnd, ComputePassEncoder)                                              \
  X(void, ComputePassEncoderRelease, ComputePassEncoder)                                          \
  X(SubmissionIndex, QueueSubmitForIndex, Queue, size_t, const CommandBuffer*)                    \
  X(void, QueueWriteBuffer, Queue, Buffer, uint64_t, const void*, size_t)                         \
  X(Future, QueueOnSubmittedWorkDone, Queue, CallbackInfo<QueueWorkDoneCallback>)                 \
  X(float, QueueGetTimestampPeriod, Queue)                                                        \
  X(void, QueueRelease, Queue)                                                                    \
  X(Future, BufferMapAsync, Buffer, Flags, size_t, size_t, CallbackInfo<BufferMapCallback>)       \
  X(const void*, BufferGetConstMappedRange, Buffer, size_t, size_t)                               \
  X(void, BufferUnmap, Buffer)                                                                    \
  X(void, BufferDestroy, Buffer)                                                                  \
  X(void, BufferRelease, Buffer)                                                                  \
  X(void, ShaderModuleRelease, ShaderModule)                                                      \
  X(void, BindGroupLayoutRelease, BindGroupLayout)                                                \
  X(void, PipelineLayoutRelease, PipelineLayout)                                                  \
  X(void, ComputePipelineRelease, ComputePipeline)                                                \
  X(void, BindGroupRelease, BindGroup)                                                            \
  X(void, QuerySetRelease, QuerySet)

// The resolved entry points of one loaded library.
struct Functions {
#define WGML_DECLARE_WEBGPU_FUNCTION(ret, name, ...) ret (*name)(__VA_ARGS__) = nullptr;
  WGML_WEBGPU_FUNCTIONS(WGML_DECLARE_WEBGPU_FUNCTION)
#undef WGML_DECLARE_WEBGPU_FUNCTION
};

}  // namespace wgml::gpu::api
