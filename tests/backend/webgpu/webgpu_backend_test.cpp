// The WebGPU backend as the executor drives it: plans made once per distinct request and reused
// across runs, and results that stay on the GPU until read.
#include <gtest/gtest.h>

#include "backend/webgpu/gpu_tensor.h"
#include "core/device_data.h"
#include "frontend/load_model.h"
#include "io/npy.h"
#include "runtime/executor.h"
#include "webgpu_test_support.h"

namespace wgml::backend::webgpu {
namespace {

const std::string kFixture = std::string(WGML_SOURCE_DIR) + "/tests/fixtures/pte/elementwise_layout/";

class WebGpuBackendTest : public testing::WebGpuTest {
 protected:
  std::vector<Value> inputs() const {
    return {io::read_npy(kFixture + "step0_input_0.npy", DType::Float32),
            io::read_npy(kFixture + "step0_input_1.npy", DType::Float32)};
  }
};

TEST_F(WebGpuBackendTest, PlansAreMadeOnceAndReusedAcrossRuns) {
  auto model = std::make_shared<ir::Model>(frontend::load_model(kFixture + "model.pte"));
  runtime::Executor executor(model, backend());
  const std::vector<Value> first = executor.run(inputs());
  const size_t planned = gpu()->cached_plans();
  EXPECT_GT(planned, 0u);
  const std::vector<Value> second = executor.run(inputs());
  EXPECT_EQ(gpu()->cached_plans(), planned) << "the second run planned again";
  for (size_t i = 0; i < first.size(); ++i)
    testing::expect_same_tensor(std::get<Tensor>(second[i]), std::get<Tensor>(first[i]), "output " + std::to_string(i));
}

TEST_F(WebGpuBackendTest, OutputsStayOnTheGpuUntilRead) {
  auto model = std::make_shared<ir::Model>(frontend::load_model(kFixture + "model.pte"));
  runtime::Executor executor(model, backend());
  const std::vector<Value> outputs = executor.run(inputs());
  for (const Value& v : outputs) {
    const Tensor& t = std::get<Tensor>(v);
    EXPECT_TRUE(std::dynamic_pointer_cast<const GpuTensorData>(TensorDeviceAccess::device_data(t)));
  }
}

}  // namespace
}  // namespace wgml::backend::webgpu
