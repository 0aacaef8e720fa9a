#include "runtime/native_ops.h"

#include <limits>
#include <optional>

#include "core/elements.h"

namespace wgml::runtime {
namespace {

// An int node's result: 64-bit programs fail on int64 overflow, the others (MLX's int32 value
// slots) when the result leaves int32.
int64_t checked_result(const ExecContext& ctx, std::optional<int64_t> v, const char* op) {
  if (!v) fail(std::string(op) + ": the result overflows int64");
  if (ctx.program().int64_values) return *v;
  if (*v < std::numeric_limits<int32_t>::min() || *v > std::numeric_limits<int32_t>::max())
    fail(std::string(op) + ": result " + std::to_string(*v) + " overflows int32");
  return *v;
}

std::optional<int64_t> add(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? std::nullopt : std::optional(r);
}

std::optional<int64_t> subtract(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_sub_overflow(a, b, &r) ? std::nullopt : std::optional(r);
}

std::optional<int64_t> multiply(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? std::nullopt : std::optional(r);
}

int64_t nonzero_divisor(int64_t b, const char* op) {
  if (b == 0) fail(std::string(op) + ": division by zero");
  return b;
}

std::optional<int64_t> floor_div(int64_t a, int64_t b) {
  if (a == std::numeric_limits<int64_t>::min() && b == -1) return std::nullopt;
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

std::optional<int64_t> floor_mod(int64_t a, int64_t b) {
  if (b == -1) return 0;  // INT64_MIN % -1 is undefined in C++
  const int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

template <class N, class F>
void int_op(const N& n, ExecContext& ctx, const char* name, F f) {
  const int64_t a = ctx.resolve(n.a), b = ctx.resolve(n.b);
  ctx.set_value(n.out, checked_result(ctx, f(a, b), name));
}

// ItemInt's int: MLX reads item<int>, for 64-bit integers the low 32 bits; 64-bit programs keep
// all of it.
int64_t item_int(const ExecContext& ctx, const Tensor& x) {
  const int64_t v = load_as_int64(x.dtype(), x.data(), 0);
  if (ctx.program().int64_values) return v;
  return x.dtype() == DType::Int64 ? static_cast<int32_t>(static_cast<uint32_t>(v)) : clamp_to_int32(v);
}

struct NativeOps {
  ExecContext& ctx;
  void operator()(const ir::NoopNode&) {}
  void operator()(const ir::IdCopyNode& n) { ctx.set_tensor(n.out, ctx.tensor(n.x)); }
  void operator()(const ir::AddIntNode& n) { int_op(n, ctx, "AddInt", add); }
  void operator()(const ir::SubtractIntNode& n) { int_op(n, ctx, "SubtractInt", subtract); }
  void operator()(const ir::MultiplyIntNode& n) { int_op(n, ctx, "MultiplyInt", multiply); }
  void operator()(const ir::FloorDivideIntNode& n) {
    int_op(n, ctx, "FloorDivideInt", [](int64_t a, int64_t b) { return floor_div(a, nonzero_divisor(b, "FloorDivideInt")); });
  }
  void operator()(const ir::ModIntNode& n) {
    int_op(n, ctx, "ModInt", [](int64_t a, int64_t b) { return floor_mod(a, nonzero_divisor(b, "ModInt")); });
  }
  void operator()(const ir::SymSizeNode& n) {
    const Tensor& a = ctx.tensor(n.a);
    ctx.set_value(n.out, checked_result(ctx, a.dim(normalize_axis(n.dim, a.rank())), "SymSize"));
  }
  void operator()(const ir::ItemIntNode& n) {
    const Tensor& x = ctx.tensor(n.x);
    if (x.numel() < 1) fail("ItemInt: the tensor is empty");
    ctx.set_value(n.out, item_int(ctx, x));
  }
  template <class T>
  void operator()(const T&) {
    fail("internal: not a native op");
  }
};

}  // namespace

bool is_native_op(size_t id) {
  switch (id) {
    case ir::NoopNode::kUnionId:
    case ir::IdCopyNode::kUnionId:
    case ir::AddIntNode::kUnionId:
    case ir::SubtractIntNode::kUnionId:
    case ir::MultiplyIntNode::kUnionId:
    case ir::FloorDivideIntNode::kUnionId:
    case ir::ModIntNode::kUnionId:
    case ir::SymSizeNode::kUnionId:
    case ir::ItemIntNode::kUnionId:
    case ir::ScanNode::kUnionId:
    case ir::IfNode::kUnionId:
      return true;
    default:
      return false;
  }
}

void run_native_op(const ir::Node& node, ExecContext& ctx) { std::visit(NativeOps{ctx}, node); }

}  // namespace wgml::runtime
