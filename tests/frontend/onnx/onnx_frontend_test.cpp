// The ONNX frontend end to end: models built with ONNX's protobuf classes load, lower to mlx nodes
// (or kept ai.onnx ops) and produce hand-derived values on the CPU backend.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "frontend/load_model.h"
#include "frontend/onnx/onnx_builder.h"
#include "frontend/onnx/onnx_model.h"
#include "frontend/summary.h"
#include "wgml/session.h"

namespace wgml::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<float> run_one(const std::string& path, const std::vector<Value>& inputs, Shape* shape = nullptr) {
  Session session(path);
  const auto outputs = session.run(inputs);
  const Tensor& t = std::get<Tensor>(outputs.at(0));
  if (shape) *shape = t.shape();
  return floats_of(t);
}

size_t count_of(const frontend::ModelSummary& s, const std::string& node) {
  size_t n = 0;
  for (const auto& chain : s.chains) {
    auto it = chain.node_histogram.find(node);
    if (it != chain.node_histogram.end()) n += it->second;
  }
  return n;
}

// relu(x @ w + b), x of dynamic batch.
OnnxModel dense_model() {
  OnnxModel m;
  m.input("x", kFloat, {kDynamic, 2}).output("y", kFloat, {kDynamic, 3});
  m.initializer("w", std::vector<float>{1, -1, 2, 0.5f, 1, -3}, {2, 3});
  m.initializer("b", std::vector<float>{0, 1, 0.25f}, {3});
  m.node("MatMul", {"x", "w"}, {"xw"});
  m.node("Add", {"xw", "b"}, {"z"});
  m.node("Relu", {"z"}, {"y"});
  return m;
}

TEST(OnnxFrontend, RunsADenseLayerForAnyBatchSize) {
  const std::string path = dense_model().write(fresh_directory("dense"));
  // [1, 2] @ w = [1*1 + 2*0.5, 1*-1 + 2*1, 1*2 + 2*-3] = [2, 1, -4]; + b = [2, 2, -3.75]; relu.
  EXPECT_THAT(run_one(path, {float_tensor_of({1, 2}, {1, 2})}), ElementsAre(2, 2, 0));
  Shape shape;
  const auto two = run_one(path, {float_tensor_of({2, 2}, {1, 2, -2, 0})}, &shape);
  EXPECT_EQ(shape, (Shape{2, 3}));
  // Row 2: [-2, 2, -4] + b = [-2, 3, -3.75] -> [0, 3, 0].
  EXPECT_THAT(two, ElementsAre(2, 2, 0, 0, 3, 0));
}

// reshape(x, concat(unsqueeze(shape(x)[0]), [-1])): flattens all but the first dim.
OnnxModel flatten_by_shape_model(std::vector<int64_t> dims) {
  OnnxModel m;
  m.input("x", kFloat, dims).output("y", kFloat, {kDynamic, 12});
  m.initializer("zero", std::vector<int64_t>{0}, {});
  m.initializer("minus_one", std::vector<int64_t>{-1}, {1});
  m.initializer("axes", std::vector<int64_t>{0}, {1});
  m.node("Shape", {"x"}, {"s"});
  m.node("Gather", {"s", "zero"}, {"batch"});
  m.node("Unsqueeze", {"batch", "axes"}, {"batch1"});
  set_attr(m.node("Concat", {"batch1", "minus_one"}, {"target"}), "axis", int64_t{0});
  m.node("Reshape", {"x", "target"}, {"y"});
  return m;
}

TEST(OnnxFrontend, FoldsStaticShapeArithmeticAtLoadTime) {
  const std::string path = flatten_by_shape_model({2, 3, 4}).write(fresh_directory("static_shape"));
  const auto summary = frontend::summarize(frontend::load_model(path));
  EXPECT_EQ(count_of(summary, "SymSizeNode"), 0u);
  EXPECT_EQ(count_of(summary, "ItemIntNode"), 0u);
  EXPECT_EQ(summary.outputs[0].shape.size(), 2u);
  EXPECT_EQ(summary.outputs[0].shape[1].value, 12);
  std::vector<float> x(24);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  Shape shape;
  EXPECT_EQ(run_one(path, {float_tensor_of({2, 3, 4}, x)}, &shape), x);
  EXPECT_EQ(shape, (Shape{2, 12}));
}

TEST(OnnxFrontend, KeepsDynamicShapeArithmeticInValueSlots) {
  const std::string path = flatten_by_shape_model({kDynamic, 3, 4}).write(fresh_directory("dynamic_shape"));
  const auto summary = frontend::summarize(frontend::load_model(path));
  EXPECT_EQ(count_of(summary, "SymSizeNode"), 1u);
  for (int64_t batch : {1, 5}) {
    std::vector<float> x(static_cast<size_t>(batch * 12), 1.5f);
    Shape shape;
    EXPECT_EQ(run_one(path, {float_tensor_of({batch, 3, 4}, x)}, &shape), x);
    EXPECT_EQ(shape, (Shape{batch, 12}));
  }
}

TEST(OnnxFrontend, ReadsExternalDataNextToTheModel) {
  const auto dir = fresh_directory("external");
  const std::vector<float> weights{0.5f, -1, 4};
  std::ofstream(dir / "weights.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(weights.data()), sizeof(float) * weights.size());
  OnnxModel m;
  m.input("x", kFloat, {3}).output("y", kFloat, {3});
  ::onnx::TensorProto* w = m.graph().add_initializer();
  w->set_name("w");
  w->set_data_type(kFloat);
  w->add_dims(3);
  w->set_data_location(::onnx::TensorProto::EXTERNAL);
  auto* location = w->add_external_data();
  location->set_key("location");
  location->set_value("weights.bin");
  m.node("Mul", {"x", "w"}, {"y"});
  EXPECT_THAT(run_one(m.write(dir), {float_tensor_of({3}, {2, 3, 0.25f})}), ElementsAre(1, -3, 1));
}

::onnx::GraphProto constant_branch(const std::string& output, float value) {
  ::onnx::GraphProto g;
  g.set_name(output);
  ::onnx::NodeProto* n = g.add_node();
  n->set_op_type("Constant");
  n->set_name(output + "_value");
  n->add_output(output);
  set_attr(*n, "value", float_tensor("", {value}, {1}));
  add_value_info(g.add_output(), output, kFloat, {1});
  return g;
}

TEST(OnnxFrontend, LowersIfToTwoChains) {
  OnnxModel m;
  m.input("cond", kBool, {}).output("y", kFloat, {1});
  auto& branch = m.node("If", {"cond"}, {"y"});
  set_attr(branch, "then_branch", constant_branch("then_out", 1.5f));
  set_attr(branch, "else_branch", constant_branch("else_out", -2));
  const std::string path = m.write(fresh_directory("if"));
  EXPECT_EQ(count_of(frontend::summarize(frontend::load_model(path)), "IfNode"), 1u);
  for (bool c : {true, false}) {
    const uint8_t byte = c;
    EXPECT_THAT(run_one(path, {Tensor::from_bytes(DType::Bool, {}, &byte)}), ElementsAre(c ? 1.5f : -2.0f));
  }
}

// sum = x; for i in range(3): sum = sum + i, collecting sum each step.
TEST(OnnxFrontend, LowersACountedLoopToAScan) {
  OnnxModel m;
  m.input("x", kFloat, {1}).output("sum", kFloat, {1}).output("steps", kFloat, {3, 1});
  m.initializer("trips", std::vector<int64_t>{3}, {});
  ::onnx::TensorProto truth;
  truth.set_name("always");
  truth.set_data_type(kBool);
  truth.add_int32_data(1);
  *m.graph().add_initializer() = truth;
  ::onnx::GraphProto body;
  body.set_name("body");
  add_value_info(body.add_input(), "i", kInt64, {});
  add_value_info(body.add_input(), "cond_in", kBool, {});
  add_value_info(body.add_input(), "sum_in", kFloat, {1});
  auto* cast = body.add_node();
  cast->set_op_type("Cast");
  cast->add_input("i");
  cast->add_output("i_float");
  set_attr(*cast, "to", int64_t{kFloat});
  auto* add = body.add_node();
  add->set_op_type("Add");
  add->add_input("sum_in");
  add->add_input("i_float");
  add->add_output("sum_out");
  auto* keep = body.add_node();
  keep->set_op_type("Identity");
  keep->add_input("cond_in");
  keep->add_output("cond_out");
  auto* copy = body.add_node();
  copy->set_op_type("Identity");
  copy->add_input("sum_out");
  copy->add_output("step");
  add_value_info(body.add_output(), "cond_out", kBool, {});
  add_value_info(body.add_output(), "sum_out", kFloat, {1});
  add_value_info(body.add_output(), "step", kFloat, {1});
  set_attr(m.node("Loop", {"trips", "always", "x"}, {"sum", "steps"}), "body", body);
  Session session(m.write(fresh_directory("loop")));
  const auto outputs = session.run({float_tensor_of({1}, {10})});
  EXPECT_THAT(floats_of(std::get<Tensor>(outputs[0])), ElementsAre(13));
  EXPECT_THAT(floats_of(std::get<Tensor>(outputs[1])), ElementsAre(10, 11, 13));
}

TEST(OnnxFrontend, KeepsResizeInTheOnnxDomain) {
  OnnxModel m(13);
  m.input("x", kFloat, {1, 1, 2, 2}).output("y", kFloat, {1, 1, 4, 4});
  m.initializer("scales", std::vector<float>{1, 1, 2, 2}, {4});
  auto& resize = m.node("Resize", {"x", "", "scales"}, {"y"});
  set_attr(resize, "mode", std::string("nearest"));
  set_attr(resize, "coordinate_transformation_mode", std::string("asymmetric"));
  set_attr(resize, "nearest_mode", std::string("floor"));
  const std::string path = m.write(fresh_directory("resize"));
  EXPECT_EQ(count_of(frontend::summarize(frontend::load_model(path)), "ai.onnx.Resize"), 1u);
  EXPECT_THAT(run_one(path, {float_tensor_of({1, 1, 2, 2}, {1, 2, 3, 4})}),
              ElementsAre(1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4));
}

TEST(OnnxFrontend, ListsEveryUnsupportedUseInOneError) {
  OnnxModel m;
  m.input("x", kFloat, {2}).output("y", kFloat, {2});
  m.node("NoSuchOp", {"x"}, {"a"}, "first_bad");
  set_attr(m.node("Cast", {"x"}, {"b"}, "second_bad"), "to", int64_t{::onnx::TensorProto::FLOAT8E4M3FN});
  m.node("AlsoMissing", {"a"}, {"c"}, "third_bad");  // reads an unsupported result: still listed
  m.node("Relu", {"c"}, {"y"});
  try {
    frontend::load_model(m.write(fresh_directory("unsupported")));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Unsupported);
    EXPECT_THAT(e.what(), HasSubstr("node 'first_bad' (NoSuchOp, opset 17): no lowering"));
    EXPECT_THAT(e.what(), HasSubstr("node 'second_bad' (Cast, opset 17): cast to FLOAT8E4M3FN"));
    EXPECT_THAT(e.what(), HasSubstr("node 'third_bad' (AlsoMissing, opset 17): no lowering"));
    EXPECT_THAT(e.what(), HasSubstr("3 unsupported"));
  }
}

TEST(OnnxFrontend, SummarizesAModelForInspect) {
  const auto summary = frontend::summarize(frontend::load_model(dense_model().write(fresh_directory("inspect"))));
  EXPECT_EQ(summary.format, "onnx");
  EXPECT_EQ(summary.source_info.at("opsets"), "ai.onnx 17");
  EXPECT_EQ(summary.source_op_histogram.at("MatMul"), 1u);
  ASSERT_EQ(summary.inputs.size(), 1u);
  EXPECT_EQ(summary.inputs[0].name, "x");
  EXPECT_FALSE(summary.inputs[0].shape[0].is_static());
  EXPECT_EQ(summary.constant_count, 3u);  // w, b, and Relu's zero
  EXPECT_EQ(count_of(summary, "AddmmNode"), 1u);
}

TEST(OnnxFrontend, ReadsTensorProtoFiles) {
  const auto dir = fresh_directory("tensor_file");
  const std::string path = (dir / "input_0.pb").string();
  std::ofstream(path, std::ios::binary) << int64_tensor("x", {7, -8, 9, 10}, {2, 2}).SerializeAsString();
  const Tensor t = frontend::onnx::read_tensor_file(path);
  EXPECT_EQ(t.dtype(), DType::Int64);
  EXPECT_EQ(t.shape(), (Shape{2, 2}));
  EXPECT_THAT(std::vector<int64_t>(t.data_as<int64_t>(), t.data_as<int64_t>() + 4), ElementsAre(7, -8, 9, 10));
}

}  // namespace
}  // namespace wgml::testing
