// Bad ONNX input: every case is a typed wgml::Error naming the file and, where there is one, the
// node and its op type; never a crash.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>

#include "frontend/load_model.h"
#include "frontend/onnx/onnx_builder.h"
#include "wgml/session.h"

namespace wgml::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

Error load_error(const std::string& path) {
  try {
    frontend::load_model(path);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << path << " loaded";
  return Error(ErrorCode::Runtime, "");
}

std::string write_bytes(const std::string& hint, const std::string& bytes) {
  const std::string path = (fresh_directory(hint) / "model.onnx").string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(OnnxMalformed, BytesThatAreNoProtobuf) {
  const Error e = load_error(write_bytes("garbage", std::string("\xff\xff\xff\xff not a protobuf", 20)));
  EXPECT_EQ(e.code(), ErrorCode::InvalidFormat);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("model.onnx"), HasSubstr("ModelProto")));
}

TEST(OnnxMalformed, AModelWithoutAGraph) {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  const Error e = load_error(write_bytes("no_graph", m.SerializeAsString()));
  EXPECT_EQ(e.code(), ErrorCode::InvalidFormat);
  EXPECT_THAT(e.what(), HasSubstr("with a graph"));
}

TEST(OnnxMalformed, ACycleNamesItsNodes) {
  OnnxModel m;
  m.input("x", kFloat, {2}).output("b", kFloat, {2});
  m.node("Add", {"x", "b"}, {"a"}, "left");
  m.node("Relu", {"a"}, {"b"}, "right");
  const Error e = load_error(m.write(fresh_directory("cycle")));
  EXPECT_EQ(e.code(), ErrorCode::InvalidProgram);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("cycle"), HasSubstr("node 'left' (Add)"), HasSubstr("node 'right' (Relu)")));
}

TEST(OnnxMalformed, AMissingInitializerNamesTheNode) {
  OnnxModel m;
  m.input("x", kFloat, {2}).output("y", kFloat, {2});
  m.node("Mul", {"x", "weights"}, {"y"}, "scale");
  const Error e = load_error(m.write(fresh_directory("missing")));
  EXPECT_EQ(e.code(), ErrorCode::InvalidProgram);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("node 'scale' (Mul)"), HasSubstr("'weights'")));
}

TEST(OnnxMalformed, AnInitializerWhoseDataDoesNotMatchItsDims) {
  OnnxModel m;
  m.input("x", kFloat, {3}).output("y", kFloat, {3});
  ::onnx::TensorProto* w = m.graph().add_initializer();
  w->set_name("w");
  w->set_data_type(kFloat);
  w->add_dims(3);
  w->set_raw_data(std::string(8, '\0'));  // two floats for three
  m.node("Add", {"x", "w"}, {"y"});
  const Error e = load_error(m.write(fresh_directory("short_raw")));
  EXPECT_EQ(e.code(), ErrorCode::InvalidFormat);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("initializer 'w'"), HasSubstr("expected 12 bytes of raw_data, found 8")));
}

TEST(OnnxMalformed, ExternalDataMayNotLeaveTheModelDirectory) {
  OnnxModel m;
  m.input("x", kFloat, {1}).output("y", kFloat, {1});
  ::onnx::TensorProto* w = m.graph().add_initializer();
  w->set_name("w");
  w->set_data_type(kFloat);
  w->add_dims(1);
  w->set_data_location(::onnx::TensorProto::EXTERNAL);
  auto* location = w->add_external_data();
  location->set_key("location");
  location->set_value("../secret.bin");
  m.node("Add", {"x", "w"}, {"y"});
  const Error e = load_error(m.write(fresh_directory("escape")));
  EXPECT_EQ(e.code(), ErrorCode::InvalidFormat);
  EXPECT_THAT(e.what(), HasSubstr("may not contain '..'"));
}

TEST(OnnxMalformed, OperandsOfDifferentDtypesNameTheNode) {
  OnnxModel m;
  m.input("x", kFloat, {2}).input("n", kInt64, {2}).output("y", kFloat, {2});
  m.node("Add", {"x", "n"}, {"y"}, "mixed");
  const Error e = load_error(m.write(fresh_directory("dtype")));
  EXPECT_EQ(e.code(), ErrorCode::InvalidProgram);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("node 'mixed' (Add)"), HasSubstr("float32 and int64")));
}

// Lets the model use ONNX Runtime's contrib ops (domain com.microsoft, version 1).
void import_contrib_ops(OnnxModel& m) {
  ::onnx::OperatorSetIdProto* contrib = m.proto().add_opset_import();
  contrib->set_domain("com.microsoft");
  contrib->set_version(1);
}

// ONNX Runtime's integer products check B's scale against B: one that is neither one value nor one
// per column of B names the node.
TEST(OnnxMalformed, AnIntegerProductScaleThatFitsNoColumnOfB) {
  OnnxModel m;
  import_contrib_ops(m);
  m.input("a", kFloat, {2, 4}).output("y", kFloat, {2, 3});
  ::onnx::TensorProto* b = m.graph().add_initializer();
  b->set_name("b");
  b->set_data_type(::onnx::TensorProto::INT8);
  b->add_dims(4);
  b->add_dims(3);
  b->set_raw_data(std::string(12, '\1'));
  m.initializer("b_scale", std::vector<float>{0.1f, 0.2f}, {2});
  m.node("DynamicQuantizeMatMul", {"a", "b", "b_scale"}, {"y"}, "dqmm").set_domain("com.microsoft");
  const Error e = load_error(m.write(fresh_directory("dqmm")));
  EXPECT_EQ(e.code(), ErrorCode::InvalidProgram);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("node 'dqmm' (DynamicQuantizeMatMul)"), HasSubstr("b_scale of one value")));
}

// MultiHeadAttention's query must split into num_heads heads.
TEST(OnnxMalformed, AnAttentionQueryThatSplitsIntoNoHeads) {
  OnnxModel m;
  import_contrib_ops(m);
  m.input("q", kFloat, {1, 2, 10}).input("k", kFloat, {1, 3, 10}).input("v", kFloat, {1, 3, 10}).output("y", kFloat, {1, 2, 10});
  ::onnx::NodeProto& node = m.node("MultiHeadAttention", {"q", "k", "v"}, {"y"}, "mha");
  node.set_domain("com.microsoft");
  set_attr(node, "num_heads", int64_t{4});
  const Error e = load_error(m.write(fresh_directory("mha")));
  EXPECT_EQ(e.code(), ErrorCode::InvalidProgram);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("node 'mha' (MultiHeadAttention)"), HasSubstr("divisible by num_heads")));
}

TEST(OnnxMalformed, AnAttributeOfTheWrongType) {
  OnnxModel m;
  m.input("x", kFloat, {2, 3}).output("y", kFloat, {2, 3});
  set_attr(m.node("Softmax", {"x"}, {"y"}, "soft"), "axis", std::string("last"));
  const Error e = load_error(m.write(fresh_directory("attr")));
  EXPECT_EQ(e.code(), ErrorCode::InvalidProgram);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("node 'soft' (Softmax)"), HasSubstr("attribute 'axis' to be an int")));
}

TEST(OnnxMalformed, AnOpsetNewerThanTheFrontendKnows) {
  OnnxModel m(99);
  m.input("x", kFloat, {1}).output("y", kFloat, {1});
  m.node("Relu", {"x"}, {"y"});
  const Error e = load_error(m.write(fresh_directory("opset")));
  EXPECT_EQ(e.code(), ErrorCode::Unsupported);
  EXPECT_THAT(e.what(), HasSubstr("found 99"));
}

TEST(OnnxMalformed, AnInputOfTheWrongDtypeAtRunTime) {
  OnnxModel m;
  m.input("x", kFloat, {2}).output("y", kFloat, {2});
  m.node("Relu", {"x"}, {"y"});
  Session session(m.write(fresh_directory("run_dtype")));
  const int64_t values[2] = {1, 2};
  try {
    session.run({Tensor::from_bytes(DType::Int64, {2}, values)});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("expected dtype float32, found int64"));
  }
}

TEST(OnnxMalformed, ShapesThatDoNotBroadcastAtRunTimeNameTheNode) {
  OnnxModel m;
  m.input("x", kFloat, {kDynamic}).input("z", kFloat, {kDynamic}).output("y", kFloat, {kDynamic});
  m.node("Add", {"x", "z"}, {"y"}, "sum");
  Session session(m.write(fresh_directory("run_shape")));
  try {
    session.run({float_tensor_of({2}, {1, 2}), float_tensor_of({3}, {1, 2, 3})});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Runtime);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("AddNode"), HasSubstr("ONNX node 'sum' (Add)")));
  }
}

// A Loop listing only its trip count, whose body has one input where two (iteration, condition)
// are due: an error naming the node, never a read past the body's inputs.
TEST(OnnxMalformed, ALoopBodyWithoutItsConditionInputNamesTheNode) {
  OnnxModel m;
  m.input("x", kFloat, {1}).output("y", kFloat, {1});
  m.initializer("trips", std::vector<int64_t>{2}, {});
  ::onnx::GraphProto body;
  add_value_info(body.add_input(), "i", kInt64, {});
  add_value_info(body.add_output(), "i", kInt64, {});
  set_attr(m.node("Loop", {"trips"}, {"y"}, "loop"), "body", body);
  const Error e = load_error(m.write(fresh_directory("loop_body")));
  EXPECT_THAT(e.what(), AllOf(HasSubstr("node 'loop' (Loop)"), HasSubstr("expected a body with 2 inputs")));
}

// scan_input_axes must give an axis for each scanned input: one for two is an error naming the
// node, never a read past the attribute's values.
TEST(OnnxMalformed, AScanWithTooFewInputAxesNamesTheNode) {
  OnnxModel m;
  m.input("x", kFloat, {2, 1}).output("y", kFloat, {2, 1});
  ::onnx::GraphProto body;
  add_value_info(body.add_input(), "a", kFloat, {1});
  add_value_info(body.add_input(), "b", kFloat, {1});
  add_value_info(body.add_output(), "s", kFloat, {1});
  ::onnx::NodeProto* add = body.add_node();
  add->set_op_type("Add");
  add->add_input("a");
  add->add_input("b");
  add->add_output("s");
  ::onnx::NodeProto& scan = m.node("Scan", {"x", "x"}, {"y"}, "scan");
  set_attr(scan, "body", body);
  set_attr(scan, "num_scan_inputs", int64_t{2});
  set_attr(scan, "scan_input_axes", std::vector<int64_t>{0});
  const Error e = load_error(m.write(fresh_directory("scan_axes")));
  EXPECT_THAT(e.what(), AllOf(HasSubstr("node 'scan' (Scan)"), HasSubstr("one value per scanned input")));
}

// Runs `m` (its one input x: float32 [1, 1, 2, 2]) under a 1 MiB memory limit and expects the
// node `node` to be refused with ResourceLimit before its working memory is allocated.
void expect_working_memory_refused(const OnnxModel& m, const std::string& node) {
  SessionOptions options;
  options.max_memory_bytes = 1 << 20;
  Session session(m.write(fresh_directory("working_memory")), options);
  try {
    session.run({float_tensor_of({1, 1, 2, 2}, {1, 2, 3, 4})});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ResourceLimit);
    EXPECT_THAT(e.what(), AllOf(HasSubstr(node), HasSubstr("float64")));  // the working doubles
  }
}

// Sizes a model's attributes or constants ask for, far past the limit, are refused, never
// allocated (each once aborted under ASan with a multi-terabyte allocation).
TEST(OnnxMalformed, AResizeToAHugeOutputIsRefusedByTheMemoryLimit) {
  OnnxModel m;
  m.input("x", kFloat, {1, 1, 2, 2}).output("y", kFloat, {kDynamic, kDynamic, kDynamic, kDynamic});
  m.initializer("scales", std::vector<float>{1, 1, 1e6f, 1e6f}, {4});
  set_attr(m.node("Resize", {"x", "", "scales"}, {"y"}, "up"), "mode", std::string("linear"));
  expect_working_memory_refused(m, "ONNX node 'up' (Resize)");
}

// An empty tensor resized along an axis of two billion positions is empty: no position is computed.
TEST(OnnxMalformed, AResizeOfAnEmptyTensorToAHugeAxisReturnsAtOnce) {
  OnnxModel m;
  m.input("x", kFloat, {0, 2}).output("y", kFloat, {kDynamic, kDynamic});
  m.initializer("scales", std::vector<float>{1, 1e9f}, {2});
  set_attr(m.node("Resize", {"x", "", "scales"}, {"y"}), "mode", std::string("linear"));
  Session session(m.write(fresh_directory("resize_empty")));
  const std::vector<Value> outputs = session.run({float_tensor_of({0, 2}, {})});
  EXPECT_EQ(std::get<Tensor>(outputs.at(0)).shape(), (Shape{0, 2000000000}));
}

TEST(OnnxMalformed, ATfIdfColumnPastTheMemoryLimitIsRefused) {
  OnnxModel m;
  m.input("x", kFloat, {1, 1, 2, 2}).output("y", kFloat, {kDynamic, kDynamic});
  m.initializer("shape", std::vector<int64_t>{1, 4}, {2});
  set_attr(m.node("Cast", {"x"}, {"xi"}), "to", int64_t{kInt64});
  m.node("Reshape", {"xi", "shape"}, {"rows"});
  ::onnx::NodeProto& tfidf = m.node("TfIdfVectorizer", {"rows"}, {"y"}, "tfidf");
  set_attr(tfidf, "mode", std::string("TF"));
  set_attr(tfidf, "min_gram_length", int64_t{1});
  set_attr(tfidf, "max_gram_length", int64_t{1});
  set_attr(tfidf, "max_skip_count", int64_t{0});
  set_attr(tfidf, "ngram_counts", std::vector<int64_t>{0});
  set_attr(tfidf, "pool_int64s", std::vector<int64_t>{2});
  set_attr(tfidf, "ngram_indexes", std::vector<int64_t>{int64_t{1} << 39});
  expect_working_memory_refused(m, "ONNX node 'tfidf' (TfIdfVectorizer)");
}

// A DynamicQuantizeLSTM node 'lstm' of hidden size 1 over x and the initializers w and r (the caller
// adds them), with per-tensor scales.
void add_quantized_lstm(OnnxModel& m) {
  m.initializer("w_scale", std::vector<float>{0.1f}, {1}).initializer("r_scale", std::vector<float>{0.1f}, {1});
  ::onnx::NodeProto& node =
      m.node("DynamicQuantizeLSTM", {"x", "w", "r", "", "", "", "", "", "w_scale", "", "r_scale", ""}, {"y"}, "lstm");
  node.set_domain("com.microsoft");
  set_attr(node, "hidden_size", int64_t{1});
}

// DynamicQuantizeLSTM's weights must be 8-bit integers: float weights (which would not convert to
// integers) are an error naming the node when it runs, never undefined behaviour.
TEST(OnnxMalformed, QuantizedLstmWeightsThatAreNotIntegers) {
  OnnxModel m;
  import_contrib_ops(m);
  m.input("x", kFloat, {1, 1, 2}).output("y", kFloat, {1, 1, 1, 1});
  m.initializer("w", std::vector<float>(8, 1e20f), {1, 2, 4}).initializer("r", std::vector<float>(4, 1e20f), {1, 1, 4});
  add_quantized_lstm(m);
  Session session(m.write(fresh_directory("qlstm")));
  try {
    session.run({float_tensor_of({1, 1, 2}, {1, 2})});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("ONNX node 'lstm' (DynamicQuantizeLSTM)"), HasSubstr("int8 or uint8 weights")));
  }
}

// Infinite and NaN activations quantize to the ends of the byte range (no float-to-int conversion
// out of range, which UBSan would report): the LSTM runs and gives its three outputs.
TEST(OnnxMalformed, QuantizedLstmOfNonFiniteInputsRuns) {
  OnnxModel m;
  import_contrib_ops(m);
  m.input("x", kFloat, {1, 1, 2}).output("y", kFloat, {1, 1, 1, 1});
  for (const auto& [name, k] : {std::pair<const char*, int64_t>{"w", 2}, {"r", 1}}) {
    ::onnx::TensorProto* t = m.graph().add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::INT8);
    for (int64_t d : {int64_t{1}, k, int64_t{4}}) t->add_dims(d);
    t->set_raw_data(std::string(static_cast<size_t>(4 * k), '\3'));
  }
  add_quantized_lstm(m);
  Session session(m.write(fresh_directory("qlstm_nan")));
  const std::vector<Value> outputs =
      session.run({float_tensor_of({1, 1, 2}, {std::numeric_limits<float>::infinity(), std::nanf("")})});
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(std::get<Tensor>(outputs[0]).shape(), (Shape{1, 1, 1, 1}));
}

}  // namespace
}  // namespace wgml::testing
