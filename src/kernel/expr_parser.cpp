// The expression parser: tokens to an immutable syntax tree, by recursive descent with Jinja's
// operator precedence, and the names the tree reads.
#include "kernel/expr_internal.h"
#include "wgml/error.h"

namespace wgml::kernel {
namespace expr_internal {
namespace {

class Parser {
 public:
  Parser(std::vector<Token> tokens, const SyntaxError& fail) : tokens_(std::move(tokens)), fail_(fail) {}

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
  std::string found() const { return peek().kind == Tok::End ? " at the end" : ", found '" + peek().text + "'"; }

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
    return at_word("in") || (at_word("not") && tokens_[pos_ + 1].kind == Tok::Name && tokens_[pos_ + 1].text == "in");
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
    const Arity* arity = find_function(name.text);
    if (!arity) fail_(name.column, "unknown function '" + name.text + "'");
    if (args.size() < arity->min_args || args.size() > arity->max_args) {
      const size_t lo = arity->min_args, hi = arity->max_args;
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
      case Tok::Int:
        take();
        return literal(t.column, Value(t.int_value));
      case Tok::Float:
        take();
        return literal(t.column, Value(t.float_value));
      case Tok::String:
        take();
        return literal(t.column, Value(t.text));
      case Tok::Name:
        return name_or_call();
      case Tok::Op:
        if (at_op("(")) {
          take();
          NodePtr inner = ternary();
          expect_op(")");
          return inner;
        }
        if (at_op("[")) return list();
        break;
      case Tok::End:
        break;
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
  const SyntaxError& fail_;
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

NodePtr parse_tokens(std::vector<Token> tokens, const SyntaxError& fail) { return Parser(std::move(tokens), fail).parse_all(); }

}  // namespace expr_internal

Expr Expr::parse(std::string_view text, Origin origin) {
  Expr expr;
  expr.text_ = std::make_shared<const std::string>(text);
  expr.origin_ = std::make_shared<const Origin>(std::move(origin));
  const expr_internal::SyntaxError fail = [&expr](int column, const std::string& what) {
    throw Error(ErrorCode::InvalidFormat, expr.locate(column, what));
  };
  expr.root_ = expr_internal::parse_tokens(expr_internal::tokenize(*expr.text_, fail), fail);
  std::vector<NameUse> names;
  expr_internal::collect_names(*expr.root_, names);
  expr.names_ = std::make_shared<const std::vector<NameUse>>(std::move(names));
  return expr;
}

const std::vector<Expr::NameUse>& Expr::names() const {
  static const std::vector<NameUse> none;
  return names_ ? *names_ : none;
}

Expr ExprCache::parse(std::string_view text, Origin origin) {
  auto it = parsed_.find(text);
  if (it == parsed_.end()) it = parsed_.emplace(std::string(text), Expr::parse(text, origin)).first;
  Expr expr = it->second;
  expr.origin_ = std::make_shared<const Origin>(std::move(origin));
  return expr;
}

}  // namespace wgml::kernel
