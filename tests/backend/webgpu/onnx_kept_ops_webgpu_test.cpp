// Kept ONNX ops (no mlx lowering) on the GPU (lavapipe in CI), through whole sessions. Resize
// against the CPU reference: random
// input shapes, each model holding one Resize per configuration (every mode, nearest rounding and
// coordinate transformation, scales or sizes with each aspect-ratio policy, axes, cubic's
// coefficient and exclude_outside, tf_crop_and_resize's roi and extrapolation), every Resize
// required to run on the GPU. Nearest picks an element, so its configurations keep each source
// coordinate exact in float32 and float64 alike (scales with few bits; half_pixel_symmetric only
// where scale x size is whole): elsewhere float32 may land on the other side of a rounding boundary
// than the reference's doubles, as onnxruntime's floats do. Reshape, Squeeze and Unsqueeze to
// shapes and axes known only at run time: views of the GPU buffer, nothing read back.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <random>

#include "frontend/onnx/onnx_builder.h"
#include "wgml/session.h"

namespace wgml::testing {
namespace {

struct ResizeCase {
  std::string mode, coordinates, nearest = "round_prefer_floor", policy = "stretch";
  std::vector<int64_t> axes;  // empty: every axis
  std::vector<float> scales, roi;
  std::vector<int64_t> sizes;
  float cubic_a = -0.75f, extrapolation = 0.0f;
  int64_t exclude_outside = 0;
};

const std::vector<std::string> kCoordinateModes = {"half_pixel",    "half_pixel_symmetric", "pytorch_half_pixel",
                                                   "align_corners", "asymmetric",           "tf_crop_and_resize"};

template <class T>
T pick(const std::vector<T>& items, std::mt19937& rng) {
  return items[std::uniform_int_distribution<size_t>(0, items.size() - 1)(rng)];
}

// A configuration over the axes of `shape` it resizes (its last two, or all).
ResizeCase random_case(const Shape& shape, std::mt19937& rng) {
  ResizeCase c;
  c.mode = pick<std::string>({"nearest", "linear", "cubic"}, rng);
  c.coordinates = pick(kCoordinateModes, rng);
  c.nearest = pick<std::string>({"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}, rng);
  const int rank = static_cast<int>(shape.size());
  if (rng() % 2) c.axes = {rank - 2, -1};
  const size_t count = c.axes.empty() ? shape.size() : 2;
  const auto dim_of = [&](size_t i) { return shape[c.axes.empty() ? i : static_cast<size_t>(rank - 2 + i)]; };
  const bool nearest = c.mode == "nearest";
  if (nearest || rng() % 2) {
    for (size_t i = 0; i < count; ++i) {
      float s = pick<float>({0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 2.0f, 3.0f}, rng);
      // Whole output widths keep half_pixel_symmetric's adjustment exact for nearest.
      if (nearest && c.coordinates == "half_pixel_symmetric" && std::fmod(s * static_cast<float>(dim_of(i)), 1.0f) != 0) s = 2.0f;
      c.scales.push_back(s);
    }
  } else {
    for (size_t i = 0; i < count; ++i) c.sizes.push_back(std::uniform_int_distribution<int64_t>(1, 9)(rng));
    c.policy = pick<std::string>({"stretch", "not_larger", "not_smaller"}, rng);
  }
  if (c.coordinates == "tf_crop_and_resize") {
    for (size_t i = 0; i < count; ++i) c.roi.push_back(pick<float>({-0.25f, 0.0f, 0.125f, 0.25f}, rng));
    for (size_t i = 0; i < count; ++i) c.roi.push_back(pick<float>({0.75f, 0.875f, 1.0f, 1.25f}, rng));
    c.extrapolation = 7.0f;
  }
  if (c.mode == "cubic") {
    c.cubic_a = pick<float>({-0.75f, -0.5f}, rng);
    c.exclude_outside = static_cast<int64_t>(rng() % 2);
  }
  return c;
}

// Adds `c` as a Resize of `x` (opset 19 operands: X, roi, scales, sizes) writing `y`.
void add_resize(OnnxModel& m, const ResizeCase& c, const std::string& x, const std::string& y) {
  std::string roi, scales, sizes;
  if (!c.roi.empty()) m.initializer(roi = y + "_roi", c.roi, {static_cast<int64_t>(c.roi.size())});
  if (!c.scales.empty()) m.initializer(scales = y + "_scales", c.scales, {static_cast<int64_t>(c.scales.size())});
  if (!c.sizes.empty()) m.initializer(sizes = y + "_sizes", c.sizes, {static_cast<int64_t>(c.sizes.size())});
  auto& node = m.node("Resize", {x, roi, scales, sizes}, {y});
  set_attr(node, "mode", c.mode);
  set_attr(node, "coordinate_transformation_mode", c.coordinates);
  set_attr(node, "nearest_mode", c.nearest);
  set_attr(node, "keep_aspect_ratio_policy", c.policy);
  set_attr(node, "cubic_coeff_a", c.cubic_a);
  set_attr(node, "exclude_outside", c.exclude_outside);
  set_attr(node, "extrapolation_value", c.extrapolation);
  if (!c.axes.empty()) set_attr(node, "axes", c.axes);
}

std::string describe(const ResizeCase& c) {
  std::string text = c.mode + " " + c.coordinates + " " + c.nearest + " " + c.policy + " a=" + std::to_string(c.cubic_a) +
                     " exclude_outside=" + std::to_string(c.exclude_outside) + (c.axes.empty() ? "" : " last two axes");
  for (float s : c.scales) text += " scale " + std::to_string(s);
  for (int64_t s : c.sizes) text += " size " + std::to_string(s);
  for (float r : c.roi) text += " roi " + std::to_string(r);
  return text;
}

Tensor random_input(const Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> value(-4.0f, 4.0f);
  std::vector<float> values(static_cast<size_t>(shape_numel(shape)));
  for (float& v : values) v = value(rng);
  return float_tensor_of(shape, values);
}

std::optional<Session> open_session(const std::string& path, const std::string& device, std::string& why_not) {
  SessionOptions options;
  options.device = device;
  options.profile = true;
  try {
    return Session(path, options);
  } catch (const Error& e) {
    if (device == "cpu") throw;
    why_not = e.what();
    return std::nullopt;
  }
}

// Within float32 rounding of the reference's double arithmetic.
void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const std::vector<float> g = floats_of(got), w = floats_of(want);
  for (size_t i = 0; i < w.size(); ++i) ASSERT_NEAR(g[i], w[i], 1e-5 + 1e-5 * std::fabs(w[i])) << what << ", element " << i;
}

std::vector<std::string> cpu_rows(Session& session) {
  std::vector<std::string> rows;
  for (const OpProfile& p : session.profile())
    if (p.device == "cpu") rows.push_back(p.op + ": " + p.note);
  return rows;
}

TEST(ResizeOnGpu, MatchesTheCpuReferenceOnRandomShapesAndModes) {
  constexpr int kModels = 4, kCasesPerModel = 24;
  std::mt19937 rng(11);
  for (int model = 0; model < kModels; ++model) {
    const int rank = model % 2 ? 4 : 3;
    Shape shape;
    for (int d = 0; d < rank; ++d) shape.push_back(std::uniform_int_distribution<int64_t>(d < rank - 2 ? 1 : 2, 6)(rng));
    OnnxModel m(19);
    m.input("x", kFloat, shape);
    std::vector<ResizeCase> cases;
    for (int k = 0; k < kCasesPerModel; ++k) {
      cases.push_back(random_case(shape, rng));
      const std::string y = "y" + std::to_string(k);
      add_resize(m, cases.back(), "x", y);
      m.output(y, kFloat, std::vector<int64_t>(shape.size(), kDynamic));
    }
    const std::string path = m.write(fresh_directory("resize_gpu"));
    std::string why_not;
    auto gpu = open_session(path, "webgpu", why_not);
    if (!gpu) GTEST_SKIP() << "no WebGPU device: " << why_not;
    auto cpu = open_session(path, "cpu", why_not);
    const std::vector<Value> input{random_input(shape, rng)};
    const std::vector<Value> want = cpu->run(input), got = gpu->run(input);
    for (size_t k = 0; k < cases.size(); ++k)
      expect_close(std::get<Tensor>(got[k]), std::get<Tensor>(want[k]),
                   "model " + std::to_string(model) + " " + describe(cases[k]));
    EXPECT_EQ(cpu_rows(*gpu), std::vector<std::string>{});
  }
}

// PP-OCR's detection head: opset 11 (roi an input, here empty), nearest asymmetric floor, x2.
TEST(ResizeOnGpu, RunsAnOpset11NearestUpsampleOnTheGpu) {
  OnnxModel m(11);
  m.input("x", kFloat, {1, 2, 3, 4}).output("y", kFloat, {1, 2, 6, 8});
  m.initializer("roi", std::vector<float>{}, {0});
  m.initializer("scales", std::vector<float>{1, 1, 2, 2}, {4});
  auto& node = m.node("Resize", {"x", "roi", "scales"}, {"y"});
  set_attr(node, "mode", std::string("nearest"));
  set_attr(node, "coordinate_transformation_mode", std::string("asymmetric"));
  set_attr(node, "nearest_mode", std::string("floor"));
  std::string why_not;
  auto gpu = open_session(m.write(fresh_directory("resize_opset11")), "webgpu", why_not);
  if (!gpu) GTEST_SKIP() << "no WebGPU device: " << why_not;
  std::vector<float> values(24);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  const auto out = gpu->run({float_tensor_of({1, 2, 3, 4}, values)});
  const std::vector<float> y = floats_of(std::get<Tensor>(out[0]));
  // y[c, i, j] = x[c, i / 2, j / 2]
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 8; ++j) ASSERT_EQ(y[(c * 6 + i) * 8 + j], values[(c * 3 + i / 2) * 4 + j / 2]) << c << i << j;
  EXPECT_EQ(cpu_rows(*gpu), std::vector<std::string>{});
}

// Resize-10 has no roi operand (its second input is scales): the spec, written for opset 11's
// operands, must not read it as roi; the op runs on the CPU reference and says why.
TEST(ResizeOnGpu, LeavesOpset10ToTheCpuReference) {
  OnnxModel m(10);
  m.input("x", kFloat, {1, 1, 2, 2}).output("y", kFloat, {1, 1, 4, 4});
  m.initializer("scales", std::vector<float>{1, 1, 2, 2}, {4});
  set_attr(m.node("Resize", {"x", "scales"}, {"y"}), "mode", std::string("nearest"));
  std::string why_not;
  auto gpu = open_session(m.write(fresh_directory("resize_opset10")), "webgpu", why_not);
  if (!gpu) GTEST_SKIP() << "no WebGPU device: " << why_not;
  const auto out = gpu->run({float_tensor_of({1, 1, 2, 2}, {1, 2, 3, 4})});
  EXPECT_EQ(floats_of(std::get<Tensor>(out[0])), (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
  EXPECT_EQ(cpu_rows(*gpu), std::vector<std::string>{"ai.onnx.Resize: opset 10 predates the spec's sinceVersion 11"});
}

// Scales that make no output shape are the model's error: the CPU reference reports it, as on the
// CPU backend, rather than a failed expression of the spec.
TEST(ResizeOnGpu, ScalesThatMakeNoShapeAreTheReferencesError) {
  for (const float bad : {-2.0f, std::nanf(""), 1e30f}) {
    OnnxModel m(13);
    m.input("x", kFloat, {1, 1, 2, 2}).output("y", kFloat, {kDynamic, kDynamic, kDynamic, kDynamic});
    m.initializer("scales", std::vector<float>{1, 1, bad, 2}, {4});
    m.node("Resize", {"x", "", "scales"}, {"y"});
    std::string why_not;
    auto gpu = open_session(m.write(fresh_directory("resize_bad_scales")), "webgpu", why_not);
    if (!gpu) GTEST_SKIP() << "no WebGPU device: " << why_not;
    try {
      gpu->run({float_tensor_of({1, 1, 2, 2}, {1, 2, 3, 4})});
      ADD_FAILURE() << "scale " << bad << " ran";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::Runtime) << e.what();
      EXPECT_NE(std::string(e.what()).find("Resize: "), std::string::npos) << e.what();
    }
  }
}

// The shape and axes arrive as run-time inputs, so the frontend keeps the ops; on the GPU they only
// relabel the Relu's buffer, with the values given at each run.
TEST(DynamicShapesOnGpu, ReshapeSqueezeAndUnsqueezeToRunTimeShapesAreViews) {
  OnnxModel m(13);
  m.input("x", kFloat, {2, 3, 4}).input("shape", kInt64, {2}).input("axes", kInt64, {1});
  m.output("y", kFloat, {kDynamic, kDynamic});
  m.node("Relu", {"x"}, {"r"});
  m.node("Reshape", {"r", "shape"}, {"flat"});
  m.node("Unsqueeze", {"flat", "axes"}, {"expanded"});
  m.node("Squeeze", {"expanded", "axes"}, {"squeezed"});
  m.node("Neg", {"squeezed"}, {"y"});
  std::string why_not;
  auto gpu = open_session(m.write(fresh_directory("dynamic_views")), "webgpu", why_not);
  if (!gpu) GTEST_SKIP() << "no WebGPU device: " << why_not;
  std::vector<float> values(24);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 5) - 2.0f;
  std::vector<float> expected;
  for (float v : values) expected.push_back(-std::max(v, 0.0f));
  const Tensor x = float_tensor_of({2, 3, 4}, values);
  for (const auto& [shape, want] :
       {std::pair<std::vector<int64_t>, Shape>{{4, 6}, {4, 6}}, {{-1, 8}, {3, 8}}, {{0, 12}, {2, 12}}}) {
    Tensor shape_tensor(DType::Int64, {2}), axes(DType::Int64, {1});
    std::copy(shape.begin(), shape.end(), shape_tensor.mutable_data_as<int64_t>());
    axes.mutable_data_as<int64_t>()[0] = 1;
    const auto out = gpu->run({x, shape_tensor, axes});
    const Tensor& y = std::get<Tensor>(out[0]);
    EXPECT_EQ(y.shape(), want);
    EXPECT_EQ(floats_of(y), expected);
  }
  std::map<std::string, std::string> devices;
  for (const OpProfile& p : gpu->profile()) devices[p.op] = p.device;
  for (const char* op : {"ai.onnx.Reshape", "ai.onnx.Unsqueeze", "ai.onnx.Squeeze"}) EXPECT_EQ(devices[op], "view") << op;
  EXPECT_EQ(cpu_rows(*gpu), std::vector<std::string>{});
}

}  // namespace
}  // namespace wgml::testing
