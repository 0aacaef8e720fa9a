#include "ir/model.h"

#include "ir/validate.h"
#include "wgml/error.h"

namespace wgml::ir {

std::vector<io::ByteView> bind_constants(const Program& program, const NamedData& named, const std::string& source) {
  const std::vector<bool> from_init = constants_written_by_init(program);
  std::vector<io::ByteView> out(program.num_constant_tensors);
  const auto names = program.named_slots_by_tensor();
  for (uint32_t tid = 0; tid < program.num_constant_tensors; ++tid) {
    const NamedSlot* slot = names.at(tid);
    const std::string where = source + ": constant tensor " + std::to_string(tid);
    auto it = named.find(slot->name);
    if (it == named.end())
      throw Error(ErrorCode::InvalidProgram, where + ": expected named data '" + slot->name + "', found none");
    const TensorMeta& meta = *program.meta(Tid{tid});
    const auto numel = meta.static_numel();
    if (!numel) throw Error(ErrorCode::InvalidProgram, where + ": its static shape overflows 64 bits");
    const uint64_t expected = *numel * dtype_size(meta.dtype);
    if (!from_init[tid] && it->second.size != expected)
      throw Error(ErrorCode::InvalidProgram, where + " ('" + slot->name + "'): expected " + std::to_string(expected) +
                                                 " bytes for its " + std::string(dtype_name(meta.dtype)) + " metadata, found " +
                                                 std::to_string(it->second.size));
    out[tid] = it->second;
  }
  return out;
}

}  // namespace wgml::ir
