#pragma once
// Shared by the GPU tests: one device for the whole test program (made on first use), skipping
// with the reason when the machine has no WebGPU library or no device at all, and helpers to move
// typed arrays through byte spans.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gpu/buffer_pool.h"
#include "gpu/device.h"
#include "gpu/gpu_error.h"
#include "gpu/pipeline_cache.h"
#include "gpu/recorder.h"

namespace wgml::gpu::testing {

// The process-wide device, pool and pipeline cache, or the reason there are none.
struct GpuContext {
  std::unique_ptr<Device> device;
  std::unique_ptr<BufferPool> pool;
  std::unique_ptr<PipelineCache> pipelines;
  std::string skip_reason;

  static GpuContext& get();
};

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GpuContext& context = GpuContext::get();
    if (!context.device) GTEST_SKIP() << context.skip_reason;
  }
  Device& device() { return *GpuContext::get().device; }
  BufferPool& pool() { return *GpuContext::get().pool; }
  PipelineCache& pipelines() { return *GpuContext::get().pipelines; }
};

template <class T>
std::span<const std::byte> bytes_of(const std::vector<T>& values) {
  return std::as_bytes(std::span<const T>(values));
}

template <class T>
std::span<const std::byte> bytes_of(const T& value) {
  return std::as_bytes(std::span<const T, 1>(&value, 1));
}

template <class T>
std::vector<T> values_of(const std::vector<std::byte>& bytes) {
  std::vector<T> values(bytes.size() / sizeof(T));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
  return values;
}

}  // namespace wgml::gpu::testing
