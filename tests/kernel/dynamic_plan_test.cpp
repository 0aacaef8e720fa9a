// Dynamic attributes (kernel/dynamic_plan.h): compiled integer programs against the expression
// evaluator on random values, and plans of the project's specs followed to a new cache position or
// key count against a plan made afresh for it, params and dispatch sizes byte for byte.
#include <gtest/gtest.h>

#include <random>

#include "kernel/dynamic_plan.h"
#include "kernel/engine.h"
#include "spec_test_support.h"
#include "wgml/error.h"

namespace wgml::kernel {
namespace {

// Names with no derived values: `attrs` holds the dynamic attributes, K a fixed int.
class FlatNames : public PlanNames {
 public:
  explicit FlatNames(const Scope& scope) : scope_(scope) {}
  const DeriveEntry* derived(std::string_view, int, int&) const override { return nullptr; }
  const Scope& scope(int) const override { return scope_; }

 private:
  const Scope& scope_;
};

Object names_with(int64_t pos, int64_t n) {
  Object attrs{{"pos", Value(pos)}, {"n", Value(n)}, {"fixed", Value(int64_t{5})}};
  return Object{{"attrs", Value(std::move(attrs))}, {"K", Value(int64_t{64})}};
}

TEST(IntProgram, MatchesTheEvaluatorOnRandomValues) {
  const std::vector<std::string> dynamic = {"pos", "n"};
  const char* texts[] = {
      "attrs.pos + attrs.n * K - attrs.fixed",
      "attrs.pos // 7 + attrs.n % 5 - -attrs.pos",
      "ceilDiv(attrs.pos + 1, 64) * roundUp(attrs.n, 16)",
      "min(attrs.pos, attrs.n, K) + max(attrs.pos, 3)",
      "attrs.pos if attrs.n > attrs.pos else attrs.n - 1",
      "clamp(attrs.pos + K if attrs.pos < 0 else attrs.pos, 0, K)",
      "attrs.pos >= 0 and attrs.n != 3 or not attrs.fixed == 5",
      "abs(attrs.pos - attrs.n) + int(attrs.n)",
  };
  const ObjectScope placeholder(names_with(0, 0));
  const FlatNames names(placeholder);
  const DynamicCompiler compiler(dynamic, names);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int64_t> value(-300, 300);
  for (const char* text : texts) {
    const Expr e = Expr::parse(text, Origin{"test", text, 0});
    ASSERT_TRUE(compiler.depends(e, 1)) << text;
    const auto program = compiler.compile(e, 1);
    ASSERT_TRUE(program.has_value()) << text;
    for (int trial = 0; trial < 200; ++trial) {
      const int64_t pos = value(rng), n = value(rng);
      const std::vector<int64_t> values = {pos, n};
      const auto ran = program->run(values);
      std::optional<Value> expected;
      try {
        expected = e.evaluate(ObjectScope(names_with(pos, n)));
      } catch (const Error&) {
      }
      if (!expected) {
        EXPECT_FALSE(ran.has_value()) << text << " pos=" << pos << " n=" << n;
        continue;
      }
      ASSERT_TRUE(ran.has_value()) << text << " pos=" << pos << " n=" << n;
      const int64_t want = expected->is_bool() ? expected->as_bool() : expected->as_int();
      EXPECT_EQ(*ran, want) << text << " pos=" << pos << " n=" << n;
    }
  }
}

TEST(IntProgram, RefusesWhatItCannotExpress) {
  const std::vector<std::string> dynamic = {"pos"};
  const ObjectScope scope(names_with(1, 1));
  const FlatNames names(scope);
  const DynamicCompiler compiler(dynamic, names);
  for (const char* text : {"attrs.pos / 2", "[attrs.pos, 1][0]", "str(attrs.pos) ~ \"x\""}) {
    const Expr e = Expr::parse(text, Origin{"test", text, 0});
    EXPECT_TRUE(compiler.depends(e, 1)) << text;
    EXPECT_FALSE(compiler.compile(e, 1).has_value()) << text;
  }
  const Expr fixed = Expr::parse("attrs.fixed * K", Origin{});
  EXPECT_FALSE(compiler.depends(fixed, 1));
  const auto folded = compiler.compile(fixed, 1);
  ASSERT_TRUE(folded.has_value());
  EXPECT_EQ(folded->steps.size(), 1u);  // folded to one constant
  EXPECT_EQ(folded->run(std::vector<int64_t>{99}), 320);
}

TEST(IntProgram, OverflowAndDivisionByZeroAreNoValue) {
  using Op = IntProgram::Op;
  IntProgram overflow{{{Op::Const, INT64_MAX}, {Op::Load, 0}, {Op::Add, 0}}};
  EXPECT_EQ(overflow.run(std::vector<int64_t>{0}), INT64_MAX);
  EXPECT_FALSE(overflow.run(std::vector<int64_t>{1}).has_value());
  IntProgram divide{{{Op::Const, 10}, {Op::Load, 0}, {Op::FloorDiv, 0}}};
  EXPECT_EQ(divide.run(std::vector<int64_t>{-3}), -4);
  EXPECT_FALSE(divide.run(std::vector<int64_t>{0}).has_value());
  IntProgram unbalanced{{{Op::Load, 0}, {Op::Load, 0}}};
  EXPECT_FALSE(unbalanced.run(std::vector<int64_t>{1}).has_value());
  IntProgram out_of_range{{{Op::Load, 3}}};
  EXPECT_FALSE(out_of_range.run(std::vector<int64_t>{1}).has_value());
}

// The project's specs, planned as the WebGPU backend plans a decode step's calls.
class DynamicPlans : public ::testing::Test {
 protected:
  DynamicPlans() : engine_(testing::kKernelsDir + "/wgsl") { engine_.load_directory(testing::kKernelsDir + "/specs"); }

  // Plans `request` with its dynamic attributes at `from`, follows them to `to`, and checks the
  // params and dispatch sizes against a plan made at `to`. Returns whether the follow applied.
  bool follows(const KernelSpec& spec, KernelRequest request, const std::vector<int64_t>& from, const std::vector<int64_t>& to) {
    const auto at = [&](const std::vector<int64_t>& values) {
      for (size_t i = 0; i < values.size(); ++i) request.attributes[request.dynamic_attributes[i]] = Value(values[i]);
      return engine_.plan(spec, request, device_);
    };
    const KernelPlan first = at(from);
    EXPECT_NE(first.dynamic, nullptr) << spec.qualified_name();
    if (!first.dynamic) return false;
    std::vector<std::vector<uint8_t>> params;
    std::vector<std::array<uint32_t, 3>> dispatch;
    for (const PlanPass& p : first.passes) {
      params.push_back(p.params);
      dispatch.push_back(p.dispatch);
    }
    if (!first.dynamic->apply(to, device_.max_workgroups_per_dimension, params, dispatch)) return false;
    const KernelPlan fresh = at(to);
    EXPECT_EQ(fresh.variant, first.variant);
    EXPECT_EQ(fresh.passes.size(), first.passes.size());
    for (size_t i = 0; i < fresh.passes.size() && i < params.size(); ++i) {
      EXPECT_EQ(params[i], fresh.passes[i].params) << spec.qualified_name() << " pass " << i;
      EXPECT_EQ(dispatch[i], fresh.passes[i].dispatch) << spec.qualified_name() << " pass " << i;
      EXPECT_EQ(
          fresh.passes[i].wgsl == nullptr || first.passes[i].wgsl == nullptr || *fresh.passes[i].wgsl == *first.passes[i].wgsl,
          true);
    }
    return true;
  }

  const KernelSpec& spec(const std::string& op) const {
    const KernelSpec* s = engine_.find("mlx", op);
    EXPECT_NE(s, nullptr) << op;
    return *s;
  }

  Engine engine_;
  DeviceCaps device_;
};

TEST_F(DynamicPlans, TheKvCacheWriteFollowsItsPosition) {
  KernelRequest r;
  r.inputs["dst"] = {DType::Float32, {1, 4, 128, 16}};
  r.inputs["update"] = {DType::Float32, {1, 4, 1, 16}};
  r.attributes = {{"axis", Value(int64_t{2})}, {"step", Value(int64_t{1})}};
  r.may_alias = {{"dst", "out"}};
  r.dynamic_attributes = {"start", "stop"};
  for (int64_t pos : {0, 1, 17, 126}) EXPECT_TRUE(follows(spec("SliceUpdate"), r, {pos, pos + 1}, {pos + 1, pos + 2})) << pos;
  // Negative positions count from the end, and a stop past the end is clamped, as a fresh plan does.
  EXPECT_TRUE(follows(spec("SliceUpdate"), r, {3, 4}, {-2, -1}));
  EXPECT_TRUE(follows(spec("SliceUpdate"), r, {3, 4}, {127, 400}));
}

TEST_F(DynamicPlans, AttentionFollowsTheKeysItCovers) {
  KernelRequest r;
  r.inputs["q"] = {DType::Float32, {1, 8, 1, 64}};
  r.inputs["k"] = {DType::Float32, {1, 2, 256, 64}};
  r.inputs["v"] = {DType::Float32, {1, 2, 256, 64}};
  r.attributes = {{"scale", Value(0.125)}, {"causal", Value(false)}};
  r.dynamic_attributes = {"kvStop"};
  for (int64_t keys : {1, 2, 63, 64, 65, 200}) EXPECT_TRUE(follows(spec("Sdpa"), r, {keys}, {keys + 1})) << keys;
  EXPECT_TRUE(follows(spec("Sdpa"), r, {7}, {255}));
}

TEST_F(DynamicPlans, AValueItsConditionsRefuseIsPlannedAfresh) {
  // SliceUpdate's `when` holds `attrs.step >= 1`: a step of 0 must go to the full planner, which
  // names the condition.
  KernelRequest r;
  r.inputs["dst"] = {DType::Float32, {2, 32}};
  r.inputs["update"] = {DType::Float32, {2, 4}};
  r.attributes = {{"axis", Value(int64_t{1})}, {"start", Value(int64_t{0})}, {"stop", Value(int64_t{8})}};
  r.dynamic_attributes = {"step"};
  r.attributes["step"] = Value(int64_t{2});
  const KernelPlan plan = engine_.plan(spec("SliceUpdate"), r, device_);
  ASSERT_NE(plan.dynamic, nullptr);
  std::vector<std::vector<uint8_t>> params;
  std::vector<std::array<uint32_t, 3>> dispatch;
  for (const PlanPass& p : plan.passes) {
    params.push_back(p.params);
    dispatch.push_back(p.dispatch);
  }
  const auto before = params;
  EXPECT_FALSE(plan.dynamic->apply(std::vector<int64_t>{0}, device_.max_workgroups_per_dimension, params, dispatch));
  EXPECT_EQ(params, before);  // nothing written
  EXPECT_TRUE(plan.dynamic->apply(std::vector<int64_t>{2}, device_.max_workgroups_per_dimension, params, dispatch));
  EXPECT_EQ(params, before);
}

}  // namespace
}  // namespace wgml::kernel
