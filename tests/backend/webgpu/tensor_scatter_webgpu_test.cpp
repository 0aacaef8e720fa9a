// ONNX TensorScatter on the GPU (lavapipe in CI) against the CPU reference, with the project's spec
// and the seed spec loaded unchanged: both modes, with and without write indices, every type of
// typeConstraints (float16 where the device has shader-f16, else a clear "not supported on this
// device"), several axes and ranks, element counts divisible and not divisible by 4, a batch with
// different indices per row, the in-place variant, and out-of-range indices (an error, not
// corruption).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "backend/cpu/onnx/tensor_scatter.h"
#include "backend/webgpu/gpu_tensor.h"
#include "backend/webgpu/plan_runner.h"
#include "core/device_data.h"
#include "core/elements.h"
#include "support/tensor_scatter_matrix.h"
#include "webgpu_test_support.h"

namespace wgml::backend::webgpu {
namespace {

using ::testing::HasSubstr;

const std::string kKernels = std::string(WGML_SOURCE_DIR) + "/kernels";
const std::string kSeed = std::string(WGML_SOURCE_DIR) + "/tests/fixtures/seeds/TensorScatter.json";

using Geometry = wgml::testing::ScatterGeometry;

class TensorScatterOnGpu : public testing::WebGpuTest {
 protected:
  static void SetUpTestSuite() {
    engine_ = new kernel::Engine(kKernels + "/wgsl");
    specs_ = {{"ours", engine_->load(kKernels + "/specs/ai.onnx/TensorScatter.json").front()},
              {"seed", engine_->load(kSeed).front()}};
  }
  static void TearDownTestSuite() {
    specs_.clear();
    delete engine_;
  }

  // Runs one TensorScatter on the GPU; `in_place` lets present share past's buffer.
  Tensor run(const kernel::KernelSpec& spec, const Tensor& past, const Tensor& update, const Tensor* indices, int64_t axis,
             const std::string& mode, bool in_place = false) {
    kernel::KernelRequest r;
    r.inputs["past"] = {past.dtype(), past.shape()};
    r.inputs["update"] = {update.dtype(), update.shape()};
    std::map<std::string, Tensor> inputs{{"past", past}, {"update", update}};
    if (indices) {
      r.inputs["writeIndices"] = {indices->dtype(), indices->shape()};
      inputs["writeIndices"] = *indices;
    }
    r.attributes["axis"] = kernel::Value(axis);
    r.attributes["mode"] = kernel::Value(mode);
    if (in_place) r.may_alias.emplace_back("past", "present");
    const kernel::KernelPlan plan = engine_->plan(spec, r, gpu()->caps());
    return run_plan(gpu(), plan, inputs).at("present");
  }

  static kernel::Engine* engine_;
  static std::vector<std::pair<std::string, std::shared_ptr<const kernel::KernelSpec>>> specs_;
};

kernel::Engine* TensorScatterOnGpu::engine_ = nullptr;
std::vector<std::pair<std::string, std::shared_ptr<const kernel::KernelSpec>>> TensorScatterOnGpu::specs_;

// Write indices that differ per batch row and keep a linear write inside the axis.
Tensor indices_for(const Geometry& g, const std::string& mode) {
  const int64_t batch = g.past[0];
  const int rank = static_cast<int>(g.past.size());
  const int axis = static_cast<int>(g.axis < 0 ? g.axis + rank : g.axis);
  const int64_t room = g.past[axis] - g.update[axis];
  Tensor t(DType::Int64, {batch});
  for (int64_t b = 0; b < batch; ++b)
    t.mutable_data_as<int64_t>()[b] = mode == "circular" ? (3 * b + g.past[axis] - 1) : (b % (room + 1));
  return t;
}

TEST_F(TensorScatterOnGpu, MatchesTheCpuReferenceOverTheWholeMatrix) {
  std::mt19937 rng(7);
  int ran = 0;
  for (DType dtype : wgml::testing::kScatterTypes)
    for (const Geometry& g : wgml::testing::kScatterGeometries)
      for (const char* mode : {"linear", "circular"})
        for (bool with_indices : {false, true}) {
          const Tensor past = testing::random_tensor(dtype, g.past, rng);
          const Tensor update = testing::random_tensor(dtype, g.update, rng);
          const Tensor indices = indices_for(g, mode);
          const Tensor* w = with_indices ? &indices : nullptr;
          const Tensor want = wgml::cpu::onnx::tensor_scatter(past, update, w, g.axis, mode);
          for (const auto& [name, spec] : specs_) {
            const std::string what = name + " " + std::string(dtype_name(dtype)) + " axis " + std::to_string(g.axis) + " " +
                                     mode + (with_indices ? " with indices" : "");
            if (dtype == DType::Float16 && !gpu()->caps().shader_f16) {
              EXPECT_THAT(testing::testing_error([&] { run(*spec, past, update, w, g.axis, mode); }),
                          HasSubstr("not supported on this device"))
                  << what;
              continue;
            }
            testing::expect_same_tensor(run(*spec, past, update, w, g.axis, mode), want, what);
            ++ran;
          }
        }
  EXPECT_GT(ran, 0);
}

TEST_F(TensorScatterOnGpu, InPlaceUpdateWritesIntoThePastBuffer) {
  std::mt19937 rng(11);
  const Geometry g{{2, 8, 4}, {2, 1, 4}, 1};
  for (const auto& [name, spec] : specs_) {
    const Tensor past_host = testing::random_tensor(DType::Float32, g.past, rng);
    const Tensor update = testing::random_tensor(DType::Float32, g.update, rng);
    const Tensor indices = indices_for(g, "linear");
    const Tensor want = wgml::cpu::onnx::tensor_scatter(past_host, update, &indices, g.axis, "linear");
    // A past that lives only on the GPU, as a KV cache does between decode steps.
    const auto before = on_gpu(gpu(), past_host, *kernel::default_storage(DType::Float32), "past", std::nullopt);
    const Tensor past = TensorDeviceAccess::on_device(DType::Float32, g.past, before);
    const Tensor present = run(*spec, past, update, &indices, g.axis, "linear", /*in_place=*/true);
    const auto after = std::dynamic_pointer_cast<const GpuTensorData>(TensorDeviceAccess::device_data(present));
    ASSERT_TRUE(after) << name;
    EXPECT_EQ(after->buffer(), before->buffer()) << name << ": present must share past's buffer";
    testing::expect_same_tensor(present, want, name + " in place");
  }
}

TEST_F(TensorScatterOnGpu, OutOfRangeIndicesAreAnErrorNamingTheIndex) {
  std::mt19937 rng(3);
  const Geometry g{{2, 8, 4}, {2, 3, 4}, 1};
  const Tensor past = testing::random_tensor(DType::Int32, g.past, rng);
  const Tensor update = testing::random_tensor(DType::Int32, g.update, rng);
  Tensor indices(DType::Int64, {2});
  indices.mutable_data_as<int64_t>()[0] = 1;
  indices.mutable_data_as<int64_t>()[1] = 6;  // 6 + 3 > 8
  for (const auto& [name, spec] : specs_) {
    if (name == "seed") continue;  // the seed declares no valueRange: its kernel drops such writes
    EXPECT_THAT(testing::testing_error([&] { run(*spec, past, update, &indices, g.axis, "linear"); }), HasSubstr("writeIndices"))
        << name;
  }
  Tensor negative(DType::Int64, {2});
  negative.mutable_data_as<int64_t>()[0] = -1;
  for (const auto& [name, spec] : specs_)
    EXPECT_THAT(testing::testing_error([&] { run(*spec, past, update, &negative, g.axis, "linear"); }), HasSubstr("writeIndices"))
        << name;
}

}  // namespace
}  // namespace wgml::backend::webgpu
