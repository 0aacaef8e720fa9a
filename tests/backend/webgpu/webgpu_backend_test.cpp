// The WebGPU backend as the executor drives it: plans made once per distinct request and reused
// across runs, and results that stay on the GPU until read.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <map>

#include "backend/webgpu/gpu_tensor.h"
#include "backend/webgpu/plan_runner.h"
#include "core/device_data.h"
#include "core/elements.h"
#include "core/half.h"
#include "frontend/load_model.h"
#include "io/npy.h"
#include "kernel/storage.h"
#include "runtime/executor.h"
#include "webgpu_test_support.h"
#include "wgml/session.h"

namespace wgml::backend::webgpu {
namespace {

const std::string kFixture = std::string(WGML_SOURCE_DIR) + "/tests/fixtures/pte/elementwise_layout/";

class WebGpuBackendTest : public testing::WebGpuTest {
 protected:
  // A copy of `host` that lives only on the GPU, widened as kernels write bfloat16.
  Tensor widened_on_gpu_only(const Tensor& host) {
    const Tensor t = Tensor::from_bytes(host.dtype(), host.shape(), host.data());
    on_gpu(gpu(), t, *kernel::default_storage(host.dtype()), "weight", std::nullopt);
    TensorDeviceAccess::drop_host_copy(t);
    return t;
  }
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

// A session's first profiled run reports the pipelines it compiled, apart from the kernels' GPU
// time and from recording; the second run of the session compiles nothing.
TEST_F(WebGpuBackendTest, AProfileReportsCompileTimeApartAndNoCompilesOnceWarm) {
  SessionOptions options;
  options.device = "webgpu";
  options.profile = true;
  Session session(kFixture + "model.pte", options);
  session.run(inputs());
  const uint64_t compiled = session.last_run_stats().pipelines_compiled;
  ASSERT_GT(compiled, 0u);
  uint64_t row_compiles = 0;
  for (const OpProfile& p : session.profile()) {
    if (!p.compiles) continue;
    EXPECT_EQ(p.device, "webgpu") << p.op;
    EXPECT_GT(p.compile_ms, 0.0) << p.op;
    row_compiles += p.compiles;
  }
  EXPECT_GE(row_compiles, compiled);  // also those compiled at load, for constant-only instructions
  const ProfileTotals first = session.profile_totals();
  EXPECT_EQ(first.pipelines_compiled, compiled);
  EXPECT_GT(first.compile_ms, 0.0);
  EXPECT_LE(first.compile_ms, first.wall_ms);
  EXPECT_GE(first.gpu_recording_ms, 0.0);

  session.run(inputs());
  EXPECT_EQ(session.last_run_stats().pipelines_compiled, 0u);
  for (const OpProfile& p : session.profile()) {
    EXPECT_EQ(p.compiles, 0u) << p.op;
    EXPECT_EQ(p.compile_ms, 0.0) << p.op;
  }
  EXPECT_EQ(session.profile_totals().pipelines_compiled, 0u);
  EXPECT_EQ(session.profile_totals().compile_ms, 0.0);
}

// The load's own GPU work (attention_block's four weight transposes, folded at load) is timed
// apart from the runs': the first run's profile counts the kernels a run dispatches, as the second
// run's does, and the totals give the load's dispatches on their own.
TEST_F(WebGpuBackendTest, AProfileLeavesTheLoadsFoldingOutOfTheRunsOps) {
  const std::string fixture = std::string(WGML_SOURCE_DIR) + "/tests/fixtures/pte/attention_block/";
  SessionOptions options;
  options.device = "webgpu";
  options.profile = true;
  Session session(fixture + "model.pte", options);
  const std::vector<Value> step = {io::read_npy(fixture + "step0_input_0.npy", DType::Float32),
                                   io::read_npy(fixture + "step0_input_1.npy", DType::Int64)};
  const auto gpu_calls = [&] {
    std::map<std::string, uint64_t> calls;
    for (const OpProfile& p : session.profile())
      if (p.device == "webgpu") calls[p.op] += p.calls;
    return calls;
  };
  session.run(step);
  const std::map<std::string, uint64_t> first = gpu_calls();
  EXPECT_EQ(session.profile_totals().load_dispatches, 4u) << "the four weight transposes";
  EXPECT_GT(session.profile_totals().load_gpu_ms, 0.0);
  session.run(step);
  EXPECT_EQ(gpu_calls(), first);
}

// A bfloat16 tensor that kernels left on the GPU is widened there; an input that reads it packed
// (Dequantize's scales and biases, as a Take of an embedding's scales feeds them) gets it repacked
// by a kernel, with nothing read back while the run records.
TEST_F(WebGpuBackendTest, ABfloat16TensorOnlyOnTheGpuIsRepackedThereForAPackedInput) {
  const int64_t rows = 2, words = 8, groups = 2;  // 4 bits: 64 columns, groups of 32
  Tensor w(DType::UInt32, {rows, words});
  for (int64_t i = 0; i < rows * words; ++i)
    w.mutable_data_as<uint32_t>()[i] = 0x76543210u + static_cast<uint32_t>(i) * 0x11111111u;
  const std::vector<float> scale_values = {0.5f, 1.25f, -2.0f, 0.75f}, bias_values = {3.0f, -1.5f, 0.25f, 8.0f};
  const auto widened_on_gpu = [&](const std::vector<float>& values, const std::string& name) {
    Tensor t(DType::BFloat16, {rows, groups});
    for (size_t i = 0; i < values.size(); ++i) t.mutable_data_as<uint16_t>()[i] = float_to_bf16(values[i]);
    on_gpu(gpu(), t, *kernel::default_storage(DType::BFloat16), name, std::nullopt);
    TensorDeviceAccess::drop_host_copy(t);
    return t;
  };
  const Tensor scales = widened_on_gpu(scale_values, "scales"), biases = widened_on_gpu(bias_values, "biases");
  kernel::KernelRequest request;
  request.inputs = {{"w", {DType::UInt32, w.shape()}},
                    {"scales", {DType::BFloat16, scales.shape()}},
                    {"biases", {DType::BFloat16, biases.shape()}}};
  request.attributes = {{"group_size", kernel::Value(int64_t{32})}, {"bits", kernel::Value(int64_t{4})}};
  const auto& plan = gpu()->plan(*gpu()->engine().find("mlx", "Dequantize"), request);
  const uint64_t read_before = gpu()->recorder().traffic().bytes_read;
  const Tensor out = run_plan(gpu(), plan, {{"w", w}, {"scales", scales}, {"biases", biases}}).at("out");
  EXPECT_EQ(gpu()->recorder().traffic().bytes_read, read_before) << "scales or biases were read back to be repacked";
  ASSERT_EQ(out.shape(), (Shape{rows, 64}));
  const std::vector<float> got = to_floats(out);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < 64; ++c) {
      const uint32_t q = (w.data_as<uint32_t>()[r * words + c / 8] >> (4 * (c % 8))) & 15u;
      const size_t g = static_cast<size_t>(r * groups + c / 32);
      EXPECT_EQ(got[static_cast<size_t>(r * 64 + c)], scale_values[g] * static_cast<float>(q) + bias_values[g]) << r << "," << c;
    }
}

// A folded bfloat16 constant (a weight's transpose, written widened: a value a word) is kept packed
// only: its device copy becomes two values a word, the widened buffer is let go, and its values
// read back unchanged (backend/webgpu/plan_runner.h, keep_packed_only).
TEST_F(WebGpuBackendTest, AFoldedBfloat16IsKeptPackedOnly) {
  std::mt19937 rng(11);
  const Tensor host = testing::random_tensor(DType::BFloat16, {256, 64}, rng);
  const Tensor t = widened_on_gpu_only(host);
  const auto widened = std::dynamic_pointer_cast<const GpuTensorData>(TensorDeviceAccess::device_data(t));
  ASSERT_EQ(widened->storage().kind, kernel::StorageKind::Widened);

  backend().settle_folded(t);
  const auto kept = std::dynamic_pointer_cast<const GpuTensorData>(TensorDeviceAccess::device_data(t));
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->storage().kind, kernel::StorageKind::Packed);
  EXPECT_EQ(kept->device_bytes(), kept->buffer()->capacity()) << "the packed copy holds no other";
  EXPECT_LE(2 * kept->buffer()->capacity(), widened->buffer()->capacity());
  EXPECT_EQ(widened.use_count(), 1) << "the widened copy is held here only";
  testing::expect_same_tensor(Tensor::from_bytes(DType::BFloat16, t.shape(), t.data()), host, "the packed copy read back");

  // Anything else is left as it is: a float32 tensor, or a bfloat16 one with host bytes.
  for (const Tensor& other :
       {testing::random_tensor(DType::Float32, {256, 64}, rng), testing::random_tensor(DType::BFloat16, {256, 64}, rng)}) {
    on_gpu(gpu(), other, *kernel::default_storage(other.dtype()), "other", std::nullopt);
    const auto before = TensorDeviceAccess::device_data(other);
    backend().settle_folded(other);
    EXPECT_EQ(TensorDeviceAccess::device_data(other), before);
  }
}

// A 4-bit quantized product of x [1, 1, k] by w [n, k] (groups of 32) on random operands, and the
// request that plans it.
struct QuantizedProduct {
  std::map<std::string, Tensor> operands;
  kernel::KernelRequest request;
};

QuantizedProduct random_quantized_product(DType t, int64_t k, int64_t n, std::mt19937& rng) {
  QuantizedProduct p;
  p.operands = {{"x", testing::random_tensor(t, {1, 1, k}, rng)},
                {"w", testing::random_tensor(DType::UInt32, {n, k / 8}, rng)},
                {"scales", testing::random_tensor(t, {n, k / 32}, rng)},
                {"biases", testing::random_tensor(t, {n, k / 32}, rng)}};
  for (const auto& [name, tensor] : p.operands) p.request.inputs[name] = {tensor.dtype(), tensor.shape()};
  p.request.attributes = {{"group_size", kernel::Value(int64_t{32})}, {"bits", kernel::Value(int64_t{4})}};
  return p;
}

// One MLX elementwise op of the operands `args` (by input name), planned and run on the GPU.
Tensor run_elementwise(const std::shared_ptr<GpuContext>& gpu, const std::string& op, const std::map<std::string, Tensor>& args) {
  kernel::KernelRequest request;
  for (const auto& [name, tensor] : args) request.inputs[name] = {tensor.dtype(), tensor.shape()};
  return run_plan(gpu, gpu->plan(*gpu->engine().find("mlx", op), request), args).at("out");
}

// A bfloat16 tensor kept packed only (a folded weight) and read by a kernel that takes it widened
// (an elementwise op) is widened on the GPU (WidenBfloat16), with nothing read back, and the values
// are the same.
TEST_F(WebGpuBackendTest, ABfloat16KeptPackedIsWidenedOnTheGpuForAWidenedInput) {
  std::mt19937 rng(12);
  const Tensor host = testing::random_tensor(DType::BFloat16, {3, 37}, rng);
  const Tensor t = widened_on_gpu_only(host);
  backend().settle_folded(t);
  ASSERT_EQ(std::dynamic_pointer_cast<const GpuTensorData>(TensorDeviceAccess::device_data(t))->storage().kind,
            kernel::StorageKind::Packed);
  const uint64_t read_before = gpu()->recorder().traffic().bytes_read;
  const Tensor negated = run_elementwise(gpu(), "Neg", {{"x", t}});
  EXPECT_EQ(gpu()->recorder().traffic().bytes_read, read_before) << "the packed tensor was read back to be widened";
  const std::vector<float> got = to_floats(negated), want = to_floats(host);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], -want[i]) << i;
}

// A residual Add fused into the quantized matrix-vector product (runtime/fusion.h) gives exactly what
// the product and then the Add give, roundings included: the fused op means the original program.
TEST_F(WebGpuBackendTest, AQuantizedProductWithAnAddendEqualsTheProductThenTheAdd) {
  std::mt19937 rng(7);
  const int64_t k = 128, n = 36;  // 4 bits, groups of 32: 16 words and 4 groups a row
  for (DType t : {DType::Float32, DType::BFloat16}) {
    const QuantizedProduct product = random_quantized_product(t, k, n, rng);
    const Tensor addend = testing::random_tensor(t, {1, 1, n}, rng);
    kernel::KernelRequest fused = product.request;
    fused.inputs["addend"] = {t, addend.shape()};
    const auto& qmm = *gpu()->engine().find("mlx", "QuantizedMatmul");
    std::map<std::string, Tensor> with_addend = product.operands;
    with_addend["addend"] = addend;
    const auto& fused_plan = gpu()->plan(qmm, fused);
    EXPECT_EQ(fused_plan.variant, "qmv");
    const Tensor once = run_plan(gpu(), fused_plan, with_addend).at("out");
    const Tensor alone = run_plan(gpu(), gpu()->plan(qmm, product.request), product.operands).at("out");
    const Tensor twice = run_elementwise(gpu(), "Add", {{"a", alone}, {"b", addend}});
    testing::expect_same_tensor(once, twice, std::string(dtype_name(t)));
  }
}

// A SwiGLU fused into the product (x the gate, `up` the other factor) gives exactly what Silu,
// Multiply and the product give one after the other, roundings included.
TEST_F(WebGpuBackendTest, AQuantizedProductOfAGateEqualsSiluTimesUpThenTheProduct) {
  std::mt19937 rng(8);
  const int64_t k = 256, n = 20;
  for (DType t : {DType::Float32, DType::BFloat16}) {
    const QuantizedProduct product = random_quantized_product(t, k, n, rng);
    const Tensor up = testing::random_tensor(t, {1, 1, k}, rng);
    kernel::KernelRequest fused = product.request;
    fused.inputs["up"] = {t, up.shape()};
    std::map<std::string, Tensor> with_up = product.operands;
    with_up["up"] = up;
    const auto& qmm = *gpu()->engine().find("mlx", "QuantizedMatmul");
    const auto& fused_plan = gpu()->plan(qmm, fused);
    EXPECT_EQ(fused_plan.variant, "qmv");
    const Tensor once = run_plan(gpu(), fused_plan, with_up).at("out");
    const Tensor activated = run_elementwise(gpu(), "Silu", {{"x", product.operands.at("x")}});
    std::map<std::string, Tensor> gated = product.operands;
    gated["x"] = run_elementwise(gpu(), "Multiply", {{"a", activated}, {"b", up}});
    const Tensor in_steps = run_plan(gpu(), gpu()->plan(qmm, product.request), gated).at("out");
    testing::expect_same_tensor(once, in_steps, std::string(dtype_name(t)));
  }
}

// A copy of kernels/ with one more file, for the checks made when a backend is created.
class KernelsWith {
 public:
  KernelsWith(const std::string& relative_path, const std::string& text)
      : dir_(std::filesystem::temp_directory_path() / ("wgml_kernels_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(dir_);
    std::filesystem::copy(std::string(WGML_SOURCE_DIR) + "/kernels", dir_, std::filesystem::copy_options::recursive);
    std::ofstream(dir_ / relative_path) << text;
  }
  // Leaves a file of kernels/ out of the copy.
  void remove(const std::string& relative_path) const { std::filesystem::remove(dir_ / relative_path); }
  ~KernelsWith() { std::filesystem::remove_all(dir_); }
  std::string error_creating_a_backend() const {
    GpuOptions options;
    options.kernels_dir = dir_.string();
    try {
      WebGpuBackend backend(options);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidFormat) << e.what();
      return e.what();
    }
    ADD_FAILURE() << "the backend was created";
    return "";
  }

 private:
  std::filesystem::path dir_;
};

// FlipNode's tensor field is `x`: a spec naming its input `input` can never receive it, and says so
// when the backend is made instead of sending every Flip to the CPU in silence.
TEST_F(WebGpuBackendTest, ASpecThatDoesNotTakeTheNodesFieldsIsAnErrorNamingBoth) {
  const KernelsWith kernels("specs/mlx/Flip.json", R"json({
    "domain": "mlx", "name": "Flip",
    "inputs": { "input": { "dtype": "T" } },
    "outputs": { "out": { "dtype": "T", "shape": "shapes.input" } },
    "attributes": { "axes": {} },
    "typeConstraints": { "T": ["float32"] },
    "tunables": { "WORKGROUP_SIZE": { "default": 64 } },
    "variants": [ { "id": "main", "passes": [ { "id": "copy", "shader": "copy.wgsl.jinja",
      "bindings": [ { "arg": "input", "name": "src" }, { "arg": "out", "name": "dst" }, "params" ],
      "dispatch": { "workgroups": "1" } } ] } ],
    "bindings": { "params": { "struct": [ { "name": "count", "type": "u32", "value": "1" } ] } }
  })json");
  // The spec file is named from the kernels folder on, not by where that folder lies.
  EXPECT_THAT(kernels.error_creating_a_backend(),
              ::testing::HasSubstr("mlx.Flip (wgml_kernels_" + std::to_string(::getpid()) + "/specs/mlx/Flip.json)"));
  EXPECT_THAT(kernels.error_creating_a_backend(),
              ::testing::HasSubstr("IR field 'x' is a tensor, and the spec has no input of that name"));
}

// TakeNode's `index` is an int or a tensor at run time: a spec must take both, as an optional
// input and an attribute of that name.
TEST_F(WebGpuBackendTest, AnIntOrTensorFieldNeedsAnOptionalInputAndAnAttributeOfItsName) {
  const KernelsWith kernels("specs/mlx/Take.json", R"json({
    "domain": "mlx", "name": "Take",
    "inputs": { "x": { "dtype": "T" }, "index": { "dtype": "int32", "optional": true } },
    "outputs": { "out": { "dtype": "T", "shape": "shapes.x" } },
    "attributes": { "axis": {} },
    "typeConstraints": { "T": ["float32"] },
    "tunables": { "WORKGROUP_SIZE": { "default": 64 } },
    "variants": [ { "id": "main", "passes": [ { "id": "copy", "shader": "copy.wgsl.jinja",
      "bindings": [ { "arg": "x", "name": "src" }, { "arg": "out", "name": "dst" }, "params" ],
      "dispatch": { "workgroups": "1" } } ] } ],
    "bindings": { "params": { "struct": [ { "name": "count", "type": "u32", "value": "1" } ] } }
  })json");
  kernels.remove("specs/mlx/indexed-gather.json");  // the real Take
  EXPECT_THAT(kernels.error_creating_a_backend(),
              ::testing::HasSubstr("IR field 'index' is an int or a tensor, and the spec lacks an optional input or an "
                                   "attribute of that name"));
}

TEST_F(WebGpuBackendTest, ADecompositionIntoOpsWithoutSpecsIsAnError) {
  const KernelsWith kernels("decompositions/bad.json", R"json({
    "domain": "mlx", "decompositions": { "Sort": { "input": "x", "output": "out",
      "steps": [ { "op": "Argsort", "inputs": { "x": "previous" } } ] } }
  })json");
  kernels.remove("specs/mlx/sort.json");  // Sort and Argsort have kernels there
  EXPECT_THAT(kernels.error_creating_a_backend(),
              ::testing::HasSubstr("mlx.Sort: decompositions.Sort.steps[0]: 'Argsort' has no kernel spec"));
}

// Positions (an int input) cast to floats and their cosines: a few floats made from values the
// host holds are computed there (RoPE's rows every decode step), while the cosines of a float
// input, which is the model's arithmetic, run on the GPU.
TEST_F(WebGpuBackendTest, AFewFloatsMadeFromHostValuesAreComputedOnTheHost) {
  auto model = std::make_shared<ir::Model>();
  model->path = "host floats";
  model->format = ir::ModelFormat::Payload;
  ir::Program& p = model->program;
  p.num_input_tensors = 2;   // 0: positions, 1: floats
  p.num_output_tensors = 2;  // 2: cos(float(positions)), 3: cos(floats)
  p.num_temp_tensors = 1;    // 4: float(positions)
  p.inputs = {{0, ir::SlotType::Tensor}, {1, ir::SlotType::Tensor}};
  p.outputs = {{2, ir::SlotType::Tensor}, {3, ir::SlotType::Tensor}};
  constexpr int8_t kFloat32 = 6;  // ExecuTorch's ScalarType::Float
  p.chains.push_back(ir::Chain{{ir::Node(ir::AsTypeNode{ir::Tid{0}, ir::Tid{4}, kFloat32}),
                                ir::Node(ir::CosNode{ir::Tid{4}, ir::Tid{2}}), ir::Node(ir::CosNode{ir::Tid{1}, ir::Tid{3}})},
                               {}});
  GpuOptions options;
  options.small_values_on_host = true;
  WebGpuBackend gpu(options);
  Tensor positions(DType::Int32, {3}), floats(DType::Float32, {3});
  for (int i = 0; i < 3; ++i) {
    positions.mutable_data_as<int32_t>()[i] = 5 + i;
    floats.mutable_data_as<float>()[i] = 0.5f * static_cast<float>(i);
  }
  const std::vector<Value> out = runtime::Executor(model, gpu).run({positions, floats});
  EXPECT_EQ(gpu.placement().on_host.count("Cos") ? gpu.placement().on_host.at("Cos") : 0u, 1u);
  EXPECT_EQ(gpu.placement().on_gpu.count("Cos") ? gpu.placement().on_gpu.at("Cos") : 0u, 1u);
  const std::vector<float> from_positions = to_floats(std::get<Tensor>(out[0])),
                           from_floats = to_floats(std::get<Tensor>(out[1]));
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(from_positions[i], std::cos(5.0 + i), 1e-6);
    EXPECT_NEAR(from_floats[i], std::cos(0.5 * i), 1e-6);
  }
}

}  // namespace
}  // namespace wgml::backend::webgpu
