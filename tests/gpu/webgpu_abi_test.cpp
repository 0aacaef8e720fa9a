// Checks src/gpu/webgpu_api.h, wgml's own declarations, against the headers of the wgpu-native
// build it loads (the PyPI wheel's webgpu.h and wgpu.h, found under .cache/webgpu): every struct's
// size and field offsets, every enum value, and every function's parameter count and sizes.
// The checks are static_asserts: a mismatch fails the build.
#include <gtest/gtest.h>

#include <cstddef>
#include <type_traits>

#include "gpu/webgpu_api.h"
#include "webgpu.h"
#include "wgpu.h"

namespace wgml::gpu::api {
namespace {

#define SAME_SIZE(mine, theirs) \
  static_assert(sizeof(mine) == sizeof(theirs) && alignof(mine) == alignof(theirs), #mine)
#define SAME_FIELD(mine, theirs, field) \
  static_assert(offsetof(mine, field) == offsetof(theirs, field), #mine "::" #field)
#define SAME_VALUE(mine, theirs) static_assert(uint64_t(mine) == uint64_t(theirs), #mine)

SAME_SIZE(StringView, WGPUStringView);
SAME_FIELD(StringView, WGPUStringView, length);
SAME_SIZE(ChainedStruct, WGPUChainedStruct);
SAME_FIELD(ChainedStruct, WGPUChainedStruct, sType);
SAME_SIZE(Future, WGPUFuture);

SAME_SIZE(InstanceDescriptor, WGPUInstanceDescriptor);
SAME_FIELD(InstanceDescriptor, WGPUInstanceDescriptor, requiredLimits);
SAME_SIZE(NativeInstanceExtras, WGPUInstanceExtras);
SAME_FIELD(NativeInstanceExtras, WGPUInstanceExtras, backends);
SAME_FIELD(NativeInstanceExtras, WGPUInstanceExtras, flags);
SAME_FIELD(NativeInstanceExtras, WGPUInstanceExtras, dxcPath);
SAME_FIELD(NativeInstanceExtras, WGPUInstanceExtras, dx12PresentationSystem);
SAME_FIELD(NativeInstanceExtras, WGPUInstanceExtras, budgetForDeviceLoss);
SAME_FIELD(NativeInstanceExtras, WGPUInstanceExtras, displayHandle);
SAME_SIZE(EnumerateAdapterOptions, WGPUInstanceEnumerateAdapterOptions);
SAME_FIELD(EnumerateAdapterOptions, WGPUInstanceEnumerateAdapterOptions, backends);

SAME_SIZE(AdapterInfo, WGPUAdapterInfo);
SAME_FIELD(AdapterInfo, WGPUAdapterInfo, device);
SAME_FIELD(AdapterInfo, WGPUAdapterInfo, description);
SAME_FIELD(AdapterInfo, WGPUAdapterInfo, backendType);
SAME_FIELD(AdapterInfo, WGPUAdapterInfo, adapterType);
SAME_FIELD(AdapterInfo, WGPUAdapterInfo, subgroupMaxSize);

SAME_SIZE(Limits, WGPULimits);
SAME_FIELD(Limits, WGPULimits, maxUniformBufferBindingSize);
SAME_FIELD(Limits, WGPULimits, maxStorageBufferBindingSize);
SAME_FIELD(Limits, WGPULimits, minUniformBufferOffsetAlignment);
SAME_FIELD(Limits, WGPULimits, minStorageBufferOffsetAlignment);
SAME_FIELD(Limits, WGPULimits, maxBufferSize);
SAME_FIELD(Limits, WGPULimits, maxComputeWorkgroupStorageSize);
SAME_FIELD(Limits, WGPULimits, maxComputeWorkgroupsPerDimension);
SAME_FIELD(Limits, WGPULimits, maxImmediateSize);
static_assert(sizeof(Limits) == 152);

SAME_SIZE(SupportedFeatures, WGPUSupportedFeatures);
SAME_SIZE(CallbackInfo<RequestDeviceCallback>, WGPURequestDeviceCallbackInfo);
SAME_FIELD(CallbackInfo<RequestDeviceCallback>, WGPURequestDeviceCallbackInfo, userdata2);
SAME_SIZE(CallbackInfo<PopErrorScopeCallback>, WGPUPopErrorScopeCallbackInfo);
SAME_SIZE(UncapturedErrorCallbackInfo, WGPUUncapturedErrorCallbackInfo);
SAME_FIELD(UncapturedErrorCallbackInfo, WGPUUncapturedErrorCallbackInfo, callback);

SAME_SIZE(DeviceDescriptor, WGPUDeviceDescriptor);
SAME_FIELD(DeviceDescriptor, WGPUDeviceDescriptor, requiredLimits);
SAME_FIELD(DeviceDescriptor, WGPUDeviceDescriptor, defaultQueue);
SAME_FIELD(DeviceDescriptor, WGPUDeviceDescriptor, deviceLostCallbackInfo);
SAME_FIELD(DeviceDescriptor, WGPUDeviceDescriptor, uncapturedErrorCallbackInfo);
SAME_SIZE(BufferDescriptor, WGPUBufferDescriptor);
SAME_FIELD(BufferDescriptor, WGPUBufferDescriptor, usage);
SAME_FIELD(BufferDescriptor, WGPUBufferDescriptor, mappedAtCreation);
SAME_SIZE(ShaderModuleDescriptor, WGPUShaderModuleDescriptor);
SAME_SIZE(ShaderSourceWGSL, WGPUShaderSourceWGSL);
SAME_FIELD(ShaderSourceWGSL, WGPUShaderSourceWGSL, code);
SAME_SIZE(ConstantEntry, WGPUConstantEntry);
SAME_FIELD(ConstantEntry, WGPUConstantEntry, value);
SAME_SIZE(ComputeState, WGPUComputeState);
SAME_FIELD(ComputeState, WGPUComputeState, constants);
SAME_SIZE(ComputePipelineDescriptor, WGPUComputePipelineDescriptor);
SAME_FIELD(ComputePipelineDescriptor, WGPUComputePipelineDescriptor, compute);
SAME_SIZE(BufferBindingLayout, WGPUBufferBindingLayout);
SAME_FIELD(BufferBindingLayout, WGPUBufferBindingLayout, minBindingSize);
SAME_SIZE(BindGroupLayoutEntry, WGPUBindGroupLayoutEntry);
SAME_FIELD(BindGroupLayoutEntry, WGPUBindGroupLayoutEntry, visibility);
SAME_FIELD(BindGroupLayoutEntry, WGPUBindGroupLayoutEntry, bindingArraySize);
SAME_FIELD(BindGroupLayoutEntry, WGPUBindGroupLayoutEntry, buffer);
SAME_FIELD(BindGroupLayoutEntry, WGPUBindGroupLayoutEntry, sampler);
SAME_FIELD(BindGroupLayoutEntry, WGPUBindGroupLayoutEntry, texture);
SAME_FIELD(BindGroupLayoutEntry, WGPUBindGroupLayoutEntry, storageTexture);
SAME_SIZE(BindGroupLayoutDescriptor, WGPUBindGroupLayoutDescriptor);
SAME_SIZE(PipelineLayoutDescriptor, WGPUPipelineLayoutDescriptor);
SAME_FIELD(PipelineLayoutDescriptor, WGPUPipelineLayoutDescriptor, immediateSize);
SAME_SIZE(BindGroupEntry, WGPUBindGroupEntry);
SAME_FIELD(BindGroupEntry, WGPUBindGroupEntry, offset);
SAME_FIELD(BindGroupEntry, WGPUBindGroupEntry, textureView);
SAME_SIZE(BindGroupDescriptor, WGPUBindGroupDescriptor);
SAME_FIELD(BindGroupDescriptor, WGPUBindGroupDescriptor, entries);
SAME_SIZE(CommandEncoderDescriptor, WGPUCommandEncoderDescriptor);
SAME_SIZE(PassTimestampWrites, WGPUPassTimestampWrites);
SAME_FIELD(PassTimestampWrites, WGPUPassTimestampWrites, endOfPassWriteIndex);
SAME_SIZE(ComputePassDescriptor, WGPUComputePassDescriptor);
SAME_FIELD(ComputePassDescriptor, WGPUComputePassDescriptor, timestampWrites);
SAME_SIZE(CommandBufferDescriptor, WGPUCommandBufferDescriptor);
SAME_SIZE(QuerySetDescriptor, WGPUQuerySetDescriptor);
SAME_FIELD(QuerySetDescriptor, WGPUQuerySetDescriptor, count);

SAME_VALUE(kNullTerminated, WGPU_STRLEN);
SAME_VALUE(AdapterType::CPU, WGPUAdapterType_CPU);
SAME_VALUE(AdapterType::DiscreteGPU, WGPUAdapterType_DiscreteGPU);
SAME_VALUE(BackendType::Null, WGPUBackendType_Null);
SAME_VALUE(BackendType::Vulkan, WGPUBackendType_Vulkan);
SAME_VALUE(BufferBindingType::Uniform, WGPUBufferBindingType_Uniform);
SAME_VALUE(BufferBindingType::Storage, WGPUBufferBindingType_Storage);
SAME_VALUE(BufferBindingType::ReadOnlyStorage, WGPUBufferBindingType_ReadOnlyStorage);
SAME_VALUE(CallbackMode::AllowProcessEvents, WGPUCallbackMode_AllowProcessEvents);
SAME_VALUE(CallbackMode::AllowSpontaneous, WGPUCallbackMode_AllowSpontaneous);
SAME_VALUE(DeviceLostReason::Destroyed, WGPUDeviceLostReason_Destroyed);
SAME_VALUE(DeviceLostReason::CallbackCancelled, WGPUDeviceLostReason_CallbackCancelled);
SAME_VALUE(ErrorFilter::Validation, WGPUErrorFilter_Validation);
SAME_VALUE(ErrorFilter::OutOfMemory, WGPUErrorFilter_OutOfMemory);
SAME_VALUE(ErrorFilter::Internal, WGPUErrorFilter_Internal);
SAME_VALUE(ErrorType::NoError, WGPUErrorType_NoError);
SAME_VALUE(ErrorType::Validation, WGPUErrorType_Validation);
SAME_VALUE(ErrorType::OutOfMemory, WGPUErrorType_OutOfMemory);
SAME_VALUE(feature::kTimestampQuery, WGPUFeatureName_TimestampQuery);
SAME_VALUE(feature::kShaderF16, WGPUFeatureName_ShaderF16);
SAME_VALUE(feature::kSubgroups, WGPUFeatureName_Subgroups);
SAME_VALUE(feature::kNativeSubgroup, WGPUNativeFeature_Subgroup);
SAME_VALUE(feature::kNativeTimestampQueryInsideEncoders,
           WGPUNativeFeature_TimestampQueryInsideEncoders);
SAME_VALUE(feature::kNativeTimestampQueryInsidePasses, WGPUNativeFeature_TimestampQueryInsidePasses);
SAME_VALUE(MapAsyncStatus::Success, WGPUMapAsyncStatus_Success);
SAME_VALUE(PopErrorScopeStatus::Success, WGPUPopErrorScopeStatus_Success);
SAME_VALUE(QueryType::Timestamp, WGPUQueryType_Timestamp);
SAME_VALUE(QueueWorkDoneStatus::Success, WGPUQueueWorkDoneStatus_Success);
SAME_VALUE(RequestDeviceStatus::Success, WGPURequestDeviceStatus_Success);
SAME_VALUE(Status::Success, WGPUStatus_Success);
SAME_VALUE(SType::ShaderSourceWGSL, WGPUSType_ShaderSourceWGSL);
SAME_VALUE(SType::NativeInstanceExtras, WGPUSType_InstanceExtras);
SAME_VALUE(buffer_usage::kMapRead, WGPUBufferUsage_MapRead);
SAME_VALUE(buffer_usage::kCopySrc, WGPUBufferUsage_CopySrc);
SAME_VALUE(buffer_usage::kCopyDst, WGPUBufferUsage_CopyDst);
SAME_VALUE(buffer_usage::kUniform, WGPUBufferUsage_Uniform);
SAME_VALUE(buffer_usage::kStorage, WGPUBufferUsage_Storage);
SAME_VALUE(buffer_usage::kQueryResolve, WGPUBufferUsage_QueryResolve);
SAME_VALUE(kMapModeRead, WGPUMapMode_Read);
SAME_VALUE(kShaderStageCompute, WGPUShaderStage_Compute);
SAME_VALUE(kNativeBackendsPrimary, WGPUInstanceBackend_Primary);

// Functions: the same number of parameters, and each of the same size and alignment (the types
// themselves differ by name: wgml's live in namespace api).
template <class T>
constexpr size_t size_or_zero() {
  if constexpr (std::is_void_v<T>) return 0;
  else return sizeof(T);
}

template <class A, class B>
struct SameShape : std::false_type {};
template <class RA, class... PA, class RB, class... PB>
struct SameShape<RA (*)(PA...), RB (*)(PB...)>
    : std::bool_constant<size_or_zero<RA>() == size_or_zero<RB>() &&
                         sizeof...(PA) == sizeof...(PB) &&
                         ((sizeof(PA) == sizeof(PB) && alignof(PA) == alignof(PB)) && ...)> {};

#define SAME_FUNCTION(ret, name, ...) \
  static_assert(SameShape<decltype(Functions::name), decltype(&::wgpu##name)>::value, #name);
WGML_WEBGPU_FUNCTIONS(SAME_FUNCTION)

TEST(WebGpuAbi, DeclarationsMatchTheImplementationHeaders) {
  // Everything is checked at compile time above; this records that the check was built.
  SUCCEED();
}

}  // namespace
}  // namespace wgml::gpu::api
