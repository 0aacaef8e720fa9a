#pragma once
// The load-time half of the memory limit (core/memory_budget.h): a tensor whose declared shape is
// static is refused before anything runs when its bytes overflow or exceed the limit. Tensors with
// dynamic dims are checked when they are allocated.
#include <cstdint>

#include "ir/model.h"

namespace wgml::runtime {

// Throws ErrorCode::ResourceLimit naming the tensor, the instruction that writes it, its shape and
// its size. Constants are not checked: their bytes are the file's, mapped, not allocated. The
// executor's slot tables (one entry per declared slot) are checked the same way.
void check_declared_tensor_sizes(const ir::Model& model, uint64_t limit_bytes);

}  // namespace wgml::runtime
