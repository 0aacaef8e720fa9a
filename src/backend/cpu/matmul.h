#pragma once
// Batched matrix product with broadcast batch dims, accumulated in double (the oracle's choice).
#include "wgml/tensor.h"

namespace wgml::backend::cpu {

// a [..., M, K] @ b [..., K, N] -> [..., M, N] in `out_type`. 1-D operands are not promoted.
Tensor matmul(const Tensor& a, const Tensor& b, DType out_type);

}  // namespace wgml::backend::cpu
