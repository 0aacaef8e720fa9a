#pragma once
// What the parts of the expression language share, behind the public spec/expr.h: tokens (made by
// expr_lexer.cpp), the syntax tree (made by expr_parser.cpp, walked by expr.cpp) and the built-in
// functions (expr_functions.cpp).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/expr.h"

namespace wgml::kernel {
namespace expr_internal {

// Reports a syntax error at a 1-based column of the expression text by throwing.
using SyntaxError = std::function<void(int column, const std::string& what)>;

enum class Tok { Int, Float, String, Name, Op, End };

struct Token {
  Tok kind = Tok::End;
  std::string text;  // the name, the operator, or the decoded string literal
  int64_t int_value = 0;
  double float_value = 0;
  int column = 0;  // 1-based, within the expression text
};

// The tokens of `text`, ending with an End token.
std::vector<Token> tokenize(std::string_view text, const SyntaxError& fail);

enum class NodeKind {
  Literal,
  ListLit,
  Comprehension,
  Name,
  Member,
  Index,
  Slice,
  Call,
  Unary,
  Binary,
  And,
  Or,
  Not,
  Ternary,
  Compare,
  In
};

}  // namespace expr_internal

struct Expr::Node {
  expr_internal::NodeKind kind = expr_internal::NodeKind::Literal;
  int column = 0;
  Value literal;
  std::string name;      // Name, Member (the member), Call (the function), Unary/Binary/Compare (op)
  bool negated = false;  // `not in`
  // Slice: children [object, start or null, end or null].
  std::vector<std::shared_ptr<const Node>> children;
};

namespace expr_internal {

using NodePtr = std::shared_ptr<const Expr::Node>;

// The syntax tree of a whole expression; fails on tokens left over after it.
NodePtr parse_tokens(std::vector<Token> tokens, const SyntaxError& fail);

// How many arguments a built-in function takes; the parser checks calls against it.
struct Arity {
  size_t min_args;
  size_t max_args;
};

// The value of `node`, a part of `expr`'s tree, in `scope` (errors located in `expr`).
Value evaluate_node(const Expr& expr, const Expr::Node& node, const Scope& scope);

// The arity of the built-in function `name`, or null if there is none by that name.
const Arity* find_function(std::string_view name);

// Runs the built-in function that the Call node `call` names on its evaluated `args`. Throws
// wgml::Error(Runtime) located at the call when the function rejects its arguments.
Value call_function(const Expr& expr, const Expr::Node& call, const Scope& scope, const std::vector<Value>& args);

}  // namespace expr_internal
}  // namespace wgml::kernel
