// Loading costs work in proportion to the file: nested Loop bodies are lowered once each (not once
// per enclosing trial), opening a session is linear in the number of nodes, and subgraphs nested
// deeper than protobuf parses are refused with an error that says so.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "frontend/load_model.h"
#include "frontend/onnx/onnx_builder.h"
#include "wgml/session.h"

namespace wgml::testing {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

::onnx::NodeProto& add_node(::onnx::GraphProto& g, const std::string& op, const std::vector<std::string>& inputs,
                            const std::vector<std::string>& outputs) {
  ::onnx::NodeProto& node = *g.add_node();
  node.set_op_type(op);
  node.set_name(op + "_" + outputs[0]);
  for (const std::string& in : inputs) node.add_input(in);
  for (const std::string& out : outputs) node.add_output(out);
  return node;
}

// Level `level` of `depth` nested Loops, each running its body twice and carrying one float
// vector: the innermost applies Relu (the carried shape stays). When `growing`, the innermost
// appends a 1 (the carried vector grows a row per step: its length is known only at run time) and
// each inner Loop starts from [1], so every trial lowering of a body needs two of the body below.
::onnx::GraphProto loop_body(int level, int depth, bool growing) {
  const std::string k = std::to_string(level);
  ::onnx::GraphProto body;
  body.set_name("body" + k);
  add_value_info(body.add_input(), "i" + k, kInt64, {});
  add_value_info(body.add_input(), "cond" + k, kBool, {});
  add_value_info(body.add_input(), "x" + k, kFloat, {kDynamic});
  add_node(body, "Identity", {"cond" + k}, {"cond_out" + k});
  if (level + 1 < depth)
    set_attr(add_node(body, "Loop", {"trips", "always", growing ? "one" : "x" + k}, {"y" + k}), "body",
             loop_body(level + 1, depth, growing));
  else if (growing)
    set_attr(add_node(body, "Concat", {"x" + k, "one"}, {"y" + k}), "axis", int64_t{0});
  else
    add_node(body, "Relu", {"x" + k}, {"y" + k});
  add_value_info(body.add_output(), "cond_out" + k, kBool, {});
  add_value_info(body.add_output(), "y" + k, kFloat, {kDynamic});
  return body;
}

// `depth` nested Loops on x (float[1]); 2 * depth + 1 nodes in all.
OnnxModel nested_loops(int depth, bool growing) {
  OnnxModel m;
  m.input("x", kFloat, {1}).output("y", kFloat, {kDynamic});
  m.initializer("trips", std::vector<int64_t>{2}, {});
  m.initializer("one", std::vector<float>{1}, {1});
  ::onnx::TensorProto truth;
  truth.set_name("always");
  truth.set_data_type(kBool);
  truth.add_int32_data(1);
  *m.graph().add_initializer() = truth;
  set_attr(m.node("Loop", {"trips", "always", "x"}, {"y"}, "outer"), "body", loop_body(0, depth, growing));
  return m;
}

int64_t nodes_lowered(const ir::Model& model) { return std::stoll(model.source_info.at("nodes_lowered")); }

Tensor bool_scalar(bool value) {
  Tensor t(DType::Bool, {});
  t.mutable_data()[0] = value;
  return t;
}

TEST(OnnxLoadTime, NestedLoopsLowerEachBodyOnce) {
  for (int depth : {1, 2, 20}) {
    const ir::Model model = frontend::load_model(nested_loops(depth, false).write(fresh_directory("nested_loops")));
    EXPECT_EQ(nodes_lowered(model), 2 * depth + 1) << depth << " nested Loops";
  }
}

TEST(OnnxLoadTime, NestedLoopsRunAfterOneLowering) {
  Session session(nested_loops(5, false).write(fresh_directory("nested_loops_run")));
  const auto outputs = session.run({float_tensor_of({1}, {-3})});
  EXPECT_THAT(floats_of(std::get<Tensor>(outputs[0])), ElementsAre(0));
}

// A carried value that grows needs a second lowering of its body, with its length unknown.
TEST(OnnxLoadTime, AGrowingCarriedValueLowersItsBodyTwice) {
  const std::string path = nested_loops(1, true).write(fresh_directory("growing_loop"));
  EXPECT_EQ(nodes_lowered(frontend::load_model(path)), 3 + 2);
  const std::string nested = nested_loops(2, true).write(fresh_directory("growing_loops"));
  // The outer Loop once; its body twice (the carried value changes), each time its 2 nodes and the
  // inner body twice.
  EXPECT_EQ(nodes_lowered(frontend::load_model(nested)), 1 + 2 * (2 + 2 * 2));
  EXPECT_THAT(floats_of(std::get<Tensor>(Session(nested).run({float_tensor_of({1}, {5})})[0])), ElementsAre(1, 1, 1));
  Session session(path);
  const auto outputs = session.run({float_tensor_of({1}, {5})});
  EXPECT_THAT(floats_of(std::get<Tensor>(outputs[0])), ElementsAre(5, 1, 1));
}

// Each level of growing Loops lowers the level below twice: rather than 2^20 lowerings of the
// innermost body, the load is refused once it has lowered a bounded multiple of the file's nodes.
TEST(OnnxLoadTime, NestedGrowingLoopsAreRefusedAtABoundedCost) {
  const auto start = std::chrono::steady_clock::now();
  try {
    frontend::load_model(nested_loops(20, true).write(fresh_directory("nested_growing_loops")));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ResourceLimit);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("model.onnx"), HasSubstr("(Loop)"), HasSubstr("41 nodes")));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));  // 2^20 lowerings take hours
}

// x -> Add(c) -> Relu -> Add(c) -> ... : `nodes` nodes.
std::string add_relu_chain(int nodes) {
  OnnxModel m;
  m.input("x", kFloat, {4}).output("y", kFloat, {4});
  m.initializer("c", std::vector<float>{1, 2, 3, 4}, {4});
  std::string previous = "x";
  for (int i = 0; i < nodes; ++i) {
    const std::string out = i + 1 == nodes ? "y" : "v" + std::to_string(i);
    m.node(i % 2 ? "Relu" : "Add", i % 2 ? std::vector<std::string>{previous} : std::vector<std::string>{previous, "c"}, {out});
    previous = out;
  }
  return m.write(fresh_directory("chain"));
}

double seconds_to_open(const std::string& path) {
  double best = 1e9;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const auto start = std::chrono::steady_clock::now();
    Session session(path);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

// Four times the nodes take about four times as long to open (the best of three tries each); a
// quadratic step would take sixteen.
TEST(OnnxLoadTime, OpeningASessionIsLinearInNodes) {
  const double small = seconds_to_open(add_relu_chain(10000));
  const double large = seconds_to_open(add_relu_chain(40000));
  EXPECT_LT(large, 8 * small) << small << " s for 10000 nodes, " << large << " s for 40000";
}

// x -> If(c) -> If(c) -> ... : `count` Ifs side by side on a run-time condition, each adding 1
// to the value before it in one branch and subtracting 1 in the other.
std::string sequential_ifs(int count) {
  OnnxModel m;
  m.input("c", kBool, {}).input("x", kFloat, {1}).output("y", kFloat, {1});
  m.initializer("one", std::vector<float>{1}, {1});
  std::string previous = "x";
  for (int i = 0; i < count; ++i) {
    const std::string k = std::to_string(i);
    const std::string out = i + 1 == count ? "y" : "v" + k;
    auto branch = [&](const std::string& name, const std::string& op) {
      ::onnx::GraphProto g;
      g.set_name(name + k);
      add_node(g, op, {previous, "one"}, {name + "_out" + k});
      add_value_info(g.add_output(), name + "_out" + k, kFloat, {1});
      return g;
    };
    auto& node = m.node("If", {"c"}, {out}, "if" + k);
    set_attr(node, "then_branch", branch("then", "Add"));
    set_attr(node, "else_branch", branch("else", "Sub"));
    previous = out;
  }
  return m.write(fresh_directory("sequential_ifs"));
}

// x -> Loop -> Loop -> ... : `count` Loops side by side, each running its body twice on the value
// before it, carried (Add 1 per step).
std::string sequential_loops(int count) {
  OnnxModel m;
  m.input("x", kFloat, {1}).output("y", kFloat, {1});
  m.initializer("trips", std::vector<int64_t>{2}, {});
  m.initializer("one", std::vector<float>{1}, {1});
  ::onnx::TensorProto truth;
  truth.set_name("always");
  truth.set_data_type(kBool);
  truth.add_int32_data(1);
  *m.graph().add_initializer() = truth;
  std::string previous = "x";
  for (int i = 0; i < count; ++i) {
    const std::string k = std::to_string(i);
    const std::string out = i + 1 == count ? "y" : "v" + k;
    ::onnx::GraphProto body;
    body.set_name("body" + k);
    add_value_info(body.add_input(), "i" + k, kInt64, {});
    add_value_info(body.add_input(), "cond" + k, kBool, {});
    add_value_info(body.add_input(), "x" + k, kFloat, {1});
    add_node(body, "Identity", {"cond" + k}, {"cond_out" + k});
    add_node(body, "Add", {"x" + k, "one"}, {"y" + k});
    add_value_info(body.add_output(), "cond_out" + k, kBool, {});
    add_value_info(body.add_output(), "y" + k, kFloat, {1});
    set_attr(m.node("Loop", {"trips", "always", previous}, {out}, "loop" + k), "body", body);
    previous = out;
  }
  return m.write(fresh_directory("sequential_loops"));
}

// An If whose branches give x of rank 1 or 2, then `count` Relus on it: each lowered per branch.
std::string relus_after_rank_if(int count) {
  OnnxModel m;
  m.input("c", kBool, {}).input("x", kFloat, {1}).output("y", kFloat, {kDynamic});
  m.initializer("axes", std::vector<int64_t>{0}, {1});
  ::onnx::GraphProto then_branch;
  then_branch.set_name("then");
  add_node(then_branch, "Identity", {"x"}, {"t"});
  add_value_info(then_branch.add_output(), "t", kFloat, {1});
  ::onnx::GraphProto else_branch;
  else_branch.set_name("else");
  add_node(else_branch, "Unsqueeze", {"x", "axes"}, {"e"});
  add_value_info(else_branch.add_output(), "e", kFloat, {1, 1});
  auto& node = m.node("If", {"c"}, {"v"}, "if");
  set_attr(node, "then_branch", then_branch);
  set_attr(node, "else_branch", else_branch);
  std::string previous = "v";
  for (int i = 0; i < count; ++i) {
    const std::string out = i + 1 == count ? "y" : "r" + std::to_string(i);
    m.node("Relu", {previous}, {out});
    previous = out;
  }
  return m.write(fresh_directory("relus_after_rank_if"));
}

// Before the lowering undid a body's changes from a log (it copied its whole state per If body
// and per Loop trial) and the session's passes spent the number of slots per body, 4x the Ifs or
// Loops side by side took 10 to 20 times as long (5,000 Loops: 23 s; 20,000: over 5 minutes).
TEST(OnnxLoadTime, OpeningASessionIsLinearInIfsSideBySide) {
  const double small = seconds_to_open(sequential_ifs(2500));
  const std::string large_path = sequential_ifs(10000);
  const double large = seconds_to_open(large_path);
  EXPECT_LT(large, 8 * small) << small << " s for 2500 Ifs, " << large << " s for 10000";
  Session session(large_path);
  EXPECT_THAT(floats_of(std::get<Tensor>(session.run({bool_scalar(true), float_tensor_of({1}, {0.5f})})[0])),
              ElementsAre(10000.5f));
  EXPECT_THAT(floats_of(std::get<Tensor>(session.run({bool_scalar(false), float_tensor_of({1}, {0.5f})})[0])),
              ElementsAre(-9999.5f));
}

TEST(OnnxLoadTime, OpeningASessionIsLinearInLoopsSideBySide) {
  const double small = seconds_to_open(sequential_loops(2500));
  const std::string large_path = sequential_loops(10000);
  const double large = seconds_to_open(large_path);
  EXPECT_LT(large, 8 * small) << small << " s for 2500 Loops, " << large << " s for 10000";
  EXPECT_EQ(nodes_lowered(frontend::load_model(large_path)), 3 * 10000);  // each Loop and its 2 body nodes once
  Session session(large_path);
  EXPECT_THAT(floats_of(std::get<Tensor>(session.run({float_tensor_of({1}, {0.5f})})[0])), ElementsAre(20000.5f));
}

// Each Relu reads a value of rank 1 or 2 and is lowered once per way the If goes: resolving every
// value the If chose at each of those lowerings made this quadratic too.
TEST(OnnxLoadTime, NodesAfterARankChoosingIfOpenInLinearTime) {
  const double small = seconds_to_open(relus_after_rank_if(2500));
  const std::string large_path = relus_after_rank_if(10000);
  const double large = seconds_to_open(large_path);
  EXPECT_LT(large, 8 * small) << small << " s for 2500 Relus, " << large << " s for 10000";
  // The If and its branches' 2 nodes, then each Relu once and once per way.
  EXPECT_EQ(nodes_lowered(frontend::load_model(large_path)), 3 + 3 * 10000);
  Session session(large_path);
  const auto outputs = session.run({bool_scalar(false), float_tensor_of({1}, {-2})});
  EXPECT_EQ(std::get<Tensor>(outputs[0]).shape(), (Shape{1, 1}));
  EXPECT_THAT(floats_of(std::get<Tensor>(outputs[0])), ElementsAre(0));
}

// A Sum of the choices of 20 run-time Ifs (each rank 1 or 2) would be lowered once per
// combination, 2^20 times: the per-alternative lowerings count against the file's budget.
TEST(OnnxLoadTime, NodesReadingManyIfsChoicesAreRefusedAtABoundedCost) {
  OnnxModel m;
  m.input("x", kFloat, {1}).output("y", kFloat, {kDynamic});
  m.initializer("axes", std::vector<int64_t>{0}, {1});
  std::vector<std::string> chosen;
  for (int i = 0; i < 20; ++i) {
    const std::string k = std::to_string(i);
    m.input("c" + k, kBool, {});
    ::onnx::GraphProto then_branch;
    then_branch.set_name("then" + k);
    add_node(then_branch, "Identity", {"x"}, {"t" + k});
    add_value_info(then_branch.add_output(), "t" + k, kFloat, {1});
    ::onnx::GraphProto else_branch;
    else_branch.set_name("else" + k);
    add_node(else_branch, "Unsqueeze", {"x", "axes"}, {"e" + k});
    add_value_info(else_branch.add_output(), "e" + k, kFloat, {1, 1});
    auto& node = m.node("If", {"c" + k}, {"v" + k}, "if" + k);
    set_attr(node, "then_branch", then_branch);
    set_attr(node, "else_branch", else_branch);
    chosen.push_back("v" + k);
  }
  m.node("Sum", chosen, {"y"}, "sum");
  const auto start = std::chrono::steady_clock::now();
  try {
    frontend::load_model(m.write(fresh_directory("many_choices")));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ResourceLimit);
    EXPECT_THAT(e.what(),
                AllOf(HasSubstr("model.onnx"), HasSubstr("'sum' (Sum)"), HasSubstr("61 nodes"), HasSubstr("run-time Ifs chose")));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

// A branch whose output is x.
::onnx::GraphProto identity_branch(const std::string& name) {
  ::onnx::GraphProto branch;
  branch.set_name(name);
  add_node(branch, "Identity", {"x"}, {name + "_out"});
  add_value_info(branch.add_output(), name + "_out", kFloat, {1});
  return branch;
}

// 200 Ifs, each in the then-branch of the one before: protobuf refuses to parse the file.
TEST(OnnxLoadTime, IfsNestedTooDeepForProtobufSaySo) {
  ::onnx::GraphProto branch = identity_branch("innermost");
  for (int level = 199; level > 0; --level) {
    ::onnx::GraphProto outer;
    outer.set_name("level" + std::to_string(level));
    auto& node = add_node(outer, "If", {"c"}, {"out" + std::to_string(level)});
    set_attr(node, "then_branch", branch);
    set_attr(node, "else_branch", identity_branch("else" + std::to_string(level)));
    add_value_info(outer.add_output(), "out" + std::to_string(level), kFloat, {1});
    branch = std::move(outer);
  }
  OnnxModel m;
  m.input("c", kBool, {}).input("x", kFloat, {1}).output("y", kFloat, {1});
  auto& top = m.node("If", {"c"}, {"y"});
  set_attr(top, "then_branch", branch);
  set_attr(top, "else_branch", identity_branch("else0"));
  try {
    frontend::load_model(m.write(fresh_directory("deep_ifs")));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Unsupported);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("model.onnx"), HasSubstr("nested at most 31 deep"), HasSubstr("nested 200 deep")));
  }
}

}  // namespace
}  // namespace wgml::testing
