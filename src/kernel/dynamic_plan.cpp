#include "kernel/dynamic_plan.h"

#include <algorithm>
#include <cstring>

#include "core/workgroups.h"
#include "kernel/expr_internal.h"
#include "wgml/error.h"

namespace wgml::kernel {
namespace {

using expr_internal::NodeKind;
using Op = IntProgram::Op;

// Deep enough for any expression a spec writes; a deeper one is not compiled.
constexpr size_t kMaxDepth = 32;

std::optional<int64_t> floor_div(int64_t a, int64_t b, bool modulo) {
  if (b == 0 || (a == INT64_MIN && b == -1)) return std::nullopt;
  int64_t q = a / b, m = a % b;
  if (m != 0 && ((m < 0) != (b < 0))) {  // Python floors toward negative infinity, as expr.cpp does
    q -= 1;
    m += b;
  }
  return modulo ? m : q;
}

std::optional<int64_t> ceil_div(int64_t a, int64_t b) {
  if (b <= 0) return std::nullopt;
  return a / b + ((a % b) > 0 ? 1 : 0);
}

// One step applied to the top of the stack; false where the spec's evaluation would fail.
bool apply_binary(Op op, int64_t a, int64_t b, int64_t& r) {
  switch (op) {
    case Op::Add:
      return !__builtin_add_overflow(a, b, &r);
    case Op::Sub:
      return !__builtin_sub_overflow(a, b, &r);
    case Op::Mul:
      return !__builtin_mul_overflow(a, b, &r);
    case Op::FloorDiv:
    case Op::Mod: {
      const auto q = floor_div(a, b, op == Op::Mod);
      if (q) r = *q;
      return q.has_value();
    }
    case Op::CeilDiv: {
      const auto q = ceil_div(a, b);
      if (q) r = *q;
      return q.has_value();
    }
    case Op::RoundUp: {
      const auto q = ceil_div(a, b);
      return q && !__builtin_mul_overflow(*q, b, &r);
    }
    case Op::Min:
      r = std::min(a, b);
      return true;
    case Op::Max:
      r = std::max(a, b);
      return true;
    case Op::Lt:
      r = a < b;
      return true;
    case Op::Le:
      r = a <= b;
      return true;
    case Op::Gt:
      r = a > b;
      return true;
    case Op::Ge:
      r = a >= b;
      return true;
    case Op::Eq:
      r = a == b;
      return true;
    case Op::Ne:
      r = a != b;
      return true;
    case Op::And:  // Python's `a and b`: a when it is false, else b
      r = a ? b : a;
      return true;
    case Op::Or:
      r = a ? a : b;
      return true;
    default:
      return false;
  }
}

bool is_binary(Op op) { return op >= Op::Add && op <= Op::Or; }

}  // namespace

std::optional<int64_t> IntProgram::run(std::span<const int64_t> values) const {
  std::array<int64_t, kMaxDepth> stack;
  size_t top = 0;
  for (const Step& s : steps) {
    if (s.op == Op::Const || s.op == Op::Load) {
      if (top == kMaxDepth || (s.op == Op::Load && static_cast<size_t>(s.arg) >= values.size())) return std::nullopt;
      stack[top++] = s.op == Op::Const ? s.arg : values[static_cast<size_t>(s.arg)];
    } else if (s.op == Op::Neg || s.op == Op::Abs || s.op == Op::Not) {
      if (top < 1) return std::nullopt;
      int64_t& v = stack[top - 1];
      if ((s.op != Op::Not && v == INT64_MIN)) return std::nullopt;
      v = s.op == Op::Neg ? -v : s.op == Op::Abs ? (v < 0 ? -v : v) : !v;
    } else if (is_binary(s.op)) {
      if (top < 2) return std::nullopt;
      int64_t r = 0;
      if (!apply_binary(s.op, stack[top - 2], stack[top - 1], r)) return std::nullopt;
      stack[top - 2] = r;
      --top;
    } else {  // Select (condition, then, else) and Clamp (value, low, high) take three
      if (top < 3) return std::nullopt;
      const int64_t a = stack[top - 3], b = stack[top - 2], c = stack[top - 1];
      stack[top - 3] = s.op == Op::Select ? (a ? b : c) : std::clamp(a, b, std::max(b, c));
      top -= 2;
    }
  }
  if (top != 1) return std::nullopt;
  return stack[0];
}

bool DynamicPlan::apply(std::span<const int64_t> values, uint32_t max_workgroups_per_dimension,
                        std::vector<std::vector<uint8_t>>& params, std::vector<std::array<uint32_t, 3>>& dispatch) const {
  for (size_t i = 0; i < attributes.size(); ++i) {
    const Attribute& a = attributes[i];
    const double v = static_cast<double>(values[i]);
    if ((a.min && v < *a.min) || (a.max && v > *a.max)) return false;
    if (a.allowed && std::find(a.allowed->begin(), a.allowed->end(), Value(values[i])) == a.allowed->end()) return false;
  }
  for (const IntProgram& c : conditions) {
    const auto v = c.run(values);
    if (!v || !*v) return false;
  }
  for (const std::vector<IntProgram>& variant : rejected) {
    bool all = true;
    for (const IntProgram& c : variant) {
      const auto v = c.run(values);
      if (!v) return false;
      all = all && *v;
    }
    if (all) return false;  // a variant of higher priority would now apply
  }
  // Computed first, written after: a value that does not fit leaves everything as it was.
  std::array<int64_t, 64> field_values;
  if (fields.size() > field_values.size()) return false;
  for (size_t i = 0; i < fields.size(); ++i) {
    const auto v = fields[i].value.run(values);
    const int64_t low = fields[i].is_signed ? INT32_MIN : 0, high = fields[i].is_signed ? INT32_MAX : UINT32_MAX;
    if (!v || *v < low || *v > high) return false;
    field_values[i] = *v;
  }
  std::array<std::array<uint32_t, 3>, 16> sizes;
  if (dispatches.size() > sizes.size()) return false;
  for (size_t i = 0; i < dispatches.size(); ++i) {
    const Dispatch& d = dispatches[i];
    for (size_t axis = 0; axis < (d.folded ? 1 : 3); ++axis) {
      const auto v = d.sizes[axis].run(values);
      if (!v || *v < 0 || (!d.folded && *v > max_workgroups_per_dimension)) return false;
      sizes[i][axis] = static_cast<uint32_t>(*v);
      if (d.folded) {
        if (static_cast<uint64_t>(*v) >
            uint64_t{max_workgroups_per_dimension} * max_workgroups_per_dimension * max_workgroups_per_dimension)
          return false;
        const auto folded = fold_workgroup_count(static_cast<uint64_t>(*v), max_workgroups_per_dimension);
        for (size_t k = 0; k < 3; ++k) sizes[i][k] = static_cast<uint32_t>(folded[k]);
      }
    }
  }
  for (size_t i = 0; i < fields.size(); ++i) {
    const uint32_t word = fields[i].is_signed ? static_cast<uint32_t>(static_cast<int32_t>(field_values[i]))
                                              : static_cast<uint32_t>(field_values[i]);
    std::memcpy(params[fields[i].pass].data() + fields[i].offset, &word, sizeof word);
  }
  for (size_t i = 0; i < dispatches.size(); ++i) dispatch[dispatches[i].pass] = sizes[i];
  return true;
}

int DynamicCompiler::dynamic_index(std::string_view name) const {
  const auto it = std::find(dynamic_.begin(), dynamic_.end(), name);
  return it == dynamic_.end() ? -1 : static_cast<int>(it - dynamic_.begin());
}

bool DynamicCompiler::name_depends(std::string_view name, int layer) const {
  int defined_in = 0;
  const DeriveEntry* entry = names_.derived(name, layer, defined_in);
  if (!entry) return name == "attrs";  // the whole attribute object (a bare read) may hold one
  return depends(entry->expr, defined_in);
}

bool DynamicCompiler::depends(const Expr& e, const Expr::Node& n, int layer) const {
  if (n.kind == NodeKind::Member && n.children[0]->kind == NodeKind::Name && n.children[0]->name == "attrs")
    return dynamic_index(n.name) >= 0;
  if (n.kind == NodeKind::Name) return name_depends(n.name, layer);
  if (const Decision d = decide(e, n, layer); d.decided) return depends(e, *d.taken, layer);
  return std::any_of(n.children.begin(), n.children.end(), [&](const auto& child) { return child && depends(e, *child, layer); });
}

bool DynamicCompiler::depends(const Expr& e, int layer) const { return depends(e, e.tree(), layer); }

bool DynamicCompiler::depends(const Expr::NameUse& use, int layer) const {
  if (use.name == "attrs") return use.member.empty() || dynamic_index(use.member) >= 0;
  return name_depends(use.name, layer);
}

std::optional<IntProgram> DynamicCompiler::compile(const Expr& e, int layer) const {
  IntProgram program;
  if (!compile(e, e.tree(), layer, program) || program.steps.size() > 256) return std::nullopt;
  return program;
}

DynamicCompiler::Decision DynamicCompiler::decide(const Expr& e, const Expr::Node& n, int layer) const {
  const bool branches = n.kind == NodeKind::Ternary
                            ? n.children.size() == 3
                            : (n.kind == NodeKind::And || n.kind == NodeKind::Or) && n.children.size() == 2;
  if (!branches || !n.children[0] || depends(e, *n.children[0], layer)) return {};
  const auto first = fold(e, *n.children[0], layer);
  if (!first) return {};  // a comprehension's variable, say: decided where it is evaluated
  if (n.kind == NodeKind::Ternary) return {true, n.children[*first ? 1 : 2].get()};
  const bool stops = n.kind == NodeKind::And ? *first == 0 : *first != 0;
  return {true, stops ? n.children[0].get() : n.children[1].get()};
}

std::optional<int64_t> DynamicCompiler::fold(const Expr& e, const Expr::Node& n, int layer) const {
  try {
    const Value v = expr_internal::evaluate_node(e, n, names_.scope(layer));
    if (v.is_bool()) return v.as_bool() ? 1 : 0;
    if (v.is_int()) return v.as_int();
  } catch (const Error&) {
    // The full planner evaluates it too, and reports it.
  }
  return std::nullopt;
}

bool DynamicCompiler::compile(const Expr& e, const Expr::Node& n, int layer, IntProgram& out) const {
  const auto emit = [&](Op op, int64_t arg = 0) {
    out.steps.push_back({op, arg});
    return true;
  };
  const auto children = [&](size_t count) {
    if (n.children.size() != count) return false;
    for (const auto& child : n.children)
      if (!child || !compile(e, *child, layer, out)) return false;
    return true;
  };
  if (!depends(e, n, layer)) {
    const auto v = fold(e, n, layer);
    return v && emit(Op::Const, *v);
  }
  if (const Decision d = decide(e, n, layer); d.decided) return compile(e, *d.taken, layer, out);
  switch (n.kind) {
    case NodeKind::Member:  // depends() found attrs.NAME of a dynamic NAME, or a member of a value that reads one
      return n.children[0]->kind == NodeKind::Name && n.children[0]->name == "attrs" && emit(Op::Load, dynamic_index(n.name));
    case NodeKind::Name: {
      int defined_in = 0;
      const DeriveEntry* entry = names_.derived(n.name, layer, defined_in);
      return entry && compile(entry->expr, entry->expr.tree(), defined_in, out);
    }
    case NodeKind::Unary:
      return n.name == "-" && children(1) && emit(Op::Neg);
    case NodeKind::Not:
      return children(1) && emit(Op::Not);
    case NodeKind::And:
      return children(2) && emit(Op::And);
    case NodeKind::Or:
      return children(2) && emit(Op::Or);
    case NodeKind::Ternary:
      return children(3) && emit(Op::Select);
    case NodeKind::Binary: {
      static constexpr std::pair<std::string_view, Op> kOps[] = {
          {"+", Op::Add}, {"-", Op::Sub}, {"*", Op::Mul}, {"//", Op::FloorDiv}, {"%", Op::Mod}};
      for (const auto& [name, op] : kOps)
        if (n.name == name) return children(2) && emit(op);
      return false;
    }
    case NodeKind::Compare: {
      static constexpr std::pair<std::string_view, Op> kOps[] = {{"<", Op::Lt},  {"<=", Op::Le}, {">", Op::Gt},
                                                                 {">=", Op::Ge}, {"==", Op::Eq}, {"!=", Op::Ne}};
      for (const auto& [name, op] : kOps)
        if (n.name == name) return children(2) && emit(op);
      return false;
    }
    case NodeKind::Call: {
      if ((n.name == "min" || n.name == "max") && n.children.size() >= 2) {
        for (size_t i = 0; i < n.children.size(); ++i)
          if (!compile(e, *n.children[i], layer, out) || (i > 0 && !emit(n.name == "min" ? Op::Min : Op::Max))) return false;
        return true;
      }
      if (n.name == "ceilDiv") return children(2) && emit(Op::CeilDiv);
      if (n.name == "roundUp") return children(2) && emit(Op::RoundUp);
      if (n.name == "clamp") return children(3) && emit(Op::Clamp);
      if (n.name == "abs") return children(1) && emit(Op::Abs);
      if (n.name == "int") return children(1);
      return false;
    }
    default:
      return false;
  }
}

}  // namespace wgml::kernel
