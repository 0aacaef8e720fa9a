// Run-time integers in ONNX programs are 64-bit: Range, Slice, Expand, ConstantOfShape, Pad,
// OneHot and Loop read int64 operands beyond int32 exactly, and a count too large for a tensor
// (or for the memory limit) is refused, never clamped or cut to its low 32 bits.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <string>

#include "core/memory_budget.h"
#include "frontend/onnx/onnx_builder.h"
#include "wgml/session.h"

namespace wgml::testing {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

constexpr int64_t kBeyondInt32 = int64_t{1} << 32;  // its low 32 bits are 0
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

Tensor int64_scalar(int64_t v) { return Tensor::from_bytes(DType::Int64, {}, &v); }

Tensor int64_vector(const std::vector<int64_t>& v) {
  return Tensor::from_bytes(DType::Int64, {static_cast<int64_t>(v.size())}, v.data());
}

std::vector<int64_t> int64s_of(const Value& v) {
  const Tensor& t = std::get<Tensor>(v);
  EXPECT_EQ(t.dtype(), DType::Int64);
  return std::vector<int64_t>(t.data_as<int64_t>(), t.data_as<int64_t>() + t.numel());
}

// Sessions run under 1 MiB: a count read wrongly as a small one would pass, a huge one is refused.
Session small_session(const OnnxModel& m, const std::string& hint) {
  SessionOptions options;
  options.max_memory_bytes = 1 << 20;
  return Session(m.write(fresh_directory(hint)), options);
}

Error run_error(Session& session, const std::vector<Value>& inputs) {
  try {
    session.run(inputs);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "the run succeeded";
  return Error(ErrorCode::Runtime, "");
}

OnnxModel range_model() {
  OnnxModel m;
  m.input("start", kInt64, {}).input("limit", kInt64, {}).input("delta", kInt64, {}).output("y", kInt64, {kDynamic});
  m.node("Range", {"start", "limit", "delta"}, {"y"}, "range");
  return m;
}

TEST(OnnxInt64Values, RangeStepsBeyondInt32AreExact) {
  Session session = small_session(range_model(), "range_steps");
  const auto out = session.run({int64_scalar(0), int64_scalar(9'000'000'000), int64_scalar(3'000'000'000)});
  EXPECT_THAT(int64s_of(out[0]), ElementsAre(0, 3'000'000'000, 6'000'000'000));  // was []
}

TEST(OnnxInt64Values, RangeFromBeyondInt32StartsThere) {
  Session session = small_session(range_model(), "range_start");
  const auto out = session.run({int64_scalar(5'000'000'000), int64_scalar(5'000'000'003), int64_scalar(1)});
  EXPECT_THAT(int64s_of(out[0]), ElementsAre(5'000'000'000, 5'000'000'001, 5'000'000'002));  // was 705032704...
}

TEST(OnnxInt64Values, RangeOverTheWholeInt64LineIsExactOrRefused) {
  Session session = small_session(range_model(), "range_wide");
  const int64_t min = std::numeric_limits<int64_t>::min(), quarter = int64_t{1} << 62;
  EXPECT_THAT(int64s_of(session.run({int64_scalar(min), int64_scalar(kInt64Max), int64_scalar(quarter)})[0]),
              ElementsAre(min, -quarter, 0, quarter));
  const Error e = run_error(session, {int64_scalar(min), int64_scalar(kInt64Max), int64_scalar(1)});
  EXPECT_EQ(e.code(), ErrorCode::Runtime);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("ARange"), HasSubstr("18446744073709551615 elements"), HasSubstr("node 'range'")));
}

TEST(OnnxInt64Values, SliceToARunTimeInt64MaxKeepsTheRest) {
  OnnxModel m;
  m.input("x", kInt64, {4}).input("starts", kInt64, {1}).input("ends", kInt64, {1}).output("y", kInt64, {kDynamic});
  m.node("Slice", {"x", "starts", "ends"}, {"y"}, "slice");
  Session session = small_session(m, "slice_end");
  const Tensor x = int64_vector({10, 11, 12, 13});
  EXPECT_THAT(int64s_of(session.run({x, int64_vector({0}), int64_vector({kInt64Max})})[0]), ElementsAre(10, 11, 12, 13));
  EXPECT_THAT(
      int64s_of(session.run({x, int64_vector({std::numeric_limits<int64_t>::min()}), int64_vector({kBeyondInt32 + 2})})[0]),
      ElementsAre(10, 11, 12, 13));
  EXPECT_THAT(int64s_of(session.run({x, int64_vector({-kBeyondInt32}), int64_vector({2})})[0]), ElementsAre(10, 11));
}

// The refusal names the node and the whole count: the low 32 bits (2) were taken before.
void expect_refused_count(Session& session, const std::vector<Value>& inputs, const std::string& node, const std::string& dim) {
  const Error e = run_error(session, inputs);
  EXPECT_EQ(e.code(), ErrorCode::ResourceLimit) << e.what();
  EXPECT_THAT(e.what(), AllOf(HasSubstr("node '" + node + "'"), HasSubstr(dim)));
}

TEST(OnnxInt64Values, ExpandBeyondInt32IsRefusedNotCut) {
  OnnxModel m;
  m.input("x", kInt64, {1}).input("shape", kInt64, {1}).output("y", kInt64, {kDynamic});
  m.node("Expand", {"x", "shape"}, {"y"}, "expand");
  Session session = small_session(m, "expand");
  EXPECT_THAT(int64s_of(session.run({int64_vector({7}), int64_vector({3})})[0]), ElementsAre(7, 7, 7));
  expect_refused_count(session, {int64_vector({7}), int64_vector({kBeyondInt32 + 2})}, "expand", "4294967298");
}

OnnxModel constant_of_shape_model() {
  OnnxModel m;
  m.input("shape", kInt64, {1}).output("y", kFloat, {kDynamic});
  m.node("ConstantOfShape", {"shape"}, {"y"}, "fill");
  return m;
}

TEST(OnnxInt64Values, ConstantOfShapeBeyondInt32IsRefusedNotCut) {
  Session session = small_session(constant_of_shape_model(), "constant_of_shape");
  EXPECT_EQ(std::get<Tensor>(session.run({int64_vector({5})})[0]).shape(), Shape{5});
  expect_refused_count(session, {int64_vector({kBeyondInt32 + 2})}, "fill", "4294967298");
}

// 2^62 floats were made [2^31 - 1] (8 GiB) under the default limit: now past every limit.
TEST(OnnxInt64Values, ConstantOfShapeOfTwoToTheSixtyTwoIsRefusedUnderTheDefaultLimit) {
  Session session(constant_of_shape_model().write(fresh_directory("constant_of_shape_huge")));
  expect_refused_count(session, {int64_vector({int64_t{1} << 62})}, "fill", "4611686018427387904");
}

OnnxModel pad_model() {
  OnnxModel m;
  m.input("x", kInt64, {2}).input("pads", kInt64, {2}).output("y", kInt64, {kDynamic});
  m.node("Pad", {"x", "pads"}, {"y"}, "pad");
  return m;
}

TEST(OnnxInt64Values, PadBeyondInt32IsRefusedNotClamped) {
  Session session = small_session(pad_model(), "pad");
  EXPECT_THAT(int64s_of(session.run({int64_vector({1, 2}), int64_vector({1, 2})})[0]), ElementsAre(0, 1, 2, 0, 0));
  expect_refused_count(session, {int64_vector({1, 2}), int64_vector({int64_t{1} << 40, 0})}, "pad", "1099511627778");
  expect_refused_count(session, {int64_vector({1, 2}), int64_vector({0, kBeyondInt32})}, "pad", "4294967298");
}

TEST(OnnxInt64Values, PadPastInt64IsAnOverflowError) {
  Session session = small_session(pad_model(), "pad_overflow");
  const Error e = run_error(session, {int64_vector({1, 2}), int64_vector({kInt64Max, kInt64Max})});
  EXPECT_EQ(e.code(), ErrorCode::Runtime);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("node 'pad'"), HasSubstr("overflows int64")));
}

TEST(OnnxInt64Values, OneHotDepthBeyondInt32IsRefusedNotCut) {
  OnnxModel m;
  m.input("indices", kInt64, {2}).input("depth", kInt64, {}).input("values", kInt64, {2}).output("y", kInt64, {2, kDynamic});
  m.node("OneHot", {"indices", "depth", "values"}, {"y"}, "one_hot");
  Session session = small_session(m, "one_hot");
  const Tensor values = int64_vector({0, 9});
  EXPECT_THAT(int64s_of(session.run({int64_vector({-1, 1}), int64_scalar(3), values})[0]), ElementsAre(0, 0, 9, 0, 9, 0));
  // Depth 2^32 + 3 was read as 3.
  expect_refused_count(session, {int64_vector({-1, 1}), int64_scalar(kBeyondInt32 + 3), values}, "one_hot", "4294967299");
}

// Loop with a run-time trip count M: y = x + M.
OnnxModel loop_model() {
  OnnxModel m;
  m.input("trips", kInt64, {}).input("x", kFloat, {1}).output("y", kFloat, {1});
  m.initializer("cond", std::vector<int64_t>{1}, {});
  m.graph().mutable_initializer(0)->set_data_type(kBool);
  m.graph().mutable_initializer(0)->clear_int64_data();
  m.graph().mutable_initializer(0)->set_raw_data(std::string(1, '\1'));
  m.initializer("one", std::vector<float>{1}, {1});
  ::onnx::GraphProto body;
  add_value_info(body.add_input(), "i", kInt64, {});
  add_value_info(body.add_input(), "c", kBool, {});
  add_value_info(body.add_input(), "acc", kFloat, {1});
  add_value_info(body.add_output(), "c", kBool, {});
  add_value_info(body.add_output(), "next", kFloat, {1});
  ::onnx::NodeProto* add = body.add_node();
  add->set_op_type("Add");
  add->add_input("acc");
  add->add_input("one");
  add->add_output("next");
  set_attr(m.node("Loop", {"trips", "cond", "x"}, {"y"}, "loop"), "body", body);
  return m;
}

TEST(OnnxInt64Values, LoopTripCountBeyondInt32IsRefusedBeforeTheFirstStep) {
  Session session = small_session(loop_model(), "loop");
  EXPECT_EQ(floats_of(std::get<Tensor>(session.run({int64_scalar(3), float_tensor_of({1}, {0.5f})})[0])),
            std::vector<float>{3.5f});
  // 2^32 + 2 ran twice; 2^62 sized a 16 GiB index array.
  expect_refused_count(session, {int64_scalar(kBeyondInt32 + 2), float_tensor_of({1}, {0})}, "loop", "4294967298");
  expect_refused_count(session, {int64_scalar(int64_t{1} << 62), float_tensor_of({1}, {0})}, "loop", "4611686018427387904");
}

// A dim plus a run-time int64 is value-slot arithmetic (AddInt): past int64 it is an error naming
// the node, never a wrapped count.
TEST(OnnxInt64Values, ShapeArithmeticPastInt64IsAnError) {
  OnnxModel m;
  m.input("x", kFloat, {kDynamic}).output("y", kFloat, {kDynamic});
  m.initializer("offset", std::vector<int64_t>{kInt64Max}, {});
  m.initializer("axes", std::vector<int64_t>{0}, {1});
  m.node("Shape", {"x"}, {"s"});
  m.node("Squeeze", {"s"}, {"n"});
  m.node("Add", {"n", "offset"}, {"count"}, "count");
  m.node("Unsqueeze", {"count", "axes"}, {"shape"});
  m.node("ConstantOfShape", {"shape"}, {"y"});
  Session session = small_session(m, "add_int_overflow");
  const Error e = run_error(session, {float_tensor_of({2}, {0, 0})});
  EXPECT_EQ(e.code(), ErrorCode::Runtime);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("AddInt: the result overflows int64"), HasSubstr("node 'count' (Add)")));
}

// MemAvailable bounds the default limit: a default session cannot push the machine into swap.
TEST(OnnxInt64Values, TheDefaultMemoryLimitIsAtMostTheFreeMemory) {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  while (meminfo >> key >> kib && key != "MemAvailable:") meminfo.ignore(1 << 10, '\n');
  if (key != "MemAvailable:") GTEST_SKIP() << "no MemAvailable in /proc/meminfo";
  // Free memory moves while the test runs: allow it to have grown by a quarter since.
  EXPECT_LE(default_memory_limit(), kib * 1024 / 4 * 5);
  EXPECT_GT(default_memory_limit(), 0u);
}

}  // namespace
}  // namespace wgml::testing
