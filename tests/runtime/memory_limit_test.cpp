// The memory limit (SessionOptions::max_memory_bytes, core/memory_budget.h): a program declaring a
// 1 TiB tensor is refused at load, and one computing a 1 TiB tensor at run time fails that run,
// both with ErrorCode::ResourceLimit naming the node and the size, before any allocation (under
// ASan, an attempt to allocate 1 TiB aborts the test).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "core/memory_budget.h"
#include "support/program_builder.h"
#include "wgml/session.h"

namespace wgml {
namespace {

namespace mx = mlx_delegate;
namespace t = wgml::testing;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr int32_t kRows = 1 << 20, kColumns = 1 << 18;  // float32 [2^20, 2^18]: 1 TiB

// The tiny program (output = input + constant) with a temp, Tid 3, that FullNode fills with ones:
// float32 [rows, kColumns], where rows is the int input `rows` (Vid 0) or a literal.
std::string write_full_program(const t::TempDir& dir, bool rows_from_input) {
  mx::MLXGraphT g = t::tiny_graph();
  g.num_temp_tensors = 1;
  g.num_values = rows_from_input ? 1 : 0;
  mx::FullNodeT full;
  full.out = t::tid(3);
  auto rows = std::make_unique<mx::IntOrVidT>();
  rows->is_vid = rows_from_input;
  rows->literal = kRows;
  if (rows_from_input) rows->vid = t::vid(0);
  full.shape.push_back(std::move(rows));
  auto columns = std::make_unique<mx::IntOrVidT>();
  columns->literal = kColumns;
  full.shape.push_back(std::move(columns));
  full.v = std::make_unique<mx::FloatOrVidT>();
  full.v->literal = 1;
  full.scalar_type = t::kScalarFloat;
  auto& main = t::chain(g, g.main_chain_idx).instructions;
  main.insert(main.begin(), t::instruction(std::move(full)));
  g.tensor_meta.push_back(t::tensor_meta(t::kScalarFloat, {rows_from_input ? -1 : kRows, kColumns}));
  if (rows_from_input) g.input_map.push_back(t::value_slot(0, mx::SlotType::IntValueSlot));
  return t::write_pte_model(dir, rows_from_input ? "dynamic_full" : "static_full", g, t::tiny_constants());
}

Error error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected a wgml::Error";
  return Error(ErrorCode::Runtime, "none");
}

TEST(MemoryLimit, ProgramDeclaringATebibyteTensorIsRefusedAtLoad) {
  const t::TempDir dir;
  const std::string path = write_full_program(dir, false);
  const Error e = error_of([&] { Session session(path); });
  EXPECT_EQ(e.code(), ErrorCode::ResourceLimit);
  EXPECT_THAT(e.what(),
              AllOf(HasSubstr("tensor 3"), HasSubstr("chain 0, instruction 0 (FullNode)"), HasSubstr("float32 [1048576, 262144]"),
                    HasSubstr("1.0 TiB (1099511627776 bytes)"), HasSubstr("--max-memory")));
}

TEST(MemoryLimit, TensorComputedAboveTheLimitFailsTheRunAndTheSessionStaysUsable) {
  const t::TempDir dir;
  Session session(write_full_program(dir, true));
  const float x[4] = {10, 20, 30, 40};
  const Tensor input = Tensor::from_bytes(DType::Float32, {2, 2}, x);
  const Error e = error_of([&] { session.run({input, int64_t{kRows}}); });
  EXPECT_EQ(e.code(), ErrorCode::ResourceLimit);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("chain 0, instruction 0 (FullNode)"), HasSubstr("float32 [1048576, 262144]"),
                              HasSubstr("1.0 TiB (1099511627776 bytes)")));
  ASSERT_TRUE(session.usable());
  const std::vector<Value> outputs = session.run({input, int64_t{2}});
  const Tensor& out = std::get<Tensor>(outputs.at(0));
  EXPECT_THAT(std::vector<float>(out.data_as<float>(), out.data_as<float>() + 4), ::testing::ElementsAre(11, 22, 33, 44));
}

TEST(MemoryLimit, ASmallLimitRefusesTheFirstTensorThatDoesNotFit) {
  const t::TempDir dir;
  SessionOptions options;
  options.max_memory_bytes = 10 * kColumns;  // 2.5 MiB: room for float32 [2, kColumns], not for [3, kColumns]
  Session session(write_full_program(dir, true), options);
  const float x[4] = {1, 2, 3, 4};
  const Tensor input = Tensor::from_bytes(DType::Float32, {2, 2}, x);
  EXPECT_NO_THROW(session.run({input, int64_t{2}}));
  const Error e = error_of([&] { session.run({input, int64_t{3}}); });
  EXPECT_EQ(e.code(), ErrorCode::ResourceLimit);
  EXPECT_THAT(e.what(), HasSubstr("float32 [3, 262144] (3.0 MiB (3145728 bytes))"));
}

// A program of a few hundred bytes may declare 2^24 slots: the executor's tables for them (a
// Tensor each) count against the limit at load like a tensor would (fuzz_execute spent 10 s
// building and clearing them under ASan).
TEST(MemoryLimit, ProgramDeclaringMillionsOfSlotsIsRefusedAtLoad) {
  const t::TempDir dir;
  mx::MLXGraphT g = t::tiny_graph();
  g.num_temp_tensors = (1 << 24) - 3;
  SessionOptions options;
  options.max_memory_bytes = 1 << 20;
  const std::string path = t::write_pte_model(dir, "many_slots", g, t::tiny_constants());
  const Error e = error_of([&] { Session session(path, options); });
  EXPECT_EQ(e.code(), ErrorCode::ResourceLimit);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("16777216 tensor slots"), HasSubstr("of slot tables")));
  EXPECT_NO_THROW(Session(t::write_pte_model(dir, "few_slots", t::tiny_graph(), t::tiny_constants()), options));
}

// A program whose output is Conv1D(x, w) with the given stride and padding: x the input, float32
// [1, 8, 1]; w the tiny constant as [1, 4, 1] (one output channel, a kernel of 4).
std::string write_conv_program(const t::TempDir& dir, int32_t stride, int32_t padding) {
  mx::MLXGraphT g = t::tiny_graph();
  mx::Conv1DNodeT conv;
  conv.x = t::tid(1);
  conv.w = t::tid(0);
  conv.out = t::tid(2);
  conv.stride = stride;
  conv.padding = padding;
  auto& main = t::chain(g, g.main_chain_idx).instructions;
  main.clear();
  main.push_back(t::instruction(std::move(conv)));
  g.tensor_meta[0] = t::tensor_meta(t::kScalarFloat, {1, 4, 1});
  g.tensor_meta[1] = t::tensor_meta(t::kScalarFloat, {1, 8, 1});
  g.tensor_meta[2] = t::tensor_meta(t::kScalarFloat, {1, -1, 1});
  return t::write_pte_model(dir, "conv_s" + std::to_string(stride) + "_p" + std::to_string(padding), g, t::tiny_constants());
}

// The output extent a convolution's attributes ask for is checked before anything is computed
// from it: a stride of 0 is the model's error (no division by zero), a padding of 2^30 asks for
// working memory past the limit (no allocation of 16 GiB).
TEST(MemoryLimit, AConvolutionsAttributesAreCheckedBeforeItsOutputIsSized) {
  const t::TempDir dir;
  const std::vector<float> x(8, 1.0f);
  const Tensor input = Tensor::from_bytes(DType::Float32, {1, 8, 1}, x.data());
  Session zero_stride(write_conv_program(dir, 0, 0));
  EXPECT_THAT(error_of([&] { zero_stride.run({input}); }).what(), HasSubstr("strides and dilations must be >= 1"));
  SessionOptions options;
  options.max_memory_bytes = 1 << 20;
  Session huge_padding(write_conv_program(dir, 1, 1 << 30), options);
  const Error e = error_of([&] { huge_padding.run({input}); });
  EXPECT_EQ(e.code(), ErrorCode::ResourceLimit);
  EXPECT_THAT(e.what(), HasSubstr("float64"));
  const std::vector<Value> outputs = Session(write_conv_program(dir, 2, 1)).run({input});
  EXPECT_EQ(std::get<Tensor>(outputs.at(0)).shape(), (Shape{1, 4, 1}));  // (8 + 2 - 3 - 1) / 2 + 1
}

TEST(MemoryBudget, RefusesBeforeCountingAndGivesBytesBackWhenTensorsAreFreed) {
  const auto budget = std::make_shared<MemoryBudget>(1000);
  const MemoryBudget::Scope scope(budget);
  {
    const Tensor a(DType::Float32, {200});  // 800 bytes
    EXPECT_EQ(budget->in_use(), 800u);
    const Error e = error_of([] { Tensor b(DType::Float32, {51}); });
    EXPECT_EQ(e.code(), ErrorCode::ResourceLimit);
    EXPECT_THAT(e.what(),
                HasSubstr("float32 [51] (204 bytes) with 800 bytes already in use would pass the memory limit of 1000 bytes"));
    EXPECT_EQ(budget->in_use(), 800u);
  }
  EXPECT_EQ(budget->in_use(), 0u);
}

TEST(MemoryBudget, ShapesWhoseElementCountOverflowsAreRefused) {
  const Error e = error_of([] { Tensor t(DType::Float32, {int64_t{1} << 32, int64_t{1} << 32}); });
  EXPECT_EQ(e.code(), ErrorCode::ResourceLimit);
  EXPECT_THAT(e.what(), HasSubstr("[4294967296, 4294967296] has more than 2^40 elements"));
}

TEST(ParseByteSize, AcceptsBytesAndPowersOf1024) {
  EXPECT_EQ(parse_byte_size("4096"), 4096u);
  EXPECT_EQ(parse_byte_size("4096B"), 4096u);
  EXPECT_EQ(parse_byte_size("512K"), 512u << 10);
  EXPECT_EQ(parse_byte_size("3M"), 3u << 20);
  EXPECT_EQ(parse_byte_size("4G"), uint64_t{4} << 30);
  EXPECT_EQ(parse_byte_size("1TiB"), uint64_t{1} << 40);
}

TEST(ParseByteSize, RefusesEverythingElse) {
  for (const char* text : {"", "G", "4X", "0", "4GB", "-1", "1.5G", "4 G", "99999999999999999999", "16777216T"})
    EXPECT_EQ(error_of([&] { parse_byte_size(text); }).code(), ErrorCode::InvalidArgument) << text;
}

}  // namespace
}  // namespace wgml
