#include "backend/cpu/working_memory.h"

namespace wgml::backend::cpu {

WorkingDoubles working_doubles(const Shape& shape, double fill) {
  MemoryCharge charge(tensor_bytes(DType::Float64, shape), DType::Float64, shape);  // refuses before allocating
  return {std::move(charge), std::vector<double>(static_cast<size_t>(shape_numel(shape)), fill)};
}

}  // namespace wgml::backend::cpu
