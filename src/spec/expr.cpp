#include "spec/expr.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <unordered_map>

#include "wgml/error.h"

namespace wgml::spec {

std::optional<Value> ObjectScope::find(std::string_view name) const {
  const auto it = names_.find(name);
  if (it != names_.end()) return it->second;
  return parent_ ? parent_->find(name) : std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Tokens

namespace {

enum class Tok { Int, Float, String, Name, Op, End };

struct Token {
  Tok kind = Tok::End;
  std::string text;  // the name, the operator, or the decoded string literal
  int64_t int_value = 0;
  double float_value = 0;
  int column = 0;  // 1-based, within the expression text
};

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Lexer {
 public:
  Lexer(std::string_view text, std::function<void(int, const std::string&)> fail)
      : text_(text), fail_(std::move(fail)) {}

  std::vector<Token> run() {
    std::vector<Token> tokens;
    while (true) {
      while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      if (pos_ >= text_.size()) break;
      tokens.push_back(next());
    }
    Token end;
    end.column = static_cast<int>(text_.size()) + 1;
    tokens.push_back(end);
    return tokens;
  }

 private:
  Token next() {
    Token t;
    t.column = static_cast<int>(pos_) + 1;
    const char c = text_[pos_];
    if (is_digit(c)) return number(t);
    if (c == '"' || c == '\'') return string(t);
    if (is_name_start(c)) {
      const size_t start = pos_;
      while (pos_ < text_.size() && is_name_char(text_[pos_])) ++pos_;
      t.kind = Tok::Name;
      t.text = std::string(text_.substr(start, pos_ - start));
      return t;
    }
    static const char* const kTwoChar[] = {"//", "==", "!=", "<=", ">="};
    for (const char* op : kTwoChar) {
      if (text_.substr(pos_, 2) == op) {
        pos_ += 2;
        t.kind = Tok::Op;
        t.text = op;
        return t;
      }
    }
    if (std::string_view("+-*/%~<>()[],.|:").find(c) != std::string_view::npos) {
      ++pos_;
      t.kind = Tok::Op;
      t.text = std::string(1, c);
      return t;
    }
    fail_(t.column, std::string("unexpected character '") + c + "'");
    return t;
  }

  Token number(Token t) {
    const size_t start = pos_;
    while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
    bool is_float = false;
    if (pos_ + 1 < text_.size() && text_[pos_] == '.' && is_digit(text_[pos_ + 1])) {
      is_float = true;
      ++pos_;
      while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      is_float = true;
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (pos_ >= text_.size() || !is_digit(text_[pos_])) fail_(t.column, "malformed exponent");
      while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
    }
    if (pos_ < text_.size() && is_name_char(text_[pos_]))
      fail_(t.column, "malformed number '" + std::string(text_.substr(start, pos_ + 1 - start)) + "'");
    const std::string literal(text_.substr(start, pos_ - start));
    if (is_float) {
      t.kind = Tok::Float;
      t.float_value = std::strtod(literal.c_str(), nullptr);
    } else {
      t.kind = Tok::Int;
      errno = 0;
      t.int_value = std::strtoll(literal.c_str(), nullptr, 10);
      if (errno == ERANGE) fail_(t.column, "integer literal " + literal + " does not fit in 64 bits");
    }
    t.text = literal;
    return t;
  }

  Token string(Token t) {
    const char quote = text_[pos_++];
    t.kind = Tok::String;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      char c = text_[pos_++];
      if (c == '\\') {
        if (pos_ >= text_.size()) break;
        const char e = text_[pos_++];
        c = e == 'n' ? '\n' : e == 't' ? '\t' : e;
      }
      t.text += c;
    }
    if (pos_ >= text_.size()) fail_(t.column, "unterminated string literal");
    ++pos_;
    return t;
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::function<void(int, const std::string&)> fail_;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Syntax tree

enum class NodeKind { Literal, ListLit, Comprehension, Name, Member, Index, Slice, Call, Unary, Binary, And,
                      Or, Not, Ternary, Compare, In };

struct Expr::Node {
  NodeKind kind = NodeKind::Literal;
  int column = 0;
  Value literal;
  std::string name;  // Name, Member (the member), Call (the function), Unary/Binary/Compare (op)
  bool negated = false;  // `not in`
  // Slice: children [object, start or null, end or null].
  std::vector<std::shared_ptr<const Node>> children;
};

using NodePtr = std::shared_ptr<const Expr::Node>;

namespace {

// Built-in functions, each checking its own argument kinds.
using Args = std::vector<Value>;

struct Call {
  const Expr& expr;
  const Expr::Node& node;
  const Scope& scope;
  const Args& args;

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorCode::Runtime, expr.locate(node.column, node.name + ": " + what));
  }

  int64_t integer(size_t i) const {
    if (!args[i].is_int()) fail("argument " + std::to_string(i + 1) + " must be an int, not a " + kind_name(args[i].kind()));
    return args[i].as_int();
  }
  const List& list(size_t i) const {
    if (!args[i].is_list()) fail("argument " + std::to_string(i + 1) + " must be a list, not a " + kind_name(args[i].kind()));
    return args[i].as_list();
  }
  std::vector<int64_t> ints(size_t i) const {
    std::vector<int64_t> out;
    for (const Value& v : list(i)) {
      if (!v.is_int()) fail("argument " + std::to_string(i + 1) + " must be a list of ints");
      out.push_back(v.as_int());
    }
    return out;
  }
};

Value fn_ceil_div(const Call& c) {
  const int64_t a = c.integer(0), b = c.integer(1);
  if (b <= 0) c.fail("the divisor must be positive, not " + std::to_string(b));
  const int64_t q = a / b;
  return Value(q + ((a % b) > 0 ? 1 : 0));
}

Value fn_numel(const Call& c) {
  int64_t product = 1;
  for (int64_t d : c.ints(0))
    if (__builtin_mul_overflow(product, d, &product)) c.fail("integer overflow");
  return Value(product);
}

Value fn_extreme(const Call& c, bool want_max) {
  const List& items = c.args.size() == 1 && c.args[0].is_list() ? c.args[0].as_list() : c.args;
  if (items.empty()) c.fail("needs at least one value");
  const Value* best = &items[0];
  for (const Value& v : items) {
    if (!v.is_number()) c.fail(std::string("needs numbers, not a ") + kind_name(v.kind()));
    if (want_max ? v.as_number() > best->as_number() : v.as_number() < best->as_number()) best = &v;
  }
  return *best;
}

Value fn_f16_ok(const Call& c) {
  if (!c.args[0].is_string()) c.fail("needs a WGSL type name");
  if (c.args[0].as_string().find("f16") == std::string::npos) return Value(true);
  const auto device = c.scope.find("device");
  const Value* f16 = device ? device->member("shaderF16") : nullptr;
  return Value(f16 && f16->truthy());
}

Value fn_len(const Call& c) {
  const Value& v = c.args[0];
  if (v.is_list()) return Value(static_cast<int64_t>(v.as_list().size()));
  if (v.is_string()) return Value(static_cast<int64_t>(v.as_string().size()));
  if (v.is_object()) return Value(static_cast<int64_t>(v.as_object().size()));
  c.fail(std::string("has no length for a ") + kind_name(v.kind()));
}

Value fn_range(const Call& c) {
  const bool one = c.args.size() == 1;
  const int64_t start = one ? 0 : c.integer(0);
  const int64_t stop = one ? c.integer(0) : c.integer(1);
  const int64_t step = c.args.size() == 3 ? c.integer(2) : 1;
  if (step == 0) c.fail("the step must not be 0");
  constexpr int64_t kMaxItems = 1 << 20;
  List items;
  for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
    if (static_cast<int64_t>(items.size()) >= kMaxItems) c.fail("more than 2^20 items");
    items.emplace_back(i);
    if (__builtin_add_overflow(i, step, &i)) break;
  }
  return Value(std::move(items));
}

Value fn_abs(const Call& c) {
  const Value& v = c.args[0];
  if (v.is_float()) return Value(std::fabs(v.as_number()));
  const int64_t i = c.integer(0);
  if (i == std::numeric_limits<int64_t>::min()) c.fail("integer overflow");
  return Value(i < 0 ? -i : i);
}

Value fn_strides(const Call& c) {
  const std::vector<int64_t> shape = c.ints(0);
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    if (__builtin_mul_overflow(strides[i], shape[i], &strides[i - 1])) c.fail("integer overflow");
  return Value::int_list(strides);
}

Value fn_norm_axis(const Call& c) {
  const int64_t axis = c.integer(0), rank = c.integer(1);
  if (axis < -rank || axis >= rank)
    c.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return Value(axis < 0 ? axis + rank : axis);
}

Value fn_int(const Call& c) {
  const Value& v = c.args[0];
  if (v.is_int()) return v;
  if (v.is_bool()) return Value(int64_t{v.as_bool()});
  if (v.is_float()) {
    const double d = std::trunc(v.as_number());
    if (!(std::fabs(d) < 9.2e18)) c.fail("cannot convert " + v.to_text() + " to an int");
    return Value(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    char* end = nullptr;
    errno = 0;
    const long long i = std::strtoll(v.as_string().c_str(), &end, 10);
    if (!v.as_string().empty() && *end == '\0' && errno == 0) return Value(static_cast<int64_t>(i));
  }
  c.fail("cannot convert " + v.repr() + " to an int");
}

Value fn_float(const Call& c) {
  const Value& v = c.args[0];
  if (v.is_number()) return Value(v.as_number());
  if (v.is_bool()) return Value(v.as_bool() ? 1.0 : 0.0);
  c.fail("cannot convert " + v.repr() + " to a float");
}

Value fn_join(const Call& c) {
  std::string separator;
  if (c.args.size() == 2) {
    if (!c.args[1].is_string()) c.fail("the separator must be a string");
    separator = c.args[1].as_string();
  }
  std::string text;
  const List& items = c.list(0);
  for (size_t i = 0; i < items.size(); ++i) text += (i ? separator : "") + items[i].to_text();
  return Value(text);
}

Value fn_u32(const Call& c) {
  const int64_t v = c.integer(0);
  if (v < 0 || v > int64_t{0xffffffff}) c.fail(std::to_string(v) + " does not fit in u32");
  return Value(std::to_string(v) + "u");
}

Value fn_i32(const Call& c) {
  const int64_t v = c.integer(0);
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
    c.fail(std::to_string(v) + " does not fit in i32");
  // WGSL has no literal for -2^31: negation applies to the literal 2147483648i, which overflows.
  if (v == std::numeric_limits<int32_t>::min()) return Value(std::string("(-2147483647i - 1i)"));
  return Value(std::to_string(v) + "i");
}

Value fn_f32(const Call& c) {
  const Value& v = c.args[0];
  if (!v.is_number()) c.fail(std::string("needs a number, not a ") + kind_name(v.kind()));
  const double d = v.as_number();
  if (!std::isfinite(d) || std::fabs(d) > 3.4028234663852886e38) c.fail(v.to_text() + " is not a finite f32");
  return Value(format_float32(static_cast<float>(d)) + "f");
}

Value fn_reverse(const Call& c) {
  List items = c.list(0);
  std::reverse(items.begin(), items.end());
  return Value(std::move(items));
}

Value fn_sum(const Call& c) {
  Value total(int64_t{0});
  for (const Value& v : c.list(0)) {
    if (!v.is_number()) c.fail("needs a list of numbers");
    int64_t r = 0;
    if (total.is_int() && v.is_int()) {
      if (__builtin_add_overflow(total.as_int(), v.as_int(), &r)) c.fail("integer overflow");
      total = Value(r);
    } else {
      total = Value(total.as_number() + v.as_number());
    }
  }
  return total;
}

Value fn_round_up(const Call& c) {
  const int64_t m = c.integer(1);
  if (m <= 0) c.fail("the multiple must be positive, not " + std::to_string(m));
  int64_t rounded = 0;
  if (__builtin_mul_overflow(fn_ceil_div(c).as_int(), m, &rounded)) c.fail("integer overflow");
  return Value(rounded);
}

// NumPy broadcasting of every argument's shape; fails naming the first dims that differ.
Value fn_broadcast_shapes(const Call& c) {
  std::vector<int64_t> out;
  for (size_t a = 0; a < c.args.size(); ++a) {
    const std::vector<int64_t> shape = c.ints(a);
    if (shape.size() > out.size()) out.insert(out.begin(), shape.size() - out.size(), 1);
    const size_t lead = out.size() - shape.size();
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t& o = out[lead + d];
      if (shape[d] == o || shape[d] == 1) continue;
      if (o != 1) c.fail("shapes do not broadcast: " + c.args[a].to_text() + " against dim " + std::to_string(o));
      o = shape[d];
    }
  }
  return Value::int_list(out);
}

// The row-major strides of `shape` as seen from the broadcast shape `target` (right-aligned):
// 0 for dims that broadcast or that `shape` lacks.
Value fn_broadcast_strides(const Call& c) {
  const std::vector<int64_t> shape = c.ints(0), target = c.ints(1);
  if (shape.size() > target.size()) c.fail("the shape has more dims than the target");
  const Value strides = fn_strides(c);
  std::vector<int64_t> own;
  for (const Value& v : strides.as_list()) own.push_back(v.as_int());
  std::vector<int64_t> out(target.size(), 0);
  const size_t lead = target.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] != target[lead + d] && shape[d] != 1) c.fail("shape does not broadcast to the target");
    out[lead + d] = shape[d] == 1 ? 0 : own[d];
  }
  return Value::int_list(out);
}

// Python-style slicing of a dim of size `dim`: [first index, element count], negative start and
// stop counted from the end and clamped (the CPU reference's normalize_slice).
Value fn_slice_range(const Call& c) {
  const int64_t dim = c.integer(0), start = c.integer(1), stop = c.integer(2), step = c.integer(3);
  if (step == 0) c.fail("the step must not be 0");
  auto clamp_index = [&](int64_t v, int64_t lo, int64_t hi) { return std::clamp(v < 0 ? v + dim : v, lo, hi); };
  if (step > 0) {
    const int64_t s = clamp_index(start, 0, dim), e = clamp_index(stop, 0, dim);
    return Value::int_list({s, e > s ? (e - s + step - 1) / step : 0});
  }
  const int64_t s = clamp_index(start, -1, dim - 1), e = clamp_index(stop, -1, dim - 1);
  return Value::int_list({s, s > e ? (s - e - step - 1) / -step : 0});
}

Value fn_clamp(const Call& c) {
  const Value& v = c.args[0];
  if (v.is_int() && c.args[1].is_int() && c.args[2].is_int())
    return Value(std::clamp(v.as_int(), c.integer(1), std::max(c.integer(1), c.integer(2))));
  if (!v.is_number() || !c.args[1].is_number() || !c.args[2].is_number()) c.fail("needs numbers");
  return Value(std::clamp(v.as_number(), c.args[1].as_number(), std::max(c.args[1].as_number(), c.args[2].as_number())));
}

Value fn_min(const Call& c) { return fn_extreme(c, false); }
Value fn_max(const Call& c) { return fn_extreme(c, true); }
Value fn_str(const Call& c) { return Value(c.args[0].to_text()); }

struct FunctionInfo {
  size_t min_args;
  size_t max_args;
  Value (*run)(const Call&);
};

const std::unordered_map<std::string_view, FunctionInfo>& function_table() {
  static const std::unordered_map<std::string_view, FunctionInfo> table = {
      {"ceilDiv", {2, 2, fn_ceil_div}}, {"numel", {1, 1, fn_numel}},
      {"min", {1, 16, fn_min}},         {"max", {1, 16, fn_max}},
      {"f16Ok", {1, 1, fn_f16_ok}},     {"len", {1, 1, fn_len}},
      {"length", {1, 1, fn_len}},       {"range", {1, 3, fn_range}},
      {"abs", {1, 1, fn_abs}},          {"strides", {1, 1, fn_strides}},
      {"normAxis", {2, 2, fn_norm_axis}}, {"int", {1, 1, fn_int}},
      {"float", {1, 1, fn_float}},      {"str", {1, 1, fn_str}},
      {"join", {1, 2, fn_join}},        {"u32", {1, 1, fn_u32}},
      {"i32", {1, 1, fn_i32}},          {"f32", {1, 1, fn_f32}},
      {"reverse", {1, 1, fn_reverse}},  {"sum", {1, 1, fn_sum}},
      {"roundUp", {2, 2, fn_round_up}},
      {"broadcastShapes", {1, 16, fn_broadcast_shapes}}, {"broadcastStrides", {2, 2, fn_broadcast_strides}},
      {"sliceRange", {4, 4, fn_slice_range}}, {"clamp", {3, 3, fn_clamp}},
  };
  return table;
}



class Parser {
 public:
  Parser(std::vector<Token> tokens, std::function<void(int, const std::string&)> fail)
      : tokens_(std::move(tokens)), fail_(std::move(fail)) {}

  NodePtr parse_all() {
    NodePtr root = ternary();
    if (peek().kind != Tok::End) fail_(peek().column, "unexpected '" + peek().text + "' after the expression");
    return root;
  }

 private:
  const Token& peek() const { return tokens_[pos_]; }
  bool at_op(std::string_view op) const { return peek().kind == Tok::Op && peek().text == op; }
  bool at_word(std::string_view word) const { return peek().kind == Tok::Name && peek().text == word; }
  const Token& take() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }
  void expect_op(std::string_view op) {
    if (!at_op(op)) fail_(peek().column, "expected '" + std::string(op) + "'" + found());
    take();
  }
  std::string found() const {
    return peek().kind == Tok::End ? " at the end" : ", found '" + peek().text + "'";
  }

  static NodePtr make(NodeKind kind, int column, std::string name, std::vector<NodePtr> children) {
    auto node = std::make_shared<Expr::Node>();
    node->kind = kind;
    node->column = column;
    node->name = std::move(name);
    node->children = std::move(children);
    return node;
  }

  NodePtr ternary() {
    NodePtr value = or_expr();
    if (!at_word("if")) return value;
    const int column = take().column;
    NodePtr condition = or_expr();
    if (!at_word("else")) fail_(peek().column, "expected 'else' in 'a if c else b'" + found());
    take();
    NodePtr otherwise = ternary();
    return make(NodeKind::Ternary, column, "", {condition, value, otherwise});
  }

  NodePtr or_expr() {
    NodePtr left = and_expr();
    while (at_word("or")) {
      const int column = take().column;
      left = make(NodeKind::Or, column, "or", {left, and_expr()});
    }
    return left;
  }

  NodePtr and_expr() {
    NodePtr left = not_expr();
    while (at_word("and")) {
      const int column = take().column;
      left = make(NodeKind::And, column, "and", {left, not_expr()});
    }
    return left;
  }

  NodePtr not_expr() {
    if (!at_word("not")) return comparison();
    const int column = take().column;
    return make(NodeKind::Not, column, "not", {not_expr()});
  }

  bool at_comparison() const {
    static const char* const kOps[] = {"==", "!=", "<", "<=", ">", ">="};
    for (const char* op : kOps)
      if (at_op(op)) return true;
    return at_word("in") || (at_word("not") && tokens_[pos_ + 1].kind == Tok::Name &&
                             tokens_[pos_ + 1].text == "in");
  }

  NodePtr comparison() {
    NodePtr left = additive();
    if (!at_comparison()) return left;
    const int column = peek().column;
    NodePtr node;
    if (at_word("in") || at_word("not")) {
      const bool negated = at_word("not");
      if (negated) take();
      take();
      node = make(NodeKind::In, column, "in", {left, additive()});
      std::const_pointer_cast<Expr::Node>(node)->negated = negated;
    } else {
      const std::string op = take().text;
      node = make(NodeKind::Compare, column, op, {left, additive()});
    }
    if (at_comparison()) fail_(peek().column, "chained comparisons are not supported; combine them with 'and'");
    return node;
  }

  // Jinja's precedence: + - bind loosest, then ~, then * / // %.
  NodePtr additive() {
    NodePtr left = concat();
    while (at_op("+") || at_op("-")) {
      const Token& op = take();
      left = make(NodeKind::Binary, op.column, op.text, {left, concat()});
    }
    return left;
  }

  NodePtr concat() {
    NodePtr left = multiplicative();
    while (at_op("~")) {
      const Token& op = take();
      left = make(NodeKind::Binary, op.column, "~", {left, multiplicative()});
    }
    return left;
  }

  NodePtr multiplicative() {
    NodePtr left = unary();
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      const Token& op = take();
      left = make(NodeKind::Binary, op.column, op.text, {left, unary()});
    }
    return left;
  }

  NodePtr unary() {
    if (at_op("-") || at_op("+")) {
      const Token& op = take();
      return make(NodeKind::Unary, op.column, op.text, {unary()});
    }
    return postfix();
  }

  NodePtr postfix() {
    NodePtr node = primary();
    while (true) {
      if (at_op(".")) {
        const int column = take().column;
        if (peek().kind != Tok::Name) fail_(peek().column, "expected a member name after '.'" + found());
        node = make(NodeKind::Member, column, take().text, {node});
      } else if (at_op("[")) {
        node = subscript(node);
      } else if (at_op("|")) {
        take();
        if (peek().kind != Tok::Name) fail_(peek().column, "expected a filter name after '|'" + found());
        const Token name = take();
        std::vector<NodePtr> args = {node};
        if (at_op("(")) append_arguments(args);
        node = call(name, std::move(args));
      } else {
        return node;
      }
    }
  }

  NodePtr subscript(NodePtr object) {
    const int column = take().column;
    NodePtr start = at_op(":") ? nullptr : ternary();
    if (!at_op(":")) {
      expect_op("]");
      return make(NodeKind::Index, column, "", {object, start});
    }
    take();
    NodePtr end = at_op("]") ? nullptr : ternary();
    expect_op("]");
    return make(NodeKind::Slice, column, "", {object, start, end});
  }

  void append_arguments(std::vector<NodePtr>& args) {
    expect_op("(");
    if (!at_op(")")) {
      args.push_back(ternary());
      while (at_op(",")) {
        take();
        args.push_back(ternary());
      }
    }
    expect_op(")");
  }

  NodePtr call(const Token& name, std::vector<NodePtr> args) {
    const auto& table = function_table();
    const auto it = table.find(name.text);
    if (it == table.end()) fail_(name.column, "unknown function '" + name.text + "'");
    if (args.size() < it->second.min_args || args.size() > it->second.max_args) {
      const size_t lo = it->second.min_args, hi = it->second.max_args;
      fail_(name.column, name.text + " takes " +
                             (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi)) +
                             " arguments, not " + std::to_string(args.size()));
    }
    return make(NodeKind::Call, name.column, name.text, std::move(args));
  }

  NodePtr literal(int column, Value value) {
    auto node = std::make_shared<Expr::Node>();
    node->kind = NodeKind::Literal;
    node->column = column;
    node->literal = std::move(value);
    return node;
  }

  NodePtr primary() {
    const Token& t = peek();
    switch (t.kind) {
      case Tok::Int: take(); return literal(t.column, Value(t.int_value));
      case Tok::Float: take(); return literal(t.column, Value(t.float_value));
      case Tok::String: take(); return literal(t.column, Value(t.text));
      case Tok::Name: return name_or_call();
      case Tok::Op:
        if (at_op("(")) {
          take();
          NodePtr inner = ternary();
          expect_op(")");
          return inner;
        }
        if (at_op("[")) return list();
        break;
      case Tok::End: break;
    }
    fail_(t.column, "expected a value" + found());
    return nullptr;
  }

  NodePtr name_or_call() {
    const Token name = take();
    if (name.text == "true" || name.text == "True") return literal(name.column, Value(true));
    if (name.text == "false" || name.text == "False") return literal(name.column, Value(false));
    static const char* const kReserved[] = {"and", "or", "not", "if", "else", "in", "for"};
    for (const char* word : kReserved)
      if (name.text == word) fail_(name.column, "expected a value, found the keyword '" + name.text + "'");
    if (!at_op("(")) return make(NodeKind::Name, name.column, name.text, {});
    std::vector<NodePtr> args;
    append_arguments(args);
    return call(name, std::move(args));
  }

  NodePtr list() {
    const int column = take().column;
    std::vector<NodePtr> items;
    if (!at_op("]")) {
      items.push_back(ternary());
      if (at_word("for")) return comprehension(column, items.front());
      while (at_op(",")) {
        take();
        if (at_op("]")) break;
        items.push_back(ternary());
      }
    }
    expect_op("]");
    return make(NodeKind::ListLit, column, "", std::move(items));
  }

  // [element for name in items] or [element for name in items if condition]; `element` parsed.
  NodePtr comprehension(int column, NodePtr element) {
    take();
    if (peek().kind != Tok::Name) fail_(peek().column, "expected a variable name after 'for'" + found());
    const std::string variable = take().text;
    if (!at_word("in")) fail_(peek().column, "expected 'in' in '[x for v in list]'" + found());
    take();
    NodePtr items = or_expr();
    NodePtr condition;
    if (at_word("if")) {
      take();
      condition = or_expr();
    }
    expect_op("]");
    return make(NodeKind::Comprehension, column, variable, {element, items, condition});
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  std::function<void(int, const std::string&)> fail_;
};

void collect_names(const Expr::Node& node, std::vector<Expr::NameUse>& out) {
  if (node.kind == NodeKind::Name) {
    out.push_back({node.name, "", node.column});
    return;
  }
  if (node.kind == NodeKind::Member && node.children[0]->kind == NodeKind::Name) {
    out.push_back({node.children[0]->name, node.name, node.children[0]->column});
    return;
  }
  if (node.kind == NodeKind::Comprehension) {
    // The loop variable is bound inside the element and the condition, not looked up.
    std::vector<Expr::NameUse> inner;
    for (const auto& child : node.children)
      if (child) collect_names(*child, inner);
    for (auto& use : inner)
      if (use.name != node.name) out.push_back(std::move(use));
    return;
  }
  for (const auto& child : node.children)
    if (child) collect_names(*child, out);
}

}  // namespace

std::string Expr::locate(int column, const std::string& what) const {
  std::string message = origin_->file + ": " + origin_->path + ": column " +
                        std::to_string(column + origin_->column_base) + ": " + what + "\n    " +
                        *text_ + "\n    " + std::string(static_cast<size_t>(std::max(column - 1, 0)), ' ') + "^";
  return message;
}

Expr Expr::parse(std::string_view text, Origin origin) {
  Expr expr;
  expr.text_ = std::make_shared<const std::string>(text);
  expr.origin_ = std::make_shared<const Origin>(std::move(origin));
  auto fail = [&expr](int column, const std::string& what) {
    throw Error(ErrorCode::InvalidFormat, expr.locate(column, what));
  };
  Parser parser(Lexer(*expr.text_, fail).run(), fail);
  expr.root_ = parser.parse_all();
  collect_names(*expr.root_, expr.names_);
  return expr;
}

bool is_function(std::string_view name) { return function_table().count(name) != 0; }

// ---------------------------------------------------------------------------------------------
// Evaluation

namespace {

class Evaluator {
 public:
  Evaluator(const Expr& expr, const Scope& scope) : expr_(expr), scope_(scope) {}

  Value eval(const Expr::Node& n) {
    switch (n.kind) {
      case NodeKind::Literal: return n.literal;
      case NodeKind::ListLit: {
        List items;
        for (const auto& child : n.children) items.push_back(eval(*child));
        return Value(std::move(items));
      }
      case NodeKind::Comprehension: return comprehension(n);
      case NodeKind::Name: return lookup(n);
      case NodeKind::Member: return member(n);
      case NodeKind::Index: return index(n);
      case NodeKind::Slice: return slice(n);
      case NodeKind::Call: return call(n);
      case NodeKind::Unary: return unary(n);
      case NodeKind::Binary: return binary(n);
      case NodeKind::And: {
        Value left = eval(*n.children[0]);
        return left.truthy() ? eval(*n.children[1]) : left;
      }
      case NodeKind::Or: {
        Value left = eval(*n.children[0]);
        return left.truthy() ? left : eval(*n.children[1]);
      }
      case NodeKind::Not: return Value(!eval(*n.children[0]).truthy());
      case NodeKind::Ternary:
        return eval(*n.children[0]).truthy() ? eval(*n.children[1]) : eval(*n.children[2]);
      case NodeKind::Compare: return compare(n);
      case NodeKind::In: return contains(n);
    }
    fail(n, "unknown expression node");
  }

  [[noreturn]] void fail(const Expr::Node& n, const std::string& what) const {
    throw Error(ErrorCode::Runtime, expr_.locate(n.column, what));
  }

 private:
  Value comprehension(const Expr::Node& n) {
    const Value items = eval(*n.children[1]);
    if (!items.is_list()) fail(n, std::string("'for' needs a list, found a ") + kind_name(items.kind()));
    List out;
    for (const Value& item : items.as_list()) {
      locals_.emplace_back(n.name, item);
      const bool keep = !n.children[2] || eval(*n.children[2]).truthy();
      if (keep) out.push_back(eval(*n.children[0]));
      locals_.pop_back();
    }
    return Value(std::move(out));
  }

  Value lookup(const Expr::Node& n) {
    for (auto it = locals_.rbegin(); it != locals_.rend(); ++it)
      if (it->first == n.name) return it->second;
    auto value = scope_.find(n.name);
    if (!value) fail(n, "'" + n.name + "' is not defined");
    return std::move(*value);
  }

  Value member(const Expr::Node& n) {
    const Value object = eval(*n.children[0]);
    if (!object.is_object()) fail(n, "cannot read '." + n.name + "' of a " + kind_name(object.kind()));
    const Value* found = object.member(n.name);
    if (!found) {
      const std::string owner = n.children[0]->kind == NodeKind::Name ? "'" + n.children[0]->name + "'" : "the object";
      fail(n, owner + " has no member '" + n.name + "'");
    }
    return *found;
  }

  int64_t list_position(const Expr::Node& n, int64_t i, size_t size) {
    const int64_t count = static_cast<int64_t>(size);
    const int64_t position = i < 0 ? i + count : i;
    if (position < 0 || position >= count)
      fail(n, "index " + std::to_string(i) + " is out of range for a list of " + std::to_string(size));
    return position;
  }

  Value index(const Expr::Node& n) {
    const Value object = eval(*n.children[0]);
    const Value key = eval(*n.children[1]);
    if (object.is_list()) {
      if (!key.is_int()) fail(n, std::string("a list index must be an int, not a ") + kind_name(key.kind()));
      return object.as_list()[static_cast<size_t>(list_position(n, key.as_int(), object.as_list().size()))];
    }
    if (object.is_object() && key.is_string()) {
      const Value* found = object.member(key.as_string());
      if (!found) fail(n, "the object has no member " + key.repr());
      return *found;
    }
    fail(n, std::string("cannot index a ") + kind_name(object.kind()) + " with a " + kind_name(key.kind()));
  }

  // Python slice bounds: negative counts from the end, out-of-range clamps.
  int64_t slice_bound(const Expr::Node& n, const NodePtr& bound, int64_t fallback, int64_t size) {
    if (!bound) return fallback;
    const Value v = eval(*bound);
    if (!v.is_int()) fail(n, std::string("a slice bound must be an int, not a ") + kind_name(v.kind()));
    const int64_t i = v.as_int() < 0 ? v.as_int() + size : v.as_int();
    return std::clamp<int64_t>(i, 0, size);
  }

  Value slice(const Expr::Node& n) {
    const Value object = eval(*n.children[0]);
    if (object.is_string()) {
      const std::string& text = object.as_string();
      const int64_t size = static_cast<int64_t>(text.size());
      const int64_t start = slice_bound(n, n.children[1], 0, size);
      const int64_t end = slice_bound(n, n.children[2], size, size);
      return Value(start < end ? text.substr(static_cast<size_t>(start), static_cast<size_t>(end - start)) : std::string());
    }
    if (!object.is_list()) fail(n, std::string("cannot slice a ") + kind_name(object.kind()));
    const List& items = object.as_list();
    const int64_t size = static_cast<int64_t>(items.size());
    const int64_t start = slice_bound(n, n.children[1], 0, size);
    const int64_t end = slice_bound(n, n.children[2], size, size);
    return Value(start < end ? List(items.begin() + start, items.begin() + end) : List{});
  }

  Value unary(const Expr::Node& n) {
    const Value v = eval(*n.children[0]);
    if (!v.is_number()) fail(n, "unary '" + n.name + "' needs a number, not a " + kind_name(v.kind()));
    if (n.name == "+") return v;
    if (v.is_float()) return Value(-v.as_number());
    if (v.as_int() == std::numeric_limits<int64_t>::min()) fail(n, "integer overflow");
    return Value(-v.as_int());
  }

  Value binary(const Expr::Node& n) {
    const Value a = eval(*n.children[0]);
    const Value b = eval(*n.children[1]);
    if (n.name == "~") return Value(a.to_text() + b.to_text());
    if (n.name == "+" && a.is_string() && b.is_string()) return Value(a.as_string() + b.as_string());
    if (n.name == "+" && a.is_list() && b.is_list()) {
      List joined = a.as_list();
      joined.insert(joined.end(), b.as_list().begin(), b.as_list().end());
      return Value(std::move(joined));
    }
    if (!a.is_number() || !b.is_number())
      fail(n, "'" + n.name + "' needs numbers, not " + kind_name(a.kind()) + " and " + kind_name(b.kind()));
    if (n.name == "/") {
      if (b.as_number() == 0) fail(n, "division by zero");
      return Value(a.as_number() / b.as_number());
    }
    if (a.is_int() && b.is_int()) return integer_op(n, a.as_int(), b.as_int());
    return float_op(n, a.as_number(), b.as_number());
  }

  Value integer_op(const Expr::Node& n, int64_t a, int64_t b) {
    int64_t r = 0;
    const std::string& op = n.name;
    if (op == "+" && !__builtin_add_overflow(a, b, &r)) return Value(r);
    if (op == "-" && !__builtin_sub_overflow(a, b, &r)) return Value(r);
    if (op == "*" && !__builtin_mul_overflow(a, b, &r)) return Value(r);
    if (op == "//" || op == "%") {
      if (b == 0) fail(n, op == "%" ? "modulo by zero" : "division by zero");
      if (a == std::numeric_limits<int64_t>::min() && b == -1) fail(n, "integer overflow");
      int64_t q = a / b;
      int64_t m = a % b;
      if (m != 0 && ((m < 0) != (b < 0))) {  // Python floors toward negative infinity
        q -= 1;
        m += b;
      }
      return Value(op == "//" ? q : m);
    }
    fail(n, "integer overflow");
  }

  Value float_op(const Expr::Node& n, double a, double b) {
    const std::string& op = n.name;
    if (op == "+") return Value(a + b);
    if (op == "-") return Value(a - b);
    if (op == "*") return Value(a * b);
    if (b == 0) fail(n, op == "%" ? "modulo by zero" : "division by zero");
    if (op == "//") return Value(std::floor(a / b));
    return Value(a - b * std::floor(a / b));
  }

  Value compare(const Expr::Node& n) {
    const Value a = eval(*n.children[0]);
    const Value b = eval(*n.children[1]);
    const std::string& op = n.name;
    if (op == "==") return Value(a == b);
    if (op == "!=") return Value(!(a == b));
    int order = 0;
    if (a.is_number() && b.is_number()) {
      order = a.is_int() && b.is_int() ? (a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int())
                                      : (a.as_number() < b.as_number() ? -1 : a.as_number() > b.as_number());
    } else if (a.is_string() && b.is_string()) {
      order = a.as_string().compare(b.as_string());
    } else {
      fail(n, "cannot order a " + std::string(kind_name(a.kind())) + " and a " + kind_name(b.kind()) + " with '" + op + "'");
    }
    if (op == "<") return Value(order < 0);
    if (op == "<=") return Value(order <= 0);
    if (op == ">") return Value(order > 0);
    return Value(order >= 0);
  }

  Value contains(const Expr::Node& n) {
    const Value item = eval(*n.children[0]);
    const Value container = eval(*n.children[1]);
    bool found = false;
    if (container.is_list()) {
      for (const Value& v : container.as_list()) found = found || v == item;
    } else if (container.is_string() && item.is_string()) {
      found = container.as_string().find(item.as_string()) != std::string::npos;
    } else if (container.is_object() && item.is_string()) {
      found = container.member(item.as_string()) != nullptr;
    } else {
      fail(n, std::string("'in' cannot search a ") + kind_name(container.kind()) + " for a " + kind_name(item.kind()));
    }
    return Value(found != n.negated);
  }

  Value call(const Expr::Node& n);

  const Expr& expr_;
  const Scope& scope_;
  std::vector<std::pair<std::string, Value>> locals_;  // comprehension variables, innermost last
};

Value Evaluator::call(const Expr::Node& n) {
  Args args;
  for (const auto& child : n.children) args.push_back(eval(*child));
  return function_table().at(n.name).run(Call{expr_, n, scope_, args});
}

}  // namespace

Value Expr::evaluate(const Scope& scope) const {
  Evaluator evaluator(*this, scope);
  return evaluator.eval(*root_);
}

}  // namespace wgml::spec
