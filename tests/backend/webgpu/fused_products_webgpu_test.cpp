// Products fused at load (runtime/fusion.h) on the GPU: a Llama MLP's gate and up projections and
// their SwiGLU as one kernel (wgml.QuantizedSwiGlu, wgml.MatmulSwiGlu) give what the four
// instructions they replace give: to the bit against those instructions' own GPU kernels, and
// within rounding against the CPU reference, which never fuses. Also a quantized embedding's
// lookup (three Takes and a Dequantize) as one Dequantize of the gathered rows.
#include <gtest/gtest.h>

#include <random>

#include "backend/cpu/cpu_backend.h"
#include "backend/webgpu/plan_runner.h"
#include "core/elements.h"
#include "runtime/executor.h"
#include "webgpu_test_support.h"

namespace wgml::backend::webgpu {
namespace {

using Operands = std::map<std::string, Tensor>;
using Attributes = std::map<std::string, kernel::Value>;

// Floats uniform in [-bound, bound] as a tensor of dtype `t`.
Tensor random_floats(DType t, const Shape& shape, float bound, std::mt19937& rng) {
  Tensor f(DType::Float32, shape);
  std::uniform_real_distribution<float> value(-bound, bound);
  for (int64_t i = 0; i < f.numel(); ++i) f.mutable_data_as<float>()[i] = value(rng);
  return cast(f, t);
}

kernel::KernelRequest request_of(const Operands& operands, Attributes attributes = {}) {
  kernel::KernelRequest r;
  for (const auto& [name, tensor] : operands) r.inputs[name] = {tensor.dtype(), tensor.shape()};
  r.attributes = std::move(attributes);
  return r;
}

class FusedProductsTest : public testing::WebGpuTest {
 protected:
  // The fused kernels' dtypes: float16 runs the unfused instructions (the specs say why).
  std::vector<DType> float_dtypes() { return {DType::Float32, DType::BFloat16}; }
  Tensor run(const std::string& domain, const std::string& op, const Operands& operands, Attributes attributes = {}) {
    return run_plan(gpu(), plan(domain, op, request_of(operands, std::move(attributes))), operands).at("out");
  }
  // Silu(gate) * up by the Silu and Multiply kernels.
  Tensor silu_times(const Tensor& gate, const Tensor& up) {
    return run("mlx", "Multiply", {{"a", run("mlx", "Silu", {{"x", gate}})}, {"b", up}});
  }
};

// x [1, m, k] and two 4-bit matrices [n, k] with their scales and biases (groups of `group`), the
// up matrix's operands named with "_up".
Operands quantized_pair(DType t, int64_t m, int64_t k, int64_t n, int64_t group, std::mt19937& rng) {
  Operands o = {{"x", random_floats(t, {1, m, k}, 1.0f, rng)}};
  for (const std::string suffix : {"", "_up"}) {
    o["w" + suffix] = testing::random_tensor(DType::UInt32, {n, k / 8}, rng);
    // Sums of a few units either side of 0, where Silu is neither 0 nor the identity.
    o["scales" + suffix] = random_floats(t, {n, k / group}, 0.02f, rng);
    o["biases" + suffix] = random_floats(t, {n, k / group}, 0.1f, rng);
  }
  return o;
}

Attributes four_bits(int64_t group) { return {{"group_size", kernel::Value(group)}, {"bits", kernel::Value(int64_t{4})}}; }

TEST_F(FusedProductsTest, QuantizedSwiGluEqualsBothProductsThenSiluAndMultiplyToTheBit) {
  std::mt19937 rng(11);
  // (rows of x, k, n): one row, 2 outputs of each matrix a workgroup (k under a chunk an
  // invocation), and 4 (k = 4096); 3 rows (the class of 4, 2 outputs each) and n not a multiple
  // of them; 8 rows, one output each, in groups of 64.
  for (DType t : float_dtypes())
    for (const auto& [m, k, n] : std::vector<std::array<int64_t, 3>>{{1, 256, 20}, {1, 4096, 11}, {3, 128, 38}, {8, 512, 9}}) {
      const int64_t group = k >= 512 ? 64 : 32;
      const Operands pair = quantized_pair(t, m, k, n, group, rng);
      const std::string what = std::string(dtype_name(t)) + " m=" + std::to_string(m) + " n=" + std::to_string(n);
      const Tensor fused = run("wgml", "QuantizedSwiGlu", pair, four_bits(group));
      const auto product = [&](const std::string& suffix) {
        return run("mlx", "QuantizedMatmul",
                   {{"x", pair.at("x")},
                    {"w", pair.at("w" + suffix)},
                    {"scales", pair.at("scales" + suffix)},
                    {"biases", pair.at("biases" + suffix)}},
                   four_bits(group));
      };
      ASSERT_EQ(fused.shape(), (Shape{1, m, n})) << what;
      testing::expect_same_tensor(fused, silu_times(product(""), product("_up")), what);
    }
}

TEST_F(FusedProductsTest, MatmulSwiGluEqualsBothProductsThenSiluAndMultiplyToTheBit) {
  std::mt19937 rng(12);
  // (rows, k, n): vec4 columns; n not a multiple of 4 (scalar columns) and 2 rows; 8 column
  // groups a workgroup (n >= 4096) and 5 rows.
  for (DType t : float_dtypes())
    for (const auto& [m, k, n] : std::vector<std::array<int64_t, 3>>{{1, 64, 36}, {2, 100, 10}, {5, 24, 4096}}) {
      const Tensor x = random_floats(t, {1, m, k}, 1.0f, rng);
      const Tensor gate = random_floats(t, {k, n}, 0.3f, rng), up = random_floats(t, {k, n}, 0.3f, rng);
      const std::string what = std::string(dtype_name(t)) + " m=" + std::to_string(m) + " n=" + std::to_string(n);
      const Tensor fused = run("wgml", "MatmulSwiGlu", {{"mat1", x}, {"mat2", gate}, {"mat2_up", up}});
      ASSERT_EQ(fused.shape(), (Shape{1, m, n})) << what;
      const Tensor in_steps =
          silu_times(run("mlx", "Addmm", {{"mat1", x}, {"mat2", gate}}), run("mlx", "Addmm", {{"mat1", x}, {"mat2", up}}));
      testing::expect_same_tensor(fused, in_steps, what);
    }
}

TEST_F(FusedProductsTest, MatmulProductsEqualTheThreeProductsToTheBit) {
  std::mt19937 rng(18);
  const std::array<std::string, 3> suffixes = {"_q", "_k", "_v"};
  // (rows, k, n of each matrix): one block each; 3 rows and columns not a multiple of a block; an
  // 8B-like q (8 column groups) beside k and v of 4; K deep enough for the unrolled loads.
  for (DType t : {DType::Float32, DType::BFloat16, DType::Float16}) {
    if (t == DType::Float16 && !gpu()->caps().shader_f16) continue;
    for (const auto& [m, k, n] : std::vector<std::tuple<int64_t, int64_t, std::array<int64_t, 3>>>{
             {1, 64, {64, 16, 16}}, {3, 100, {40, 8, 12}}, {1, 40, {4096, 1024, 1024}}, {2, 1100, {64, 16, 16}}}) {
      Operands o = {{"mat1", random_floats(t, {1, m, k}, 1.0f, rng)}};
      for (size_t s = 0; s < 3; ++s) o["mat2" + suffixes[s]] = random_floats(t, {k, n[s]}, 0.3f, rng);
      const std::string what = std::string(dtype_name(t)) + " m=" + std::to_string(m) + " k=" + std::to_string(k);
      const std::map<std::string, Tensor> outputs = run_plan(gpu(), plan("wgml", "MatmulProducts", request_of(o)), o);
      for (const std::string& suffix : suffixes)
        testing::expect_same_tensor(outputs.at("out" + suffix),
                                    run("mlx", "Addmm", {{"mat1", o.at("mat1")}, {"mat2", o.at("mat2" + suffix)}}),
                                    what + " out" + suffix);
    }
  }
}

// x [1, m, k] and three 4-bit matrices of `rows` rows each (suffixes _q, _k, _v).
Operands quantized_triple(DType t, int64_t m, int64_t k, const std::array<int64_t, 3>& rows, int64_t group, std::mt19937& rng) {
  Operands o = {{"x", random_floats(t, {1, m, k}, 1.0f, rng)}};
  const char* suffixes[] = {"_q", "_k", "_v"};
  for (size_t s = 0; s < 3; ++s) {
    o[std::string("w") + suffixes[s]] = testing::random_tensor(DType::UInt32, {rows[s], k / 8}, rng);
    o[std::string("scales") + suffixes[s]] = random_floats(t, {rows[s], k / group}, 0.05f, rng);
    o[std::string("biases") + suffixes[s]] = random_floats(t, {rows[s], k / group}, 0.1f, rng);
  }
  return o;
}

TEST_F(FusedProductsTest, QuantizedProductsEqualTheThreeProductsToTheBit) {
  std::mt19937 rng(12);
  // (rows of x, k, rows of each matrix): a Llama's q wider than k and v; rows not a multiple of
  // a workgroup's outputs (for one row of x 4, or 8 at k = 4096; 4 for 3 rows, 2 for 8); groups
  // of 64.
  for (DType t : {DType::Float32, DType::BFloat16, DType::Float16}) {
    if (t == DType::Float16 && !gpu()->caps().shader_f16) continue;
    for (const auto& [m, k, rows] : std::vector<std::tuple<int64_t, int64_t, std::array<int64_t, 3>>>{
             {1, 256, {64, 16, 16}}, {1, 4096, {20, 12, 5}}, {3, 128, {38, 10, 21}}, {8, 512, {9, 9, 3}}}) {
      const int64_t group = k >= 512 ? 64 : 32;
      const Operands triple = quantized_triple(t, m, k, rows, group, rng);
      const std::string what = std::string(dtype_name(t)) + " m=" + std::to_string(m);
      const kernel::KernelPlan& fused = plan("wgml", "QuantizedProducts", request_of(triple, four_bits(group)));
      const std::map<std::string, Tensor> outputs = run_plan(gpu(), fused, triple);
      for (const std::string suffix : {"_q", "_k", "_v"}) {
        const Tensor alone = run("mlx", "QuantizedMatmul",
                                 {{"x", triple.at("x")},
                                  {"w", triple.at("w" + suffix)},
                                  {"scales", triple.at("scales" + suffix)},
                                  {"biases", triple.at("biases" + suffix)}},
                                 four_bits(group));
        testing::expect_same_tensor(outputs.at("out" + suffix), alone, what + " out" + suffix);
      }
    }
  }
}

// QMV_UNROLL loads several chunks before summing any, in the order one at a time sums them: each of
// the three QMV ops gives the same bits with 2 and 4 chunks an iteration as with 1, where K leaves
// the last iteration short (K = 5120: 160 chunks, an iteration of 2 or 4 taking 128 or 256 with
// 2 parts a chunk and 128 invocations).
TEST_F(FusedProductsTest, UnrolledQmvChunksGiveTheSameBits) {
  std::mt19937 rng(31);
  const int64_t k = 5120, group = 64;
  const Operands pair = quantized_pair(DType::BFloat16, 1, k, 40, group, rng);
  const Operands triple = quantized_triple(DType::BFloat16, 2, k, {24, 8, 8}, group, rng);
  const Operands lone = {{"x", pair.at("x")}, {"w", pair.at("w")}, {"scales", pair.at("scales")}, {"biases", pair.at("biases")}};
  const std::vector<std::tuple<std::string, std::string, const Operands*>> ops = {
      {"mlx", "QuantizedMatmul", &lone}, {"wgml", "QuantizedSwiGlu", &pair}, {"wgml", "QuantizedProducts", &triple}};
  const auto outputs_with = [&](int unroll) {
    GpuOptions options;
    for (const auto& [domain, op, operands] : ops) options.tunables.push_back(op + ".QMV_UNROLL=" + std::to_string(unroll));
    const WebGpuBackend unrolled(options);
    const std::shared_ptr<GpuContext>& context = unrolled.context();
    std::vector<std::map<std::string, Tensor>> outputs;
    for (const auto& [domain, op, operands] : ops) {
      const kernel::KernelPlan& p = context->plan(*context->engine().find(domain, op), request_of(*operands, four_bits(group)));
      EXPECT_NE(p.passes.at(0).wgsl->find("const UNROLL: u32 = " + std::to_string(unroll) + "u;"), std::string::npos) << op;
      outputs.push_back(run_plan(context, p, *operands));
    }
    return outputs;
  };
  const auto one = outputs_with(1);
  for (const int unroll : {2, 4}) {
    const auto unrolled = outputs_with(unroll);
    for (size_t o = 0; o < ops.size(); ++o)
      for (const auto& [name, tensor] : one[o])
        testing::expect_same_tensor(unrolled[o].at(name), tensor,
                                    std::get<1>(ops[o]) + " " + name + ", " + std::to_string(unroll) + " chunks unrolled");
  }
}

TEST_F(FusedProductsTest, MoreThanEightRowsOrMatricesOfTwoShapesDoNotFit) {
  std::mt19937 rng(13);
  Operands pair = quantized_pair(DType::Float32, 9, 64, 8, 32, rng);
  EXPECT_NE(testing::testing_error([&] { plan("wgml", "QuantizedSwiGlu", request_of(pair, four_bits(32))); }).find("M <= 8"),
            std::string::npos);
  pair = quantized_pair(DType::Float32, 1, 64, 8, 32, rng);
  pair["w_up"] = testing::random_tensor(DType::UInt32, {9, 8}, rng);
  EXPECT_NE(testing::testing_error([&] {
              plan("wgml", "QuantizedSwiGlu", request_of(pair, four_bits(32)));
            }).find("shapes.w_up == shapes.w"),
            std::string::npos);
}

// A Llama MLP's SwiGLU as exported: `products` (of `inputs` inputs, x first) write the gate to
// the first temp (slot inputs + 1) and up to the second, then Silu(gate) * up is the output
// (slot inputs).
std::shared_ptr<ir::Model> mlp_model(std::vector<ir::Instruction> products, uint32_t inputs) {
  const uint32_t out = inputs;
  const ir::Tid gate{inputs + 1}, up{inputs + 2}, activated{inputs + 3};
  auto model = std::make_shared<ir::Model>();
  model->path = "swiglu";
  model->format = ir::ModelFormat::Payload;
  ir::Program& p = model->program;
  p.num_input_tensors = inputs;
  p.num_output_tensors = 1;
  p.num_temp_tensors = 3;
  for (uint32_t i = 0; i < inputs; ++i) p.inputs.push_back({i, ir::SlotType::Tensor});
  p.outputs.push_back({out, ir::SlotType::Tensor});
  ir::Chain main;
  main.instructions = std::move(products);
  main.instructions.emplace_back(ir::Node(ir::SiluNode{gate, activated}));
  main.instructions.emplace_back(ir::Node(ir::MultiplyNode{activated, up, ir::Tid{out}}));
  p.chains.push_back(std::move(main));
  return model;
}

// The MLP on the GPU (fused: its Silu never runs) and on the CPU (as exported), within a few
// roundings of the dtype of each other.
void expect_gpu_fuses_and_matches_cpu(WebGpuBackend& gpu, const std::shared_ptr<ir::Model>& model,
                                      const std::vector<Tensor>& inputs, const std::string& fused_op, const std::string& what) {
  std::vector<Value> values(inputs.begin(), inputs.end());
  runtime::Executor on_gpu(model, gpu);
  on_gpu.profile(true);
  const std::vector<Value> gpu_outputs = on_gpu.run(values);
  EXPECT_EQ(on_gpu.op_times().count(fused_op), 1u) << what;
  EXPECT_EQ(on_gpu.op_times().count("SiluNode") + on_gpu.op_times().count("QuantizedMatmulNode"), 0u)
      << what << ": the fused instructions ran";
  const cpu::CpuBackend cpu;
  const std::vector<Value> cpu_outputs = runtime::Executor(model, cpu).run(values);
  ASSERT_EQ(gpu_outputs.size(), cpu_outputs.size()) << what;
  for (size_t o = 0; o < gpu_outputs.size(); ++o) {
    const Tensor& got = std::get<Tensor>(gpu_outputs[o]);
    const Tensor& want = std::get<Tensor>(cpu_outputs[o]);
    ASSERT_EQ(got.shape(), want.shape()) << what << " output " << o;
    const std::vector<float> g = to_floats(got), w = to_floats(want);
    const float rel = got.dtype() == DType::Float32 ? 1e-5f : got.dtype() == DType::Float16 ? 4e-3f : 3e-2f;
    float scale = 0;
    for (float v : w) scale = std::max(scale, std::fabs(v));
    size_t far = 0;
    for (size_t i = 0; i < g.size(); ++i) far += std::fabs(g[i] - w[i]) > rel * (std::fabs(w[i]) + 0.05f * scale);
    EXPECT_EQ(far, 0u) << what << " output " << o
                       << ": elements further from the CPU reference than the dtype's rounding explains";
    EXPECT_GT(scale, 0.0f) << what << " output " << o;
  }
}

// `products` over `inputs` input slots, each product's output a program output (slots `inputs` on).
std::shared_ptr<ir::Model> products_model(std::vector<ir::Instruction> products, uint32_t inputs) {
  auto model = std::make_shared<ir::Model>();
  model->path = "products";
  model->format = ir::ModelFormat::Payload;
  ir::Program& p = model->program;
  p.num_input_tensors = inputs;
  p.num_output_tensors = static_cast<uint32_t>(products.size());
  for (uint32_t i = 0; i < inputs; ++i) p.inputs.push_back({i, ir::SlotType::Tensor});
  for (uint32_t o = 0; o < products.size(); ++o) p.outputs.push_back({inputs + o, ir::SlotType::Tensor});
  ir::Chain main;
  main.instructions = std::move(products);
  p.chains.push_back(std::move(main));
  return model;
}

TEST_F(FusedProductsTest, AFourBitMlpRunsFusedOnTheGpuAndMatchesTheCpuReference) {
  std::mt19937 rng(14);
  const int64_t k = 128, n = 44;
  std::vector<ir::Instruction> products;
  for (uint32_t s = 0; s < 2; ++s)  // the gate from inputs 1-3 to slot 8, up from 4-6 to slot 9
    products.emplace_back(ir::Node(ir::QuantizedMatmulNode{ir::Tid{0}, ir::Tid{1 + 3 * s}, ir::Tid{2 + 3 * s}, ir::Tid{8 + s},
                                                           ir::Tid{3 + 3 * s}, 32, 4, "affine", true}));
  for (DType t : float_dtypes())
    for (int64_t m : {1, 4}) {
      const Operands pair = quantized_pair(t, m, k, n, 32, rng);
      const std::vector<Tensor> inputs = {pair.at("x"),    pair.at("w"),         pair.at("scales"),   pair.at("biases"),
                                          pair.at("w_up"), pair.at("scales_up"), pair.at("biases_up")};
      expect_gpu_fuses_and_matches_cpu(backend(), mlp_model(products, 7), inputs, "wgml.QuantizedSwiGlu",
                                       std::string(dtype_name(t)) + " m=" + std::to_string(m));
    }
}

TEST_F(FusedProductsTest, QKVProductsRunFusedOnTheGpuAndMatchTheCpuReference) {
  std::mt19937 rng(16);
  const int64_t k = 128;
  const std::array<int64_t, 3> rows = {48, 16, 16};
  std::vector<ir::Instruction> products;
  for (uint32_t s = 0; s < 3; ++s)  // w, scales and biases of product s: inputs 1 + 3s to 3 + 3s; out: slot 10 + s
    products.emplace_back(ir::Node(ir::QuantizedMatmulNode{ir::Tid{0}, ir::Tid{1 + 3 * s}, ir::Tid{2 + 3 * s}, ir::Tid{10 + s},
                                                           ir::Tid{3 + 3 * s}, 32, 4, "affine", true}));
  for (DType t : float_dtypes())
    for (int64_t m : {1, 4}) {
      const Operands triple = quantized_triple(t, m, k, rows, 32, rng);
      std::vector<Tensor> inputs = {triple.at("x")};
      for (const std::string suffix : {"_q", "_k", "_v"})
        for (const std::string name : {"w", "scales", "biases"}) inputs.push_back(triple.at(name + suffix));
      expect_gpu_fuses_and_matches_cpu(backend(), products_model(products, 10), inputs, "wgml.QuantizedProducts",
                                       std::string(dtype_name(t)) + " m=" + std::to_string(m));
    }
}

TEST_F(FusedProductsTest, AnAddmmMlpRunsFusedOnTheGpuAndMatchesTheCpuReference) {
  std::mt19937 rng(15);
  std::vector<ir::Instruction> products;
  for (uint32_t s = 0; s < 2; ++s)  // mat2 of the gate (input 1) to slot 4, of up (input 2) to 5
    products.emplace_back(ir::Node(ir::AddmmNode{ir::Tid{0}, ir::Tid{1 + s}, ir::Tid{4 + s}, std::nullopt, 1.0f, 1.0f}));
  // (rows, k, n): a few K slices each; K deep enough for the GEMV's unrolled loads (16 a slice,
  // 64 slices from K = 8192) several times, with a tail.
  for (DType t : float_dtypes())
    for (const auto& [m, k, n] : std::vector<std::array<int64_t, 3>>{{1, 96, 52}, {3, 96, 52}, {1, 8200, 24}}) {
      const std::vector<Tensor> inputs = {random_floats(t, {1, m, k}, 1.0f, rng), random_floats(t, {k, n}, 0.3f, rng),
                                          random_floats(t, {k, n}, 0.3f, rng)};
      expect_gpu_fuses_and_matches_cpu(backend(), mlp_model(products, 3), inputs, "wgml.MatmulSwiGlu",
                                       std::string(dtype_name(t)) + " m=" + std::to_string(m) + " k=" + std::to_string(k));
    }
}

TEST_F(FusedProductsTest, DenseQKVProductsRunFusedOnTheGpuAndMatchTheCpuReference) {
  std::mt19937 rng(19);
  const int64_t k = 64;
  const std::array<int64_t, 3> rows = {48, 16, 16};
  // Weights [n, k] (inputs 1-3) transposed into temps 7-9, as an export reads nn.Linear's weights,
  // each product of x (input 0) into an output (slots 4-6).
  std::vector<ir::Instruction> chain;
  for (uint32_t s = 0; s < 3; ++s) {
    chain.emplace_back(ir::Node(ir::TransposeNode{ir::Tid{1 + s}, ir::Tid{7 + s}, {1, 0}}));
    chain.emplace_back(ir::Node(ir::AddmmNode{ir::Tid{0}, ir::Tid{7 + s}, ir::Tid{4 + s}, std::nullopt, 1.0f, 1.0f}));
  }
  auto model = products_model(std::move(chain), 4);
  model->program.num_output_tensors = 3;
  model->program.outputs.resize(3);
  model->program.num_temp_tensors = 3;
  for (DType t : float_dtypes())
    for (int64_t m : {1, 4}) {
      std::vector<Tensor> inputs = {random_floats(t, {1, m, k}, 1.0f, rng)};
      for (int64_t n : rows) inputs.push_back(random_floats(t, {n, k}, 0.3f, rng));
      expect_gpu_fuses_and_matches_cpu(backend(), model, inputs, "wgml.MatmulProducts",
                                       std::string(dtype_name(t)) + " m=" + std::to_string(m));
    }
}

// A 4-bit embedding's lookup: Take(w, ids), Take(scales, ids), Take(biases, ids) then Dequantize,
// the ids an input (slot 3), the tables inputs 0-2, the rows out in slot 4.
std::shared_ptr<ir::Model> lookup_model() {
  std::vector<ir::Instruction> chain;
  for (uint32_t t = 0; t < 3; ++t)
    chain.emplace_back(
        ir::Node(ir::TakeNode{ir::Tid{t}, ir::Tid{5 + t}, ir::IntOrVidOrTid{0, {}, ir::Tid{3}, ir::IntOrVidOrTid::Tensor}, 0}));
  chain.emplace_back(
      ir::Node(ir::DequantizeNode{ir::Tid{5}, ir::Tid{6}, ir::Tid{4}, ir::Tid{7}, 32, 4, "affine", std::nullopt, std::nullopt}));
  auto model = products_model(std::move(chain), 4);
  model->program.num_output_tensors = 1;
  model->program.outputs.resize(1);
  model->program.num_temp_tensors = 3;
  return model;
}

TEST_F(FusedProductsTest, AQuantizedEmbeddingsLookupRunsAsOneDequantizeAndMatchesTheCpuReference) {
  std::mt19937 rng(17);
  const int64_t vocab = 50, k = 128;
  for (DType t : {DType::Float32, DType::BFloat16}) {
    Tensor ids(DType::Int64, {1, 3});
    for (int64_t i = 0; i < 3; ++i) ids.mutable_data_as<int64_t>()[i] = (17 * i + 5) % vocab;
    const std::vector<Tensor> inputs = {testing::random_tensor(DType::UInt32, {vocab, k / 8}, rng),
                                        random_floats(t, {vocab, k / 32}, 0.02f, rng),
                                        random_floats(t, {vocab, k / 32}, 0.1f, rng), ids};
    expect_gpu_fuses_and_matches_cpu(backend(), lookup_model(), inputs, "mlx.Dequantize", std::string(dtype_name(t)));
  }
}

}  // namespace
}  // namespace wgml::backend::webgpu
