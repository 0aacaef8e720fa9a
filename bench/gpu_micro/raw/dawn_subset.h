// dawn_subset.h - the part of webgpu.h that gpu_micro_raw.cpp uses, written for the Dawn build
// shipped in npm `bun-webgpu-linux-x64@0.1.7` (libwebgpu_wrapper.so, which ships no header).
//
// Layouts and enum values were checked against the upstream header of that build
// (shared/reference/dawn-webgpu.h) and then against the binary itself, which is NEWER than that
// header in two places (found by running it on lavapipe, 2026-11-30):
//   * WGPUQueueWorkDoneCallback DOES take a WGPUStringView message (as in the standard header);
//     with the header's message-less signature the callback reads the message pointer as
//     userdata1.
//   * WGPULimits is 152 bytes and ends with one uint32_t after maxComputeWorkgroupsPerDimension
//     (maxImmediateSize, 0 on lavapipe), not the header's four per-stage storage limits; the
//     library writes exactly 152 bytes in wgpuAdapterGetLimits.
// Confirmed as the header says: WGPUFeatureName uses Dawn's older numbering (ShaderF16 = 0x0A:
// requesting 0x0A enables `enable f16;`, 0x0B does not); WGPUInstanceDescriptor carries the inline
// WGPUInstanceCapabilities struct (timedWaitAnyEnable makes a blocking wgpuInstanceWaitAny work).
// Only what the benchmark touches is declared; functions are declared so that decltype(&wgpuX)
// gives their pointer types, they are never linked (the program dlopen()s the library).
//
// Where this build differs from the wgpu-native header (webgpu.h of the `wgpu` PyPI wheel):
//   * WGPUInstanceDescriptor: inline WGPUInstanceCapabilities {nextInChain, timedWaitAnyEnable,
//     timedWaitAnyMaxCount} instead of requiredFeatureCount/requiredFeatures/requiredLimits.
//   * WGPUFeatureName values are numbered differently (TimestampQuery 0x03 vs 0x09, ShaderF16
//     0x0A vs 0x0B, Subgroups 0x11 vs 0x12, CoreFeaturesAndLimits 0x12 vs 0x01).
//   * WGPUSType values above 0x0B differ (Dawn extensions live at 0x0005xxxx).
#pragma once
#include <stddef.h>
#include <stdint.h>

#define WGPU_STRLEN SIZE_MAX
#define WGPU_DAWN_SUBSET 1

typedef uint64_t WGPUFlags;
typedef uint32_t WGPUBool;

// Opaque object handles.
#define WGML_HANDLE(name) typedef struct name##Impl* name
WGML_HANDLE(WGPUAdapter);
WGML_HANDLE(WGPUBindGroup);
WGML_HANDLE(WGPUBindGroupLayout);
WGML_HANDLE(WGPUBuffer);
WGML_HANDLE(WGPUCommandBuffer);
WGML_HANDLE(WGPUCommandEncoder);
WGML_HANDLE(WGPUComputePassEncoder);
WGML_HANDLE(WGPUComputePipeline);
WGML_HANDLE(WGPUDevice);
WGML_HANDLE(WGPUInstance);
WGML_HANDLE(WGPUPipelineLayout);
WGML_HANDLE(WGPUQuerySet);
WGML_HANDLE(WGPUQueue);
WGML_HANDLE(WGPUSampler);
WGML_HANDLE(WGPUShaderModule);
WGML_HANDLE(WGPUSurface);
WGML_HANDLE(WGPUTextureView);
#undef WGML_HANDLE

struct WGPUConstantEntry;

// ---- enums (values as in this Dawn build) ------------------------------------------------
typedef enum WGPUAdapterType {
  WGPUAdapterType_DiscreteGPU = 1, WGPUAdapterType_IntegratedGPU = 2,
  WGPUAdapterType_CPU = 3, WGPUAdapterType_Unknown = 4, WGPUAdapterType_Force32 = 0x7FFFFFFF
} WGPUAdapterType;

typedef enum WGPUBackendType {
  WGPUBackendType_Undefined = 0, WGPUBackendType_Null = 1, WGPUBackendType_WebGPU = 2,
  WGPUBackendType_D3D11 = 3, WGPUBackendType_D3D12 = 4, WGPUBackendType_Metal = 5,
  WGPUBackendType_Vulkan = 6, WGPUBackendType_OpenGL = 7, WGPUBackendType_OpenGLES = 8,
  WGPUBackendType_Force32 = 0x7FFFFFFF
} WGPUBackendType;

typedef enum WGPUCallbackMode {
  WGPUCallbackMode_WaitAnyOnly = 1, WGPUCallbackMode_AllowProcessEvents = 2,
  WGPUCallbackMode_AllowSpontaneous = 3, WGPUCallbackMode_Force32 = 0x7FFFFFFF
} WGPUCallbackMode;

typedef enum WGPUDeviceLostReason {
  WGPUDeviceLostReason_Unknown = 1, WGPUDeviceLostReason_Destroyed = 2,
  WGPUDeviceLostReason_CallbackCancelled = 3, WGPUDeviceLostReason_FailedCreation = 4,
  WGPUDeviceLostReason_Force32 = 0x7FFFFFFF
} WGPUDeviceLostReason;

typedef enum WGPUErrorType {
  WGPUErrorType_NoError = 1, WGPUErrorType_Validation = 2, WGPUErrorType_OutOfMemory = 3,
  WGPUErrorType_Internal = 4, WGPUErrorType_Unknown = 5, WGPUErrorType_Force32 = 0x7FFFFFFF
} WGPUErrorType;

typedef enum WGPUFeatureLevel {
  WGPUFeatureLevel_Undefined = 0, WGPUFeatureLevel_Compatibility = 1, WGPUFeatureLevel_Core = 2,
  WGPUFeatureLevel_Force32 = 0x7FFFFFFF
} WGPUFeatureLevel;

// Only the features the benchmark reports on. Note the numbering differs from the
// standard header's: Dawn's build predates the renumbering.
typedef enum WGPUFeatureName {
  WGPUFeatureName_TimestampQuery = 0x00000003,
  WGPUFeatureName_ShaderF16 = 0x0000000A,
  WGPUFeatureName_Subgroups = 0x00000011,
  WGPUFeatureName_CoreFeaturesAndLimits = 0x00000012,
  WGPUFeatureName_ChromiumExperimentalTimestampQueryInsidePasses = 0x00050003,
  WGPUFeatureName_SubgroupsF16 = 0x00050008,
  WGPUFeatureName_ChromiumExperimentalSubgroupMatrix = 0x00050038,
  WGPUFeatureName_Force32 = 0x7FFFFFFF
} WGPUFeatureName;

typedef enum WGPUMapAsyncStatus {
  WGPUMapAsyncStatus_Success = 1, WGPUMapAsyncStatus_CallbackCancelled = 2,
  WGPUMapAsyncStatus_Error = 3, WGPUMapAsyncStatus_Aborted = 4,
  WGPUMapAsyncStatus_Force32 = 0x7FFFFFFF
} WGPUMapAsyncStatus;

typedef enum WGPUPowerPreference {
  WGPUPowerPreference_Undefined = 0, WGPUPowerPreference_LowPower = 1,
  WGPUPowerPreference_HighPerformance = 2, WGPUPowerPreference_Force32 = 0x7FFFFFFF
} WGPUPowerPreference;

typedef enum WGPUQueueWorkDoneStatus {
  WGPUQueueWorkDoneStatus_Success = 1, WGPUQueueWorkDoneStatus_CallbackCancelled = 2,
  WGPUQueueWorkDoneStatus_Error = 3, WGPUQueueWorkDoneStatus_Force32 = 0x7FFFFFFF
} WGPUQueueWorkDoneStatus;

typedef enum WGPURequestAdapterStatus {
  WGPURequestAdapterStatus_Success = 1, WGPURequestAdapterStatus_CallbackCancelled = 2,
  WGPURequestAdapterStatus_Unavailable = 3, WGPURequestAdapterStatus_Error = 4,
  WGPURequestAdapterStatus_Force32 = 0x7FFFFFFF
} WGPURequestAdapterStatus;

typedef enum WGPURequestDeviceStatus {
  WGPURequestDeviceStatus_Success = 1, WGPURequestDeviceStatus_CallbackCancelled = 2,
  WGPURequestDeviceStatus_Error = 3, WGPURequestDeviceStatus_Force32 = 0x7FFFFFFF
} WGPURequestDeviceStatus;

typedef enum WGPUSType {
  WGPUSType_ShaderSourceSPIRV = 1, WGPUSType_ShaderSourceWGSL = 2,
  WGPUSType_DawnTogglesDescriptor = 0x0005000A, WGPUSType_Force32 = 0x7FFFFFFF
} WGPUSType;

typedef enum WGPUStatus {
  WGPUStatus_Success = 1, WGPUStatus_Error = 2, WGPUStatus_Force32 = 0x7FFFFFFF
} WGPUStatus;

typedef enum WGPUWaitStatus {
  WGPUWaitStatus_Success = 1, WGPUWaitStatus_TimedOut = 2, WGPUWaitStatus_Error = 3,
  WGPUWaitStatus_Force32 = 0x7FFFFFFF
} WGPUWaitStatus;

// ---- flags (64-bit) ----------------------------------------------------------------------
typedef WGPUFlags WGPUBufferUsage;
static const WGPUBufferUsage WGPUBufferUsage_MapRead = 0x1;
static const WGPUBufferUsage WGPUBufferUsage_MapWrite = 0x2;
static const WGPUBufferUsage WGPUBufferUsage_CopySrc = 0x4;
static const WGPUBufferUsage WGPUBufferUsage_CopyDst = 0x8;
static const WGPUBufferUsage WGPUBufferUsage_Uniform = 0x40;
static const WGPUBufferUsage WGPUBufferUsage_Storage = 0x80;
typedef WGPUFlags WGPUMapMode;
static const WGPUMapMode WGPUMapMode_Read = 0x1;

// ---- plain structs ------------------------------------------------------------------------
typedef struct WGPUStringView {
  const char* data;  // may be NULL
  size_t length;     // WGPU_STRLEN: NUL-terminated
} WGPUStringView;

typedef struct WGPUChainedStruct {
  struct WGPUChainedStruct* next;
  WGPUSType sType;
} WGPUChainedStruct;

typedef struct WGPUFuture { uint64_t id; } WGPUFuture;

typedef struct WGPUFutureWaitInfo {
  WGPUFuture future;
  WGPUBool completed;
} WGPUFutureWaitInfo;

typedef struct WGPUInstanceCapabilities {
  WGPUChainedStruct* nextInChain;
  WGPUBool timedWaitAnyEnable;
  size_t timedWaitAnyMaxCount;
} WGPUInstanceCapabilities;

typedef struct WGPUInstanceDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUInstanceCapabilities capabilities;  // by value, not a pointer
} WGPUInstanceDescriptor;

typedef struct WGPUDawnTogglesDescriptor {
  WGPUChainedStruct chain;
  size_t enabledToggleCount;
  const char* const* enabledToggles;
  size_t disabledToggleCount;
  const char* const* disabledToggles;
} WGPUDawnTogglesDescriptor;

typedef struct WGPURequestAdapterOptions {
  WGPUChainedStruct* nextInChain;
  WGPUFeatureLevel featureLevel;
  WGPUPowerPreference powerPreference;
  WGPUBool forceFallbackAdapter;
  WGPUBackendType backendType;
  WGPUSurface compatibleSurface;
} WGPURequestAdapterOptions;

typedef struct WGPUAdapterInfo {
  WGPUChainedStruct* nextInChain;
  WGPUStringView vendor;
  WGPUStringView architecture;
  WGPUStringView device;
  WGPUStringView description;
  WGPUBackendType backendType;
  WGPUAdapterType adapterType;
  uint32_t vendorID;
  uint32_t deviceID;
  uint32_t subgroupMinSize;
  uint32_t subgroupMaxSize;
} WGPUAdapterInfo;

typedef struct WGPULimits {
  WGPUChainedStruct* nextInChain;
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
  // The binary ends the struct here (152 bytes), unlike shared/reference/dawn-webgpu.h which
  // lists four per-stage storage limits instead.
  uint32_t maxImmediateSize;
} WGPULimits;

typedef struct WGPUSupportedFeatures {
  size_t featureCount;
  const WGPUFeatureName* features;
} WGPUSupportedFeatures;

// ---- callbacks -------------------------------------------------------------------------
typedef void (*WGPURequestAdapterCallback)(WGPURequestAdapterStatus status, WGPUAdapter adapter,
                                           WGPUStringView message, void* userdata1, void* userdata2);
typedef void (*WGPURequestDeviceCallback)(WGPURequestDeviceStatus status, WGPUDevice device,
                                          WGPUStringView message, void* userdata1, void* userdata2);
// The binary passes a message here (the reference header says it does not).
typedef void (*WGPUQueueWorkDoneCallback)(WGPUQueueWorkDoneStatus status, WGPUStringView message,
                                          void* userdata1, void* userdata2);
typedef void (*WGPUBufferMapCallback)(WGPUMapAsyncStatus status, WGPUStringView message,
                                      void* userdata1, void* userdata2);
typedef void (*WGPUDeviceLostCallback)(const WGPUDevice* device, WGPUDeviceLostReason reason,
                                       WGPUStringView message, void* userdata1, void* userdata2);
typedef void (*WGPUUncapturedErrorCallback)(const WGPUDevice* device, WGPUErrorType type,
                                            WGPUStringView message, void* userdata1,
                                            void* userdata2);

#define WGML_CALLBACK_INFO(Name, CbType)                                                   \
  typedef struct Name {                                                                  \
    WGPUChainedStruct* nextInChain;                                                      \
    WGPUCallbackMode mode;                                                               \
    CbType callback;                                                                     \
    void* userdata1;                                                                     \
    void* userdata2;                                                                     \
  } Name
WGML_CALLBACK_INFO(WGPURequestAdapterCallbackInfo, WGPURequestAdapterCallback);
WGML_CALLBACK_INFO(WGPURequestDeviceCallbackInfo, WGPURequestDeviceCallback);
WGML_CALLBACK_INFO(WGPUQueueWorkDoneCallbackInfo, WGPUQueueWorkDoneCallback);
WGML_CALLBACK_INFO(WGPUBufferMapCallbackInfo, WGPUBufferMapCallback);
WGML_CALLBACK_INFO(WGPUDeviceLostCallbackInfo, WGPUDeviceLostCallback);
#undef WGML_CALLBACK_INFO

typedef struct WGPUUncapturedErrorCallbackInfo {  // no mode field
  WGPUChainedStruct* nextInChain;
  WGPUUncapturedErrorCallback callback;
  void* userdata1;
  void* userdata2;
} WGPUUncapturedErrorCallbackInfo;

// ---- descriptors -----------------------------------------------------------------------
typedef struct WGPUQueueDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
} WGPUQueueDescriptor;

typedef struct WGPUDeviceDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  size_t requiredFeatureCount;
  const WGPUFeatureName* requiredFeatures;
  const WGPULimits* requiredLimits;
  WGPUQueueDescriptor defaultQueue;
  WGPUDeviceLostCallbackInfo deviceLostCallbackInfo;
  WGPUUncapturedErrorCallbackInfo uncapturedErrorCallbackInfo;
} WGPUDeviceDescriptor;

typedef struct WGPUBufferDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  WGPUBufferUsage usage;
  uint64_t size;
  WGPUBool mappedAtCreation;
} WGPUBufferDescriptor;

typedef struct WGPUShaderModuleDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
} WGPUShaderModuleDescriptor;

typedef struct WGPUShaderSourceWGSL {
  WGPUChainedStruct chain;  // sType = WGPUSType_ShaderSourceWGSL
  WGPUStringView code;
} WGPUShaderSourceWGSL;

typedef struct WGPUComputeState {
  WGPUChainedStruct* nextInChain;
  WGPUShaderModule module;
  WGPUStringView entryPoint;
  size_t constantCount;
  const struct WGPUConstantEntry* constants;
} WGPUComputeState;

typedef struct WGPUComputePipelineDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  WGPUPipelineLayout layout;  // NULL: layout derived from the shader
  WGPUComputeState compute;
} WGPUComputePipelineDescriptor;

typedef struct WGPUBindGroupEntry {
  WGPUChainedStruct* nextInChain;
  uint32_t binding;
  WGPUBuffer buffer;
  uint64_t offset;
  uint64_t size;
  WGPUSampler sampler;
  WGPUTextureView textureView;
} WGPUBindGroupEntry;

typedef struct WGPUBindGroupDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  WGPUBindGroupLayout layout;
  size_t entryCount;
  const WGPUBindGroupEntry* entries;
} WGPUBindGroupDescriptor;

typedef struct WGPUCommandEncoderDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
} WGPUCommandEncoderDescriptor;

typedef struct WGPUPassTimestampWrites {
  WGPUChainedStruct* nextInChain;
  WGPUQuerySet querySet;
  uint32_t beginningOfPassWriteIndex;
  uint32_t endOfPassWriteIndex;
} WGPUPassTimestampWrites;

typedef struct WGPUComputePassDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  const WGPUPassTimestampWrites* timestampWrites;
} WGPUComputePassDescriptor;

typedef struct WGPUCommandBufferDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
} WGPUCommandBufferDescriptor;

// ---- functions (declarations only; resolved with dlsym) ---------------------------------
#ifdef __cplusplus
extern "C" {
#endif
WGPUInstance wgpuCreateInstance(const WGPUInstanceDescriptor* descriptor);
WGPUFuture wgpuInstanceRequestAdapter(WGPUInstance instance, const WGPURequestAdapterOptions* options,
                                      WGPURequestAdapterCallbackInfo callbackInfo);
WGPUWaitStatus wgpuInstanceWaitAny(WGPUInstance instance, size_t futureCount,
                                   WGPUFutureWaitInfo* futures, uint64_t timeoutNS);
void wgpuInstanceProcessEvents(WGPUInstance instance);
void wgpuInstanceRelease(WGPUInstance instance);

WGPUStatus wgpuAdapterGetInfo(WGPUAdapter adapter, WGPUAdapterInfo* info);
void wgpuAdapterInfoFreeMembers(WGPUAdapterInfo value);
WGPUStatus wgpuAdapterGetLimits(WGPUAdapter adapter, WGPULimits* limits);
void wgpuAdapterGetFeatures(WGPUAdapter adapter, WGPUSupportedFeatures* features);
WGPUBool wgpuAdapterHasFeature(WGPUAdapter adapter, WGPUFeatureName feature);
void wgpuSupportedFeaturesFreeMembers(WGPUSupportedFeatures value);
WGPUFuture wgpuAdapterRequestDevice(WGPUAdapter adapter, const WGPUDeviceDescriptor* descriptor,
                                    WGPURequestDeviceCallbackInfo callbackInfo);
void wgpuAdapterRelease(WGPUAdapter adapter);

WGPUQueue wgpuDeviceGetQueue(WGPUDevice device);
WGPUBuffer wgpuDeviceCreateBuffer(WGPUDevice device, const WGPUBufferDescriptor* descriptor);
WGPUShaderModule wgpuDeviceCreateShaderModule(WGPUDevice device,
                                              const WGPUShaderModuleDescriptor* descriptor);
WGPUComputePipeline wgpuDeviceCreateComputePipeline(WGPUDevice device,
                                                    const WGPUComputePipelineDescriptor* descriptor);
WGPUBindGroupLayout wgpuComputePipelineGetBindGroupLayout(WGPUComputePipeline pipeline,
                                                          uint32_t groupIndex);
WGPUBindGroup wgpuDeviceCreateBindGroup(WGPUDevice device, const WGPUBindGroupDescriptor* descriptor);
WGPUCommandEncoder wgpuDeviceCreateCommandEncoder(WGPUDevice device,
                                                  const WGPUCommandEncoderDescriptor* descriptor);
void wgpuDeviceDestroy(WGPUDevice device);
void wgpuDeviceRelease(WGPUDevice device);

WGPUComputePassEncoder wgpuCommandEncoderBeginComputePass(WGPUCommandEncoder encoder,
                                                          const WGPUComputePassDescriptor* descriptor);
void wgpuCommandEncoderCopyBufferToBuffer(WGPUCommandEncoder encoder, WGPUBuffer source,
                                          uint64_t sourceOffset, WGPUBuffer destination,
                                          uint64_t destinationOffset, uint64_t size);
WGPUCommandBuffer wgpuCommandEncoderFinish(WGPUCommandEncoder encoder,
                                           const WGPUCommandBufferDescriptor* descriptor);
void wgpuCommandEncoderRelease(WGPUCommandEncoder encoder);
void wgpuCommandBufferRelease(WGPUCommandBuffer commandBuffer);

void wgpuComputePassEncoderSetPipeline(WGPUComputePassEncoder pass, WGPUComputePipeline pipeline);
void wgpuComputePassEncoderSetBindGroup(WGPUComputePassEncoder pass, uint32_t groupIndex,
                                        WGPUBindGroup group, size_t dynamicOffsetCount,
                                        const uint32_t* dynamicOffsets);
void wgpuComputePassEncoderDispatchWorkgroups(WGPUComputePassEncoder pass, uint32_t x, uint32_t y,
                                              uint32_t z);
void wgpuComputePassEncoderEnd(WGPUComputePassEncoder pass);
void wgpuComputePassEncoderRelease(WGPUComputePassEncoder pass);

void wgpuQueueSubmit(WGPUQueue queue, size_t commandCount, const WGPUCommandBuffer* commands);
void wgpuQueueWriteBuffer(WGPUQueue queue, WGPUBuffer buffer, uint64_t bufferOffset,
                          const void* data, size_t size);
WGPUFuture wgpuQueueOnSubmittedWorkDone(WGPUQueue queue, WGPUQueueWorkDoneCallbackInfo callbackInfo);
void wgpuQueueRelease(WGPUQueue queue);

WGPUFuture wgpuBufferMapAsync(WGPUBuffer buffer, WGPUMapMode mode, size_t offset, size_t size,
                              WGPUBufferMapCallbackInfo callbackInfo);
const void* wgpuBufferGetConstMappedRange(WGPUBuffer buffer, size_t offset, size_t size);
void wgpuBufferUnmap(WGPUBuffer buffer);
void wgpuBufferDestroy(WGPUBuffer buffer);
void wgpuBufferRelease(WGPUBuffer buffer);

void wgpuShaderModuleRelease(WGPUShaderModule shaderModule);
void wgpuComputePipelineRelease(WGPUComputePipeline pipeline);
void wgpuBindGroupRelease(WGPUBindGroup bindGroup);
void wgpuBindGroupLayoutRelease(WGPUBindGroupLayout bindGroupLayout);
#ifdef __cplusplus
}
#endif
