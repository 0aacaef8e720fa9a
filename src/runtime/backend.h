#pragma once
// A backend executes IR nodes. It registers one kernel per node type it supports; the executor
// handles control flow and value-slot arithmetic itself, identically for every backend.
#include <array>
#include <string_view>

#include "ir/nodes.h"
#include "runtime/exec_context.h"

namespace wgml::runtime {

using KernelFn = void (*)(const ir::Node&, ExecContext&);

class KernelTable {
 public:
  template <class N, void (*F)(const N&, ExecContext&)>
  void add() {
    table_[N::kUnionId] = [](const ir::Node& n, ExecContext& ctx) { F(std::get<N>(n), ctx); };
  }
  KernelFn find(size_t union_id) const {
    return union_id < table_.size() ? table_[union_id] : nullptr;
  }

 private:
  std::array<KernelFn, ir::kMaxNodeUnionId + 1> table_{};
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  virtual const KernelTable& kernels() const = 0;
};

}  // namespace wgml::runtime
