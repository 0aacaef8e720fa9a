#pragma once
// .safetensors: u64 LE header length, a JSON header {key: {dtype, shape, data_offsets}}, then data.
// Used to supply constants to a standalone MLX payload (.mlxg), keyed like a .pte's named data.
#include <string>

#include "ir/named_data.h"

namespace wgml::frontend {

ir::NamedData read_safetensors(const io::ByteView& file, const std::string& path);

}  // namespace wgml::frontend
