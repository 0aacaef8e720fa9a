#pragma once
// Nodes every backend shares: no-ops, slot copies, and int32 value-slot arithmetic and queries.
#include "core/layout.h"
#include "runtime/exec_context.h"

namespace wgml::runtime {

bool is_native_op(size_t union_id);
void run_native_op(const ir::Node& node, ExecContext& ctx);

}  // namespace wgml::runtime
