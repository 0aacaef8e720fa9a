// The built-in functions of the expression language and their table (docs/kernels.md,
// "Expressions"). Each checks its own argument kinds; the parser has checked their number.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <unordered_map>

#include "kernel/expr_internal.h"
#include "wgml/dtype.h"
#include "wgml/error.h"

namespace wgml::kernel {
namespace expr_internal {
namespace {

// One call of a built-in function: its evaluated arguments and where to report a bad one.
struct Call {
  const Expr& expr;
  const Expr::Node& node;
  const Scope& scope;
  const List& args;

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
  if (axis < -rank || axis >= rank) c.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
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

// The number of argument 1 as a double.
double number(const Call& c) {
  if (!c.args[0].is_number()) c.fail(std::string("needs a number, not a ") + kind_name(c.args[0].kind()));
  return c.args[0].as_number();
}

// exp and log in double, for host-side tables of constants (Rope's inverse frequencies).
Value fn_exp(const Call& c) { return Value(std::exp(number(c))); }
Value fn_log(const Call& c) {
  const double d = number(c);
  if (!(d > 0)) c.fail("needs a positive number, not " + c.args[0].to_text());
  return Value(std::log(d));
}

// The number rounded to the nearest float32 (as a float): reproduces a computation that the CPU
// reference does in float32, step by step.
Value fn_float32(const Call& c) { return Value(static_cast<double>(static_cast<float>(number(c)))); }

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

// The dtype name of an ExecuTorch ScalarType code (a node's `dtype` attribute), e.g. 15 -> "bfloat16".
Value fn_scalar_type_name(const Call& c) {
  const int64_t code = c.integer(0);
  const auto dtype =
      code >= 0 && code <= std::numeric_limits<int>::max() ? dtype_from_scalar_type(static_cast<int>(code)) : std::nullopt;
  if (!dtype) c.fail(std::to_string(code) + " is no ScalarType code");
  return Value(std::string(dtype_name(*dtype)));
}

struct Function {
  Arity arity;
  Value (*run)(const Call&);
};

// Every built-in function: a new one is a function above and a row here.
const std::unordered_map<std::string_view, Function>& function_table() {
  static const std::unordered_map<std::string_view, Function> table = {
      {"ceilDiv", {{2, 2}, fn_ceil_div}},
      {"numel", {{1, 1}, fn_numel}},
      {"min", {{1, 16}, fn_min}},
      {"max", {{1, 16}, fn_max}},
      {"f16Ok", {{1, 1}, fn_f16_ok}},
      {"len", {{1, 1}, fn_len}},
      {"length", {{1, 1}, fn_len}},
      {"range", {{1, 3}, fn_range}},
      {"abs", {{1, 1}, fn_abs}},
      {"strides", {{1, 1}, fn_strides}},
      {"normAxis", {{2, 2}, fn_norm_axis}},
      {"int", {{1, 1}, fn_int}},
      {"float", {{1, 1}, fn_float}},
      {"str", {{1, 1}, fn_str}},
      {"scalarTypeName", {{1, 1}, fn_scalar_type_name}},
      {"join", {{1, 2}, fn_join}},
      {"u32", {{1, 1}, fn_u32}},
      {"i32", {{1, 1}, fn_i32}},
      {"f32", {{1, 1}, fn_f32}},
      {"exp", {{1, 1}, fn_exp}},
      {"log", {{1, 1}, fn_log}},
      {"float32", {{1, 1}, fn_float32}},
      {"reverse", {{1, 1}, fn_reverse}},
      {"sum", {{1, 1}, fn_sum}},
      {"roundUp", {{2, 2}, fn_round_up}},
      {"broadcastShapes", {{1, 16}, fn_broadcast_shapes}},
      {"broadcastStrides", {{2, 2}, fn_broadcast_strides}},
      {"sliceRange", {{4, 4}, fn_slice_range}},
      {"clamp", {{3, 3}, fn_clamp}},
  };
  return table;
}

}  // namespace

const Arity* find_function(std::string_view name) {
  const auto& table = function_table();
  const auto it = table.find(name);
  return it == table.end() ? nullptr : &it->second.arity;
}

Value call_function(const Expr& expr, const Expr::Node& call, const Scope& scope, const std::vector<Value>& args) {
  return function_table().at(call.name).run(Call{expr, call, scope, args});
}

}  // namespace expr_internal

bool is_function(std::string_view name) { return expr_internal::find_function(name) != nullptr; }

}  // namespace wgml::kernel
