// Greedy decoding's pick on the GPU (wgml.GreedyToken, WebGpuBackend::greedy_token) against the
// host's rule (greedy_index, which the CPU kernel and the sampler use): the last row's first
// maximum, NaN above every number, for rows shorter and longer than a workgroup, every float
// dtype, planted ties and NaNs. The token stays on the GPU with its range known, so a Take that
// reads it as an index uses it where it lies instead of reading it back to check it.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "backend/webgpu/gpu_tensor.h"
#include "backend/webgpu/plan_runner.h"
#include "core/device_data.h"
#include "core/elements.h"
#include "webgpu_test_support.h"

namespace wgml::backend::webgpu {
namespace {

class GreedyTokenTest : public testing::WebGpuTest {
 protected:
  // `host` (float32) in dtype `t` as a tensor that lives only on the GPU.
  Tensor on_device(const Tensor& host, DType t) {
    const Tensor x = cast(host, t);
    return TensorDeviceAccess::on_device(t, x.shape(), on_gpu(gpu(), x, *kernel::default_storage(t), "logits", std::nullopt));
  }
  // The GPU's pick from `host` (float32) held in dtype `t`.
  int64_t pick(const Tensor& host, DType t) { return backend().greedy_token(on_device(host, t)).data_as<int64_t>()[0]; }
  // Rows of `row` values near -2 with each case's values planted (positions, the value at each,
  // then the index the pick must give): the GPU's pick and the host's.
  void expect_planted_picks(int64_t row, const std::vector<std::tuple<std::vector<int64_t>, float, int64_t>>& cases) {
    for (DType t : device_float_dtypes())
      for (const auto& [positions, value, expected] : cases) {
        Tensor host(DType::Float32, {1, row});
        for (int64_t i = 0; i < row; ++i) host.mutable_data_as<float>()[i] = -2.0f + 1e-3f * static_cast<float>(i % 3 == 0);
        for (int64_t p : positions) host.mutable_data_as<float>()[p] = value;
        EXPECT_EQ(pick(host, t), expected) << dtype_name(t) << " row " << row << " value " << value;
        EXPECT_EQ(greedy_index(to_floats(cast(host, t))), expected) << dtype_name(t) << " value " << value << " (host)";
      }
  }
  // What the host picks from the last row of `x` as the GPU holds it.
  static int64_t host_pick(const Tensor& x) {
    const int64_t row = x.shape().back();
    return greedy_index(to_floats(x.flat_range(x.numel() - row, row)));
  }
};

Tensor random_rows(const Shape& shape, std::mt19937& rng) {
  Tensor t(DType::Float32, shape);
  std::normal_distribution<float> value(0.0f, 3.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data_as<float>()[i] = value(rng);
  return t;
}

TEST_F(GreedyTokenTest, PicksTheLastRowsFirstMaximumAsTheHostDoes) {
  std::mt19937 rng(5);
  const std::vector<Shape> shapes = {{1}, {1, 7}, {1, 1, 255}, {1, 256}, {1, 1, 257}, {3, 37}, {2, 1, 5003}};
  for (DType t : device_float_dtypes())
    for (const Shape& shape : shapes) {
      const Tensor x = on_device(random_rows(shape, rng), t);
      const Tensor token = backend().greedy_token(x);
      ASSERT_EQ(token.dtype(), DType::Int64);
      ASSERT_EQ(token.shape(), (Shape{1, 1}));
      EXPECT_EQ(token.data_as<int64_t>()[0], host_pick(x)) << dtype_name(t) << " " << shape.back();
    }
}

const float kNan = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

TEST_F(GreedyTokenTest, TiesGoToTheFirstIndexAndNanAboveEveryNumber) {
  expect_planted_picks(1000, {
                                 {{900, 17, 517}, 9.0f, 17},  // three equal maxima, lanes of different workgroup slots
                                 {{999, 998}, kInf, 998},     // infinity, twice
                                 {{640, 3, 700}, kNan, 3},    // the first NaN, not the largest number
                                 {{0}, -1.0f, 0},             // a row of -2 but for a larger first element
                             });
}

TEST_F(GreedyTokenTest, AVocabularysRowIsPickedInBlocksAsOneWorkgroupPicksIt) {
  // Llama 3's vocabulary: 126 blocks of 1024 values, then their picks. Equal maxima and NaNs in
  // different blocks, the earlier block's last and a later block's first values.
  const int64_t row = 128256;
  std::mt19937 rng(11);
  const Tensor x = on_device(random_rows({1, row}, rng), DType::Float32);
  EXPECT_EQ(plan("wgml", "GreedyToken",
                 [&] {
                   kernel::KernelRequest r;
                   r.inputs["logits"] = {DType::Float32, x.shape()};
                   return r;
                 }())
                .passes.size(),
            2u);
  expect_planted_picks(row, {
                                {{100000, 1023, 70000}, 9.0f, 1023},  // equal maxima in three blocks
                                {{128255, 1024}, kInf, 1024},         // the first value of the second block, and the last
                                {{120000, 3000, 90000}, kNan, 3000},  // the first NaN, not the largest number
                                {{0}, -1.0f, 0},
                            });
}

TEST_F(GreedyTokenTest, ATokenFedToATakeIsNotReadBackToBeChecked) {
  std::mt19937 rng(9);
  const Tensor logits = on_device(random_rows({1, 1, 300}, rng), DType::Float32);
  const Tensor table = testing::random_tensor(DType::Float32, {300, 8}, rng);
  const Tensor token = backend().greedy_token(logits);
  const uint64_t read_before = gpu()->counters().bytes_read;
  kernel::KernelRequest take;
  take.inputs["x"] = {table.dtype(), table.shape()};
  take.inputs["index"] = {token.dtype(), token.shape()};
  const Tensor row =
      run_plan(gpu(), gpu()->plan(*gpu()->engine().find("mlx", "Take"), take), {{"x", table}, {"index", token}}).at("out");
  EXPECT_EQ(gpu()->counters().bytes_read, read_before) << "the token was read back before the Take";
  EXPECT_FALSE(TensorDeviceAccess::has_host_bytes(token));
  const int64_t picked = token.data_as<int64_t>()[0];
  ASSERT_GE(picked, 0);
  ASSERT_LT(picked, 300);
  const Tensor expected = table.flat_range(picked * 8, 8).reshaped({1, 1, 8});
  testing::expect_same_tensor(row, expected, "the picked row");
}

}  // namespace
}  // namespace wgml::backend::webgpu
