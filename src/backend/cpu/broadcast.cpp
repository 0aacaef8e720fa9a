#include "backend/cpu/broadcast.h"

#include <cstring>

#include "core/layout.h"
#include "runtime/exec_context.h"

namespace wgml::backend::cpu {
namespace {

std::string shape_string(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

int rank_of_kind(DType t) {
  // Order used for same-kind promotion: wider wins.
  switch (t) {
    case DType::Bool:
      return 0;
    case DType::UInt8:
    case DType::Int8:
      return 1;
    case DType::Int16:
    case DType::Float16:
    case DType::BFloat16:
      return 2;
    case DType::UInt32:
    case DType::Int32:
    case DType::Float32:
      return 3;
    case DType::Int64:
    case DType::Float64:
      return 4;
  }
  return 0;
}

}  // namespace

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      runtime::fail("shapes " + shape_string(a) + " and " + shape_string(b) + " cannot be broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

BroadcastIndex::BroadcastIndex(const Shape& input, const Shape& output)
    : out_(output), strides_(output.size(), 0), index_(output.size(), 0) {
  const auto in_strides = contiguous_strides(input);
  const size_t lead = output.size() - input.size();
  for (size_t i = 0; i < input.size(); ++i) strides_[lead + i] = input[i] == 1 && output[lead + i] != 1 ? 0 : in_strides[i];
}

void BroadcastIndex::next() {
  for (int d = static_cast<int>(out_.size()) - 1; d >= 0; --d) {
    offset_ += strides_[d];
    if (++index_[d] < out_[d]) return;
    offset_ -= strides_[d] * index_[d];
    index_[d] = 0;
  }
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  const bool fa = is_floating(a), fb = is_floating(b);
  if (fa && fb) {
    if ((a == DType::Float16 && b == DType::BFloat16) || (a == DType::BFloat16 && b == DType::Float16)) return DType::Float32;
    return rank_of_kind(a) >= rank_of_kind(b) ? a : b;
  }
  if (fa) return a;
  if (fb) return b;
  const bool sa = is_signed_integral(a), sb = is_signed_integral(b);
  if (sa == sb) return rank_of_kind(a) >= rank_of_kind(b) ? a : b;
  // Mixed signedness: the signed type must hold every value of the unsigned one.
  const DType u = sa ? b : a, s = sa ? a : b;
  const size_t need = dtype_size(u) * 2;
  if (dtype_size(s) >= need) return s;
  switch (need) {
    case 2:
      return DType::Int16;
    case 4:
      return DType::Int32;
    default:
      return DType::Int64;
  }
}

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  if (broadcast_shapes(x.shape(), shape) != shape)
    runtime::fail("cannot broadcast shape " + shape_string(x.shape()) + " to " + shape_string(shape));
  Tensor out(x.dtype(), shape);
  const size_t elem = dtype_size(x.dtype());
  BroadcastIndex idx(x.shape(), shape);
  uint8_t* dst = out.mutable_data();
  for (int64_t i = 0; i < out.numel(); ++i, idx.next()) std::memcpy(dst + i * elem, x.data() + idx.offset() * elem, elem);
  return out;
}

}  // namespace wgml::backend::cpu
