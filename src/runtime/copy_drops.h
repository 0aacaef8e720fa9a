#pragma once
// A tensor used on both sides of a WebGPU run (a GPU result a CPU fallback read, a host result a
// kernel uploaded) holds its bytes twice. When every later reader of a temp in its chain reads on
// one side, the copy on the other is dead: the executor drops it after the read that made it so.
#include <cstdint>
#include <vector>

#include "ir/program.h"
#include "runtime/backend.h"

namespace wgml::runtime {

struct CopyDrop {
  ir::Tid tensor;
  ReadSide keep;  // the side every later reader reads on
};

// drops[chain][instruction]: the copies dead once that instruction has run. Temps only, and only
// where every later reader in the chain (up to the next write of the slot) reads on the same side.
std::vector<std::vector<std::vector<CopyDrop>>> plan_copy_drops(const ir::Program& program, const Backend& backend);

// Drops the copy of `t` that `keep` says is dead, when `t` holds both, is at least `min_bytes`, and
// nothing else shares its storage (a view's readers were not planned with it).
void drop_dead_copy(const Tensor& t, ReadSide keep, size_t min_bytes);

}  // namespace wgml::runtime
