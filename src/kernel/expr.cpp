// Expressions: scopes, error locations and evaluation of the syntax tree (expr_parser.cpp builds
// it; expr_functions.cpp runs the built-in functions it calls).
#include "kernel/expr.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "kernel/expr_internal.h"
#include "wgml/error.h"

namespace wgml::kernel {

std::optional<Value> ObjectScope::find(std::string_view name) const {
  const auto it = names_.find(name);
  if (it != names_.end()) return it->second;
  return parent_ ? parent_->find(name) : std::nullopt;
}

std::string Expr::locate(int column, const std::string& what) const {
  std::string message = origin_->file + ": " + origin_->path + ": column " + std::to_string(column + origin_->column_base) +
                        ": " + what + "\n    " + *text_ + "\n    " +
                        std::string(static_cast<size_t>(std::max(column - 1, 0)), ' ') + "^";
  return message;
}

namespace expr_internal {
namespace {

class Evaluator {
 public:
  Evaluator(const Expr& expr, const Scope& scope) : expr_(expr), scope_(scope) {}

  Value eval(const Expr::Node& n) {
    switch (n.kind) {
      case NodeKind::Literal:
        return n.literal;
      case NodeKind::ListLit: {
        List items;
        for (const auto& child : n.children) items.push_back(eval(*child));
        return Value(std::move(items));
      }
      case NodeKind::Comprehension:
        return comprehension(n);
      case NodeKind::Name:
        return lookup(n);
      case NodeKind::Member:
        return member(n);
      case NodeKind::Index:
        return index(n);
      case NodeKind::Slice:
        return slice(n);
      case NodeKind::Call:
        return call(n);
      case NodeKind::Unary:
        return unary(n);
      case NodeKind::Binary:
        return binary(n);
      case NodeKind::And: {
        Value left = eval(*n.children[0]);
        return left.truthy() ? eval(*n.children[1]) : left;
      }
      case NodeKind::Or: {
        Value left = eval(*n.children[0]);
        return left.truthy() ? left : eval(*n.children[1]);
      }
      case NodeKind::Not:
        return Value(!eval(*n.children[0]).truthy());
      case NodeKind::Ternary:
        return eval(*n.children[0]).truthy() ? eval(*n.children[1]) : eval(*n.children[2]);
      case NodeKind::Compare:
        return compare(n);
      case NodeKind::In:
        return contains(n);
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
      const auto [start, end] = slice_bounds(n, text.size());
      return Value(start < end ? text.substr(static_cast<size_t>(start), static_cast<size_t>(end - start)) : std::string());
    }
    if (!object.is_list()) fail(n, std::string("cannot slice a ") + kind_name(object.kind()));
    const List& items = object.as_list();
    const auto [start, end] = slice_bounds(n, items.size());
    return Value(start < end ? List(items.begin() + start, items.begin() + end) : List{});
  }

  // [start, end) of the Slice node `n` over `size` items.
  std::pair<int64_t, int64_t> slice_bounds(const Expr::Node& n, size_t size) {
    const int64_t count = static_cast<int64_t>(size);
    const int64_t start = slice_bound(n, n.children[1], 0, count);
    return {start, slice_bound(n, n.children[2], count, count)};
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

  Value call(const Expr::Node& n) {
    List args;
    for (const auto& child : n.children) args.push_back(eval(*child));
    return call_function(expr_, n, scope_, args);
  }

  const Expr& expr_;
  const Scope& scope_;
  std::vector<std::pair<std::string, Value>> locals_;  // comprehension variables, innermost last
};

}  // namespace
}  // namespace expr_internal

Value Expr::evaluate(const Scope& scope) const { return expr_internal::evaluate_node(*this, *root_, scope); }

Value expr_internal::evaluate_node(const Expr& expr, const Expr::Node& node, const Scope& scope) {
  Evaluator evaluator(expr, scope);
  return evaluator.eval(node);
}

}  // namespace wgml::kernel
