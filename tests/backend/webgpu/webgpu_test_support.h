#pragma once
// Shared by the WebGPU backend tests: one backend for the whole test program (its device made on
// first use), skipping with the reason where the machine has no WebGPU library or device; random
// tensors of any dtype; exact comparison of tensors.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/webgpu/webgpu_backend.h"
#include "wgml/tensor.h"

namespace wgml::backend::webgpu::testing {

// The process-wide backend, or null with skip_reason() saying why there is none.
WebGpuBackend* shared_backend();
const std::string& skip_reason();

class WebGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!shared_backend()) GTEST_SKIP() << skip_reason();
  }
  WebGpuBackend& backend() { return *shared_backend(); }
  const std::shared_ptr<GpuContext>& gpu() { return shared_backend()->context(); }
  // float32, bfloat16, and float16 where the device computes in it.
  std::vector<DType> device_float_dtypes() {
    std::vector<DType> all = {DType::Float32, DType::BFloat16};
    if (gpu()->caps().shader_f16) all.push_back(DType::Float16);
    return all;
  }
  // The plan of op `domain.op` for `request`, as the backend makes it.
  const kernel::KernelPlan& plan(const std::string& domain, const std::string& op, const kernel::KernelRequest& request) {
    return gpu()->plan(*gpu()->engine().find(domain, op), request);
  }
};

// Values spread over the dtype's range (small integers, floats in [-4, 4], bools).
Tensor random_tensor(DType dtype, const Shape& shape, std::mt19937& rng);

// The message of the wgml::Error `f` throws; a test failure (and "") when it throws none.
std::string testing_error(const std::function<void()>& f);

// Same dtype, shape and bytes (for floats: equal bit patterns, or both NaN).
void expect_same_tensor(const Tensor& got, const Tensor& want, const std::string& what);

}  // namespace wgml::backend::webgpu::testing
