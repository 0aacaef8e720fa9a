// ONNX TensorScatter: the CPU reference against hand-derived results, and the kernel plans of the
// project's spec and of the seed spec (loaded unchanged) over the test matrix: both modes,
// with and without write indices, every type of typeConstraints, several axes and ranks, element
// counts divisible and not divisible by 4. Every rendered WGSL is validated with naga when it is
// installed (tools/setup.sh installs it).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <set>

#include "backend/cpu/onnx/tensor_scatter.h"
#include "backend/webgpu/host_packing.h"
#include "kernel/engine.h"
#include "spec_test_support.h"
#include "support/tensor_scatter_matrix.h"

namespace wgml::kernel {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

// ---- the CPU reference -----------------------------------------------------------------------

Tensor floats(Shape shape, const std::vector<float>& values) {
  return Tensor::from_bytes(DType::Float32, std::move(shape), values.data());
}
Tensor indices(const std::vector<int64_t>& values) {
  return Tensor::from_bytes(DType::Int64, {static_cast<int64_t>(values.size())}, values.data());
}
std::vector<float> values_of(const Tensor& t) { return {t.data_as<float>(), t.data_as<float>() + t.numel()}; }

// past [2 batches, 4 positions, 2 features] of zeros; update [2, 2, 2] holding 1..8.
const Tensor kPast = Tensor(DType::Float32, {2, 4, 2});
const Tensor kUpdate = floats({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});

TEST(TensorScatterReference, LinearWritesEachBatchAtItsIndex) {
  const Tensor w = indices({1, 2});
  EXPECT_EQ(values_of(cpu::onnx::tensor_scatter(kPast, kUpdate, &w, -2, "linear")),
            (std::vector<float>{0, 0, 1, 2, 3, 4, 0, 0, /**/ 0, 0, 0, 0, 5, 6, 7, 8}));
}

TEST(TensorScatterReference, AbsentIndicesWriteAtZero) {
  EXPECT_EQ(values_of(cpu::onnx::tensor_scatter(kPast, kUpdate, nullptr, 1, "linear")),
            (std::vector<float>{1, 2, 3, 4, 0, 0, 0, 0, /**/ 5, 6, 7, 8, 0, 0, 0, 0}));
}

TEST(TensorScatterReference, CircularWraps) {
  const Tensor w = indices({3, 6});  // 6 wraps to 2
  EXPECT_EQ(values_of(cpu::onnx::tensor_scatter(kPast, kUpdate, &w, -2, "circular")),
            (std::vector<float>{3, 4, 0, 0, 0, 0, 1, 2, /**/ 0, 0, 0, 0, 5, 6, 7, 8}));
}

TEST(TensorScatterReference, LastAxisAndHeadsBeforeTheAxis) {
  // past [1, 2, 3]: scatter along the last axis, update [1, 2, 1] written at column 2.
  const Tensor w = indices({2});
  EXPECT_EQ(values_of(cpu::onnx::tensor_scatter(Tensor(DType::Float32, {1, 2, 3}), floats({1, 2, 1}, {7, 9}), &w, -1, "linear")),
            (std::vector<float>{0, 0, 7, 0, 0, 9}));
  // past [2 batches, 2 heads, 3 positions, 1]: every head of a batch uses that batch's index.
  const Tensor w2 = indices({2, 0});
  EXPECT_EQ(values_of(cpu::onnx::tensor_scatter(Tensor(DType::Float32, {2, 2, 3, 1}), floats({2, 2, 1, 1}, {1, 2, 3, 4}), &w2, 2,
                                                "linear")),
            (std::vector<float>{0, 0, 1, 0, 0, 2, /**/ 3, 0, 0, 4, 0, 0}));
}

TEST(TensorScatterReference, KeepsTheBytesOfAnyType) {
  const std::vector<int8_t> past = {1, 1, 1, 1};
  const std::vector<int8_t> update = {-7, -8};
  const Tensor w = indices({1, 0});
  const Tensor out = cpu::onnx::tensor_scatter(Tensor::from_bytes(DType::Int8, {2, 2}, past.data()),
                                               Tensor::from_bytes(DType::Int8, {2, 1}, update.data()), &w, 1, "linear");
  EXPECT_EQ(std::vector<int8_t>(out.data_as<int8_t>(), out.data_as<int8_t>() + 4), (std::vector<int8_t>{1, -7, -8, 1}));
}

TEST(TensorScatterReference, RejectsIndicesThatDoNotFitAndMismatchedInputs) {
  const Tensor too_far = indices({3, 0});
  EXPECT_THAT(
      error_of([&] { cpu::onnx::tensor_scatter(kPast, kUpdate, &too_far, -2, "linear"); }, ErrorCode::Runtime),
      HasSubstr("write_indices[0] = 3 does not fit: linear mode needs 0 <= index <= max_sequence_length - sequence_length = 2"));
  const Tensor negative = indices({0, -1});
  EXPECT_THAT(error_of([&] { cpu::onnx::tensor_scatter(kPast, kUpdate, &negative, -2, "linear"); }, ErrorCode::Runtime),
              HasSubstr("write_indices[1] = -1 does not fit"));
  const Tensor w = indices({0, 0});
  EXPECT_THAT(error_of([&] { cpu::onnx::tensor_scatter(kPast, kUpdate, &w, 0, "linear"); }, ErrorCode::InvalidArgument),
              HasSubstr("axis must name a dimension after the batch dimension"));
  EXPECT_THAT(error_of([&] { cpu::onnx::tensor_scatter(kPast, kUpdate, &w, 1, "ring"); }, ErrorCode::InvalidArgument),
              HasSubstr("mode must be \"linear\" or \"circular\", not \"ring\""));
  EXPECT_THAT(error_of(
                  [&] {
                    cpu::onnx::tensor_scatter(kPast, floats({2, 2, 3}, std::vector<float>(12)), &w, 1, "linear");
                  },
                  ErrorCode::InvalidArgument),
              HasSubstr("update [2, 2, 3] does not fit past_cache [2, 4, 2] (axis 1)"));
  const Tensor short_w = indices({0});
  EXPECT_THAT(error_of([&] { cpu::onnx::tensor_scatter(kPast, kUpdate, &short_w, 1, "linear"); }, ErrorCode::InvalidArgument),
              HasSubstr("write_indices [1] must have shape [batch_size] = [2]"));
}

// ---- kernel plans over the test matrix -------------------------------------------------------

using Geometry = wgml::testing::ScatterGeometry;

struct Case {
  DType dtype;
  Geometry geometry;
  std::string mode;
  bool with_indices;
};

std::vector<Case> test_matrix() {
  std::vector<Case> cases;
  for (DType dtype : wgml::testing::kScatterTypes)
    for (const Geometry& g : wgml::testing::kScatterGeometries)
      for (const char* mode : {"linear", "circular"})
        for (bool with_indices : {false, true}) cases.push_back({dtype, g, mode, with_indices});
  return cases;
}

KernelRequest request_for(const Case& c) {
  KernelRequest r;
  r.inputs["past"] = {c.dtype, c.geometry.past};
  r.inputs["update"] = {c.dtype, c.geometry.update};
  if (c.with_indices) r.inputs["writeIndices"] = {DType::Int64, {c.geometry.past[0]}};
  r.attributes["axis"] = Value(c.geometry.axis);
  r.attributes["mode"] = Value(c.mode);
  return r;
}

DeviceCaps device_with_f16() {
  DeviceCaps d;
  d.shader_f16 = true;
  return d;
}

std::string wgsl_scalar(DType t) { return default_storage(t)->scalar; }

uint32_t params_count(const PlanPass& pass) {
  uint32_t count = 0;
  std::memcpy(&count, pass.params.data(), 4);
  return count;
}

class TensorScatterPlans : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    engine_ = new Engine(testing::kKernelsDir + "/wgsl");
    ours_ = engine_->load(testing::kKernelsDir + "/specs/ai.onnx/TensorScatter.json").front();
    // The seed registers under the same (domain, op); the plans use the pointers directly.
    seed_ = engine_->load(testing::kSeedSpec).front();
  }
  static void TearDownTestSuite() {
    delete engine_;
    engine_ = nullptr;
  }

  static KernelPlan plan(const KernelSpec& spec, const KernelRequest& r, const DeviceCaps& d = device_with_f16()) {
    return engine_->plan(spec, r, d);
  }

  static Engine* engine_;
  static std::shared_ptr<const KernelSpec> ours_, seed_;
};

Engine* TensorScatterPlans::engine_ = nullptr;
std::shared_ptr<const KernelSpec> TensorScatterPlans::ours_, TensorScatterPlans::seed_;

// What the plan must be, derived from the case by hand.
void expect_plan_matches_case(const KernelPlan& plan, const Case& c) {
  const std::string scalar = wgsl_scalar(c.dtype);
  const int64_t numel = shape_numel(c.geometry.past);
  const int64_t update_numel = shape_numel(c.geometry.update);
  const std::string copy_type = numel % 4 == 0 ? "vec4<" + scalar + ">" : scalar;
  const int64_t copy_width = numel % 4 == 0 ? 4 : (scalar == "f16" ? 16 : 8);

  EXPECT_EQ(plan.variant, c.with_indices ? "with_write_indices" : "no_write_indices");
  EXPECT_EQ(plan.tensor("present")->shape, c.geometry.past);
  EXPECT_EQ(plan.tensor("present")->storage.scalar, scalar);
  ASSERT_EQ(plan.passes.size(), 2u);
  const PlanPass& copy = plan.passes[0];
  EXPECT_EQ(copy.name, "TensorScatter.Copy");
  ASSERT_EQ(copy.bindings.size(), 2u);
  EXPECT_EQ(copy.bindings[0].tensor, "past");
  EXPECT_EQ(copy.bindings[0].element_type, copy_type);
  EXPECT_EQ(copy.bindings[1].tensor, "present");
  EXPECT_EQ(copy.bindings[1].access, BindingAccess::ReadWrite);
  EXPECT_TRUE(copy.params.empty());
  EXPECT_EQ(copy.dispatch,
            (std::array<uint32_t, 3>{static_cast<uint32_t>((numel + copy_width - 1) / copy_width + 255) / 256, 1, 1}));

  const PlanPass& scatter = plan.passes[1];
  EXPECT_EQ(scatter.name, "TensorScatter.Scatter");
  std::vector<std::string> names;
  for (const auto& b : scatter.bindings) names.push_back(b.name + ":" + b.element_type + ":" + binding_access_name(b.access));
  std::vector<std::string> expected = {"update:" + scalar + ":read"};
  if (c.with_indices) expected.push_back("writeIndices:u32:read");
  expected.push_back("present:" + scalar + ":read_write");
  expected.push_back("params:Params:uniform");
  EXPECT_EQ(names, expected);
  EXPECT_EQ(params_count(scatter), static_cast<uint32_t>(update_numel));
  EXPECT_EQ(scatter.dispatch, (std::array<uint32_t, 3>{static_cast<uint32_t>((update_numel + 255) / 256), 1, 1}));
  EXPECT_THAT(*scatter.wgsl, HasSubstr(c.mode == "circular" ? "% MAX_SEQUENCE" : "s >= MAX_SEQUENCE - start"));
  EXPECT_EQ(scatter.wgsl->find("enable f16;") == 0, scalar == "f16");
}

// Runs `naga --bulk-validate` over every distinct WGSL; returns its output and sets `ok`.
std::string validate_with_naga(const std::set<std::string>& sources, bool& ok) {
  testing::ScratchTemplates dir("naga");
  std::string command = std::string(WGML_NAGA) + " --bulk-validate";
  size_t i = 0;
  for (const auto& source : sources) {
    const std::string name = "shader" + std::to_string(i++) + ".wgsl";
    dir.write(name, source);
    command += " " + dir.path(name);
  }
  command += " 2>&1";
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  char buffer[4096];
  while (pipe && fgets(buffer, sizeof buffer, pipe)) output += buffer;
  ok = pipe && pclose(pipe) == 0;
  return output;
}

TEST_F(TensorScatterPlans, OursAndTheSeedRenderTheSameKernelsForTheWholeMatrix) {
  std::set<std::string> sources;
  size_t cases = 0;
  for (const Case& c : test_matrix()) {
    SCOPED_TRACE(std::string(dtype_name(c.dtype)) + " past " + ::testing::PrintToString(c.geometry.past) + " axis " +
                 std::to_string(c.geometry.axis) + " " + c.mode + (c.with_indices ? " with indices" : ""));
    const KernelRequest r = request_for(c);
    const KernelPlan ours = plan(*ours_, r);
    const KernelPlan seed = plan(*seed_, r);
    expect_plan_matches_case(ours, c);
    ASSERT_EQ(seed.passes.size(), ours.passes.size());
    EXPECT_EQ(seed.variant, ours.variant);
    for (size_t p = 0; p < ours.passes.size(); ++p) {
      EXPECT_EQ(*seed.passes[p].wgsl, *ours.passes[p].wgsl);
      EXPECT_EQ(seed.passes[p].dispatch, ours.passes[p].dispatch);
      EXPECT_EQ(seed.passes[p].params, ours.passes[p].params);
      ASSERT_EQ(seed.passes[p].bindings.size(), ours.passes[p].bindings.size());
      for (size_t b = 0; b < ours.passes[p].bindings.size(); ++b) {
        EXPECT_EQ(seed.passes[p].bindings[b].name, ours.passes[p].bindings[b].name);
        EXPECT_EQ(seed.passes[p].bindings[b].element_type, ours.passes[p].bindings[b].element_type);
        EXPECT_EQ(seed.passes[p].bindings[b].access, ours.passes[p].bindings[b].access);
      }
      sources.insert(*ours.passes[p].wgsl);
    }
    ++cases;
  }
  EXPECT_EQ(cases, 8u * 6u * 2u * 2u);
  if (std::string(WGML_NAGA).empty())
    GTEST_SKIP() << "naga is not installed: " << sources.size() << " WGSL sources were not validated";
  bool ok = false;
  const std::string output = validate_with_naga(sources, ok);
  EXPECT_TRUE(ok) << output;
}

TEST_F(TensorScatterPlans, RenderedScatterKernelReadsItsConstants) {
  // past [2, 3, 6, 5], update [2, 3, 1, 5] along axis 2: a row is 5 elements, 3 rows per batch.
  const KernelPlan p = plan(*ours_, request_for({DType::Float32, wgml::testing::kScatterGeometries[2], "linear", true}));
  const std::string& wgsl = *p.passes[1].wgsl;
  EXPECT_THAT(wgsl, HasSubstr("const MAX_SEQUENCE: u32 = 6u;"));
  EXPECT_THAT(wgsl, HasSubstr("const SEQUENCE: u32 = 1u;"));
  EXPECT_THAT(wgsl, HasSubstr("const ROW: u32 = 5u;"));
  EXPECT_THAT(wgsl, HasSubstr("const ROWS_PER_BATCH: u32 = 3u;"));
  EXPECT_THAT(wgsl, HasSubstr("let start = writeIndices[outer / ROWS_PER_BATCH];"));
  EXPECT_THAT(wgsl, HasSubstr("@group(0) @binding(1) var<storage, read> writeIndices: array<u32>;"));
  EXPECT_THAT(wgsl, HasSubstr("@compute @workgroup_size(256)"));
  // 105 elements, not divisible by 4: scalar copies of 8 elements per invocation.
  const KernelPlan q = plan(*ours_, request_for({DType::Float32, wgml::testing::kScatterGeometries[1], "linear", false}));
  EXPECT_THAT(*q.passes[0].wgsl, HasSubstr("const UNITS_PER_INVOCATION: u32 = 8u;\nconst UNIT_COUNT: u32 = 105u;"));
  EXPECT_THAT(*q.passes[0].wgsl, HasSubstr("if (invocation >= 14u) {"));
}

TEST_F(TensorScatterPlans, InPlaceUpdateSkipsTheCopyAndBindsTheCacheOnce) {
  for (const auto* spec : {ours_.get(), seed_.get()}) {
    KernelRequest r = request_for({DType::Float32, wgml::testing::kScatterGeometries[0], "linear", true});
    r.may_alias = {{"past", "present"}};
    const KernelPlan p = plan(*spec, r);
    EXPECT_EQ(p.skipped_passes, (std::vector<std::string>{"copy"}));
    EXPECT_EQ(p.tensor("present")->alias_of, "past");
    ASSERT_EQ(p.passes.size(), 1u);
    EXPECT_EQ(p.passes[0].id, "scatter");
    for (const auto& b : p.passes[0].bindings) EXPECT_NE(b.tensor, "past");
  }
}

TEST_F(TensorScatterPlans, Float16WithoutShaderF16IsNotSupportedOnThisDevice) {
  for (const auto* spec : {ours_.get(), seed_.get()}) {
    EXPECT_THAT(
        error_of(
            [&] {
              plan(*spec, request_for({DType::Float16, wgml::testing::kScatterGeometries[0], "linear", false}), DeviceCaps{});
            },
            ErrorCode::Unsupported),
        HasSubstr("float16 is not supported on this device (no shader-f16)"));
  }
}

TEST_F(TensorScatterPlans, WriteIndicesAreNarrowedWithARangeCheck) {
  const Case c{DType::Float32, wgml::testing::kScatterGeometries[0], "linear", true};  // past [2, 8, 4], update [2, 3, 4]
  for (const auto* spec : {ours_.get(), seed_.get()}) {
    const KernelPlan p = plan(*spec, request_for(c));
    const PlanTensor& w = *p.tensor("writeIndices");
    EXPECT_EQ(w.storage.kind, StorageKind::Narrowed);
    EXPECT_EQ(w.storage.scalar, "u32");
    EXPECT_EQ(w.onnx, "write_indices");
    EXPECT_THAT(error_of(
                    [&] {
                      backend::webgpu::encode_for_gpu(indices({0, -3}), w.storage, w.name, w.value_range);
                    },
                    ErrorCode::Runtime),
                HasSubstr("input 'writeIndices': element 1 is -3, outside [0, 4294967295]"));
  }
  // Ours also declares the semantic range: a linear write must fit in the cache.
  const KernelPlan p = plan(*ours_, request_for(c));
  const PlanTensor& w = *p.tensor("writeIndices");
  ASSERT_TRUE(w.value_range.has_value());
  EXPECT_EQ(w.value_range->max, 5);
  EXPECT_THAT(error_of(
                  [&] {
                    backend::webgpu::encode_for_gpu(indices({5, 6}), w.storage, w.name, w.value_range);
                  },
                  ErrorCode::Runtime),
              HasSubstr("input 'writeIndices': element 1 is 6, outside [0, 5] (valueRange)"));
  Case circular = c;
  circular.mode = "circular";
  EXPECT_EQ(plan(*ours_, request_for(circular)).tensor("writeIndices")->value_range->max, 4294967295);
}

TEST_F(TensorScatterPlans, RequestsOutsideTheOpAreRejected) {
  KernelRequest r = request_for({DType::Float32, wgml::testing::kScatterGeometries[0], "linear", false});
  r.attributes["axis"] = Value(0);
  EXPECT_THAT(error_of([&] { plan(*ours_, r); }, ErrorCode::Unsupported), HasSubstr("when[2] `axisSpec >= 1` is false"));
  EXPECT_THAT(error_of([&] { plan(*seed_, r); }, ErrorCode::Unsupported),
              HasSubstr("when[1] `(attrs.axis if attrs.axis >= 0 else attrs.axis + ranks.past) >= 1` is false"));
  r.attributes["axis"] = Value(1);
  r.attributes["mode"] = Value("ring");
  EXPECT_THAT(error_of([&] { plan(*ours_, r); }, ErrorCode::InvalidArgument),
              HasSubstr("attribute 'mode' = \"ring\" is not one of [\"linear\", \"circular\"]"));
  r = request_for({DType::Float64, wgml::testing::kScatterGeometries[0], "linear", false});
  EXPECT_THAT(error_of([&] { plan(*seed_, r); }, ErrorCode::InvalidArgument),
              HasSubstr("T = float64 (from input 'past') is not allowed"));
  r = request_for({DType::Float32, {{2, 8, 4}, {2, 3, 5}, 1}, "linear", false});
  EXPECT_THAT(error_of([&] { plan(*ours_, r); }, ErrorCode::Unsupported), HasSubstr("when[3]"));
  r = request_for({DType::Float32, wgml::testing::kScatterGeometries[0], "linear", true});
  r.inputs["writeIndices"].shape = {3};
  EXPECT_THAT(error_of([&] { plan(*ours_, r); }, ErrorCode::InvalidArgument),
              HasSubstr("'writeIndices' has shape [3], the spec requires [2]"));
}

}  // namespace
}  // namespace wgml::kernel
