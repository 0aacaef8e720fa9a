// The spec expression language: parsing, evaluation, and errors that name the place and column.
#include "kernel/expr.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "wgml/error.h"

namespace wgml::kernel {
namespace {

using ::testing::HasSubstr;

// Shapes and friends as the engine provides them for TensorScatter with past [2, 4, 8, 16].
ObjectScope tensor_scatter_scope(bool shader_f16 = false) {
  return ObjectScope(Object{
      {"shapes", Value(Object{{"past", Value::int_list({2, 4, 8, 16})}, {"update", Value::int_list({2, 4, 1, 16})}})},
      {"ranks", Value(Object{{"past", Value(4)}, {"update", Value(4)}})},
      {"dtypes", Value(Object{{"T", Value("f16")}, {"I", Value("u32")}})},
      {"attrs", Value(Object{{"axis", Value(-2)}, {"mode", Value("circular")}})},
      {"tunables", Value(Object{{"WORKGROUP_SIZE", Value(256)}})},
      {"present", Value(Object{{"writeIndices", Value(true)}})},
      {"device", Value(Object{{"shaderF16", Value(shader_f16)}})},
      {"n", Value(10)},
  });
}

Value eval(const std::string& text, bool shader_f16 = false) {
  return Expr::parse(text, {"test.json", "derive.x", 0}).evaluate(tensor_scatter_scope(shader_f16));
}

std::string parse_error(const std::string& text) {
  try {
    Expr::parse(text, {"specs/Op.json", "variants[1].derive.count", 0});
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidFormat);
    return e.what();
  }
  ADD_FAILURE() << "no error for " << text;
  return "";
}

std::string eval_error(const std::string& text) {
  try {
    eval(text);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Runtime);
    return e.what();
  }
  ADD_FAILURE() << "no error for " << text;
  return "";
}

TEST(SpecExpr, Literals) {
  EXPECT_EQ(eval("42"), Value(42));
  EXPECT_EQ(eval("2.5"), Value(2.5));
  EXPECT_EQ(eval("1e3"), Value(1000.0));
  EXPECT_EQ(eval("\"vec4\""), Value("vec4"));
  EXPECT_EQ(eval("'it\\'s'"), Value("it's"));
  EXPECT_EQ(eval("true"), Value(true));
  EXPECT_EQ(eval("False"), Value(false));
  EXPECT_EQ(eval("[1, 2, 3,]"), Value::int_list({1, 2, 3}));
  EXPECT_EQ(eval("[]"), Value(List{}));
}

TEST(SpecExpr, ArithmeticFollowsPython) {
  EXPECT_EQ(eval("2 + 3 * 4"), Value(14));
  EXPECT_EQ(eval("(2 + 3) * 4"), Value(20));
  EXPECT_EQ(eval("7 / 2"), Value(3.5));
  EXPECT_EQ(eval("7 // 2"), Value(3));
  EXPECT_EQ(eval("-7 // 2"), Value(-4));
  EXPECT_EQ(eval("-7 % 3"), Value(2));
  EXPECT_EQ(eval("7 % -3"), Value(-2));
  EXPECT_EQ(eval("1 + 0.5"), Value(1.5));
  EXPECT_EQ(eval("-n + 1"), Value(-9));
  EXPECT_EQ(eval("[1] + [2]"), Value::int_list({1, 2}));
}

TEST(SpecExpr, ComparisonsAndLogic) {
  EXPECT_EQ(eval("3 < 4"), Value(true));
  EXPECT_EQ(eval("3 >= 4"), Value(false));
  EXPECT_EQ(eval("2 == 2.0"), Value(true));
  EXPECT_EQ(eval("\"a\" < \"b\""), Value(true));
  EXPECT_EQ(eval("[1, 2] == [1, 2]"), Value(true));
  EXPECT_EQ(eval("1 == \"1\""), Value(false));
  EXPECT_EQ(eval("not 0"), Value(true));
  EXPECT_EQ(eval("1 and 0"), Value(0));  // Python: the deciding operand
  EXPECT_EQ(eval("0 or 5"), Value(5));
  EXPECT_EQ(eval("not 1 == 2"), Value(true));  // not binds looser than ==
  EXPECT_EQ(eval("2 in [1, 2]"), Value(true));
  EXPECT_EQ(eval("3 not in [1, 2]"), Value(true));
  EXPECT_EQ(eval("\"f16\" in \"vec4<f16>\""), Value(true));
}

TEST(SpecExpr, ShortCircuitSkipsTheUnevaluatedSide) {
  EXPECT_EQ(eval("false and undefined_name"), Value(false));
  EXPECT_EQ(eval("true or 1 // 0"), Value(true));
  EXPECT_EQ(eval("1 if true else 1 // 0"), Value(1));
}

TEST(SpecExpr, TernaryAndConcatenation) {
  EXPECT_EQ(eval("(\"vec4<\" ~ dtypes.T ~ \">\") if 16 % 4 == 0 else dtypes.T"), Value("vec4<f16>"));
  EXPECT_EQ(eval("\"a\" if false else \"b\" if false else \"c\""), Value("c"));
  EXPECT_EQ(eval("\"n=\" ~ n ~ \", f=\" ~ 0.5 ~ \", b=\" ~ true"), Value("n=10, f=0.5, b=true"));
  // Jinja's precedence: ~ binds looser than *, tighter than +.
  EXPECT_EQ(eval("\"x\" ~ 2 * 3"), Value("x6"));
}

TEST(SpecExpr, MemberAccessIndexingAndSlices) {
  EXPECT_EQ(eval("shapes.past"), Value::int_list({2, 4, 8, 16}));
  EXPECT_EQ(eval("shapes.past[-1]"), Value(16));
  EXPECT_EQ(eval("shapes.past[1:3]"), Value::int_list({4, 8}));
  EXPECT_EQ(eval("shapes.past[:attrs.axis]"), Value::int_list({2, 4}));
  EXPECT_EQ(eval("shapes.past[5:]"), Value(List{}));
  EXPECT_EQ(eval("shapes[\"update\"][2]"), Value(1));
  EXPECT_EQ(eval("tunables.WORKGROUP_SIZE"), Value(256));
  EXPECT_EQ(eval("present.writeIndices"), Value(true));
}

TEST(SpecExpr, TheSeedsExpressions) {
  EXPECT_EQ(eval("(attrs.axis if attrs.axis >= 0 else attrs.axis + ranks.past) < ranks.past"), Value(true));
  EXPECT_EQ(eval("numel(shapes.past) == numel(shapes.past) and ranks.past >= 2"), Value(true));
  EXPECT_EQ(eval("16 if dtypes.T == \"f16\" and numel(shapes.update) % 4 != 0 else (8 if numel(shapes.update) % 4 != 0 else 4)"),
            Value(4));
  EXPECT_EQ(eval("min(ceilDiv((ceilDiv(numel(shapes.past), 4)), (tunables.WORKGROUP_SIZE)), 65535)"), Value(1));
  EXPECT_EQ(eval("not present.writeIndices"), Value(false));
  EXPECT_EQ(eval("f16Ok(dtypes.T)", false), Value(false));
  EXPECT_EQ(eval("f16Ok(dtypes.T)", true), Value(true));
  EXPECT_EQ(eval("f16Ok(\"f32\")", false), Value(true));
}

TEST(SpecExpr, Functions) {
  EXPECT_EQ(eval("ceilDiv(10, 4)"), Value(3));
  EXPECT_EQ(eval("ceilDiv(8, 4)"), Value(2));
  EXPECT_EQ(eval("ceilDiv(0, 4)"), Value(0));
  EXPECT_EQ(eval("numel([])"), Value(1));
  EXPECT_EQ(eval("numel(shapes.update)"), Value(128));
  EXPECT_EQ(eval("min(3, 1, 2)"), Value(1));
  EXPECT_EQ(eval("max([3, 7, 2])"), Value(7));
  EXPECT_EQ(eval("max(1, 2.5)"), Value(2.5));
  EXPECT_EQ(eval("len(shapes.past)"), Value(4));
  EXPECT_EQ(eval("range(3)"), Value::int_list({0, 1, 2}));
  EXPECT_EQ(eval("range(4, 0, -2)"), Value::int_list({4, 2}));
  EXPECT_EQ(eval("abs(-3)"), Value(3));
  EXPECT_EQ(eval("strides(shapes.past)"), Value::int_list({512, 128, 16, 1}));
  EXPECT_EQ(eval("normAxis(-2, 4)"), Value(2));
  EXPECT_EQ(eval("int(\"12\") + int(2.9) + int(true)"), Value(15));
  EXPECT_EQ(eval("float(3)"), Value(3.0));
  EXPECT_EQ(eval("str(3) ~ \"x\""), Value("3x"));
  EXPECT_EQ(eval("reverse([1, 2])"), Value::int_list({2, 1}));
  EXPECT_EQ(eval("sum([1, 2, 3])"), Value(6));
  EXPECT_EQ(eval("roundUp(10, 8)"), Value(16));
  EXPECT_EQ(eval("scalarTypeName(15)"), Value("bfloat16"));
  EXPECT_EQ(eval("scalarTypeName(6)"), Value("float32"));
}

// exp, log and float32 build host-side tables as the CPU reference computes them in float32
// (Rope's inverse frequencies).
TEST(SpecExpr, FloatMathForHostTables) {
  EXPECT_EQ(eval("exp(0)"), Value(1.0));
  EXPECT_EQ(eval("log(1)"), Value(0.0));
  EXPECT_EQ(eval("float32(0.1)"), Value(static_cast<double>(0.1f)));
  EXPECT_EQ(eval("float32(exp(float32(-3 * float32(float32(log(10000.0)) / 32))))"),
            Value(static_cast<double>(std::exp(-3.0f * (std::log(10000.0f) / 32.0f)))));
  EXPECT_THAT(eval_error("log(0)"), HasSubstr("log: needs a positive number, not 0"));
}

TEST(SpecExpr, FiltersAreFunctionsOnTheLeftValue) {
  EXPECT_EQ(eval("shapes.past | join(\", \")"), Value("2, 4, 8, 16"));
  EXPECT_EQ(eval("shapes.past | length"), Value(4));
  EXPECT_EQ(eval("n | u32"), Value("10u"));
}

TEST(SpecExpr, WgslLiteralFilters) {
  EXPECT_EQ(eval("(0 - 3) | i32"), Value("-3i"));
  EXPECT_EQ(eval("(0 - 2147483648) | i32"), Value("(-2147483647i - 1i)"));
  EXPECT_EQ(eval("0.1 | f32"), Value("0.1f"));
  EXPECT_EQ(eval("2 | f32"), Value("2.0f"));
  EXPECT_THAT(eval_error("4294967296 | u32"), HasSubstr("4294967296 does not fit in u32"));
  EXPECT_THAT(eval_error("-1 | u32"), HasSubstr("unary '-' needs a number, not a string"));
}

TEST(SpecExpr, NamesListsEveryNamespaceMember) {
  const Expr e = Expr::parse("shapes.past[attrs.axis] + ceilDiv(n, tunables.WORKGROUP_SIZE)", {"f", "p", 0});
  ASSERT_EQ(e.names().size(), 4u);
  EXPECT_EQ(e.names()[0].name, "shapes");
  EXPECT_EQ(e.names()[0].member, "past");
  EXPECT_EQ(e.names()[0].column, 1);
  EXPECT_EQ(e.names()[1].name, "attrs");
  EXPECT_EQ(e.names()[1].member, "axis");
  EXPECT_EQ(e.names()[2].name, "n");
  EXPECT_EQ(e.names()[2].member, "");
  EXPECT_EQ(e.names()[3].member, "WORKGROUP_SIZE");
}

TEST(SpecExpr, SyntaxErrorsNameFilePathAndColumn) {
  const std::string message = parse_error("ceilDiv(numel(shapes.past), 4");
  EXPECT_THAT(message, HasSubstr("specs/Op.json: variants[1].derive.count: column 30: expected ')' at the end"));
  EXPECT_THAT(message, HasSubstr("\n    ceilDiv(numel(shapes.past), 4\n                                 ^"));
  EXPECT_THAT(parse_error("1 +* 2"), HasSubstr("column 4: expected a value, found '*'"));
  EXPECT_THAT(parse_error("a if b"), HasSubstr("column 7: expected 'else' in 'a if c else b' at the end"));
  EXPECT_THAT(parse_error("\"open"), HasSubstr("column 1: unterminated string literal"));
  EXPECT_THAT(parse_error("x $ y"), HasSubstr("column 3: unexpected character '$'"));
  EXPECT_THAT(parse_error("ceilDivv(1, 2)"), HasSubstr("column 1: unknown function 'ceilDivv'"));
  EXPECT_THAT(parse_error("1 + ceilDiv(1)"), HasSubstr("column 5: ceilDiv takes 2 arguments, not 1"));
  EXPECT_THAT(parse_error("1 < 2 < 3"), HasSubstr("column 7: chained comparisons are not supported"));
  EXPECT_THAT(parse_error("a b"), HasSubstr("column 3: unexpected 'b' after the expression"));
  EXPECT_THAT(parse_error("12abc"), HasSubstr("column 1: malformed number '12a'"));
  EXPECT_THAT(parse_error("99999999999999999999"), HasSubstr("does not fit in 64 bits"));
}

TEST(SpecExpr, EvaluationErrorsNameTheColumn) {
  EXPECT_THAT(eval_error("1 + nope"), HasSubstr("test.json: derive.x: column 5: 'nope' is not defined"));
  EXPECT_THAT(eval_error("shapes.pats"), HasSubstr("column 7: 'shapes' has no member 'pats'"));
  EXPECT_THAT(eval_error("shapes.past[4]"), HasSubstr("column 12: index 4 is out of range for a list of 4"));
  EXPECT_THAT(eval_error("n // 0"), HasSubstr("column 3: division by zero"));
  EXPECT_THAT(eval_error("n % 0"), HasSubstr("modulo by zero"));
  EXPECT_THAT(eval_error("n + \"a\""), HasSubstr("column 3: '+' needs numbers, not int and string"));
  EXPECT_THAT(eval_error("9223372036854775807 + 1"), HasSubstr("integer overflow"));
  EXPECT_THAT(eval_error("ceilDiv(1, 0)"), HasSubstr("ceilDiv: the divisor must be positive, not 0"));
  EXPECT_THAT(eval_error("numel([1, \"x\"])"), HasSubstr("numel: argument 1 must be a list of ints"));
  EXPECT_THAT(eval_error("normAxis(4, 4)"), HasSubstr("axis 4 is out of range for rank 4"));
  EXPECT_THAT(eval_error("n < \"a\""), HasSubstr("cannot order a int and a string"));
  EXPECT_THAT(eval_error("n.x"), HasSubstr("cannot read '.x' of a int"));
}

TEST(SpecExpr, ColumnBaseShiftsReportedColumns) {
  try {
    Expr::parse("a +", {"kernels/wgsl/k.wgsl.jinja", "line 3", 10});
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("kernels/wgsl/k.wgsl.jinja: line 3: column 14: expected a value at the end"));
  }
}

TEST(SpecExpr, ParsedOnceEvaluatedManyTimes) {
  const Expr e = Expr::parse("ceilDiv(n, 4)", {"f", "p", 0});
  for (int64_t n : {0, 1, 4, 5, 1000}) {
    ObjectScope scope(Object{{"n", Value(n)}});
    EXPECT_EQ(e.evaluate(scope), Value((n + 3) / 4));
  }
}

}  // namespace
}  // namespace wgml::kernel
