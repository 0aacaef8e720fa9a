#include "runtime/native_ops.h"

#include <limits>

#include "core/elements.h"

namespace wgml::runtime {
namespace {

int32_t checked_int32(int64_t v, const char* op) {
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
    fail(std::string(op) + ": result " + std::to_string(v) + " overflows int32");
  return static_cast<int32_t>(v);
}

int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  const int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

template <class N, class F>
void int_op(const N& n, ExecContext& ctx, const char* name, F f) {
  const int64_t a = ctx.resolve(n.a), b = ctx.resolve(n.b);
  ctx.set_value(n.out, checked_int32(f(a, b), name));
}

int64_t nonzero_divisor(int64_t b, const char* op) {
  if (b == 0) fail(std::string(op) + ": division by zero");
  return b;
}

struct NativeOps {
  ExecContext& ctx;
  void operator()(const ir::NoopNode&) {}
  void operator()(const ir::IdCopyNode& n) { ctx.set_tensor(n.out, ctx.tensor(n.x)); }
  void operator()(const ir::AddIntNode& n) {
    int_op(n, ctx, "AddInt", [](int64_t a, int64_t b) { return a + b; });
  }
  void operator()(const ir::SubtractIntNode& n) {
    int_op(n, ctx, "SubtractInt", [](int64_t a, int64_t b) { return a - b; });
  }
  void operator()(const ir::MultiplyIntNode& n) {
    int_op(n, ctx, "MultiplyInt", [](int64_t a, int64_t b) { return a * b; });
  }
  void operator()(const ir::FloorDivideIntNode& n) {
    int_op(n, ctx, "FloorDivideInt", [](int64_t a, int64_t b) { return floor_div(a, nonzero_divisor(b, "FloorDivideInt")); });
  }
  void operator()(const ir::ModIntNode& n) {
    int_op(n, ctx, "ModInt", [](int64_t a, int64_t b) { return floor_mod(a, nonzero_divisor(b, "ModInt")); });
  }
  void operator()(const ir::SymSizeNode& n) {
    const Tensor& a = ctx.tensor(n.a);
    ctx.set_value(n.out, checked_int32(a.dim(normalize_axis(n.dim, a.rank())), "SymSize"));
  }
  void operator()(const ir::ItemIntNode& n) {
    const Tensor& x = ctx.tensor(n.x);
    if (x.numel() < 1) fail("ItemInt: the tensor is empty");
    // MLX reads item<int>: for 64-bit integers that is the low 32 bits.
    const int64_t v = load_as_int64(x.dtype(), x.data(), 0);
    ctx.set_value(n.out, x.dtype() == DType::Int64 ? static_cast<int32_t>(static_cast<uint32_t>(v)) : clamp_to_int32(v));
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
