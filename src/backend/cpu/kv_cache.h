#pragma once
// The off-graph KV cache of UpdateAndAttend (ExecuTorch keeps it outside the program), held in the
// executor's persistent state: per layer, a full history [1, H, S, D] of K and of V, of which a
// step of T tokens at `position` writes [position, position + T) and attends over [0, position + T).
// The CPU reference and the WebGPU backend share it, so a step that falls back to the CPU continues
// the history the GPU wrote (its tensors are read back as needed), and the other way round.
#include <cstdint>
#include <map>

#include "wgml/tensor.h"

namespace wgml::backend::cpu {

struct KvCache {
  struct Layer {
    Tensor k, v;  // [1, H, S, D]; S may exceed what was written (rows not written are zero)
  };
  std::map<int32_t, Layer> layers;
};

}  // namespace wgml::backend::cpu
