#pragma once
// The WebGPU C API as the device layer sees it: the real headers of the wgpu-native build it
// loads, webgpu.h and wgpu-native's wgpu.h from the PyPI wheel `wgpu` that tools/setup.sh fetches
// into .cache/webgpu (CMake finds them there; see src/gpu/CMakeLists.txt). The library is opened
// at run time (webgpu_library.h) and not linked, so the headers' function declarations only give
// the entry points' types: a direct call of a wgpu* function would fail to link.
#include <webgpu.h>
#include <wgpu.h>

namespace wgml::gpu::api {

// X(name without the "wgpu" prefix) for every function the layer calls. The loader resolves
// "wgpu" #name for each; a library that lacks one is refused.
// clang-format does not settle on one layout of these lists.
// clang-format off
#define WGML_WEBGPU_FUNCTIONS(X)           \
  X(CreateInstance)                        \
  X(InstanceEnumerateAdapters)             \
  X(InstanceProcessEvents)                 \
  X(InstanceRelease)                       \
  X(GetVersion)                            \
  X(AdapterGetInfo)                        \
  X(AdapterInfoFreeMembers)                \
  X(AdapterGetLimits)                      \
  X(AdapterGetFeatures)                    \
  X(SupportedFeaturesFreeMembers)          \
  X(AdapterRequestDevice)                  \
  X(AdapterRelease)                        \
  X(DeviceGetQueue)                        \
  X(DeviceCreateBuffer)                    \
  X(DeviceCreateShaderModule)              \
  X(DeviceCreateShaderModuleTrusted)       \
  X(DeviceCreateBindGroupLayout)           \
  X(DeviceCreatePipelineLayout)            \
  X(DeviceCreateComputePipeline)           \
  X(DeviceCreateBindGroup)                 \
  X(DeviceCreateCommandEncoder)            \
  X(DeviceCreateQuerySet)                  \
  X(DevicePushErrorScope)                  \
  X(DevicePopErrorScope)                   \
  X(DevicePoll)                            \
  X(DeviceDestroy)                         \
  X(DeviceRelease)                         \
  X(CommandEncoderBeginComputePass)        \
  X(CommandEncoderCopyBufferToBuffer)      \
  X(CommandEncoderResolveQuerySet)         \
  X(CommandEncoderFinish)                  \
  X(CommandEncoderRelease)                 \
  X(CommandBufferRelease)                  \
  X(ComputePassEncoderSetPipeline)         \
  X(ComputePassEncoderSetBindGroup)        \
  X(ComputePassEncoderDispatchWorkgroups)  \
  X(ComputePassEncoderWriteTimestamp)      \
  X(ComputePassEncoderEnd)                 \
  X(ComputePassEncoderRelease)             \
  X(QueueSubmitForIndex)                   \
  X(QueueWriteBuffer)                      \
  X(QueueOnSubmittedWorkDone)              \
  X(QueueGetTimestampPeriod)               \
  X(QueueRelease)                          \
  X(BufferMapAsync)                        \
  X(BufferGetConstMappedRange)             \
  X(BufferUnmap)                           \
  X(BufferDestroy)                         \
  X(BufferRelease)                         \
  X(ShaderModuleRelease)                   \
  X(BindGroupLayoutRelease)                \
  X(PipelineLayoutRelease)                 \
  X(ComputePipelineRelease)                \
  X(BindGroupRelease)                      \
  X(QuerySetRelease)
// clang-format on

// The resolved entry points of one loaded library.
struct Functions {
#define WGML_DECLARE_WEBGPU_FUNCTION(name) decltype(&::wgpu##name) name = nullptr;
  WGML_WEBGPU_FUNCTIONS(WGML_DECLARE_WEBGPU_FUNCTION)
#undef WGML_DECLARE_WEBGPU_FUNCTION
};

}  // namespace wgml::gpu::api
