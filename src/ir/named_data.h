#pragma once
// Named data: constant bytes looked up by key ("<4 hex>/<name>"), from a .pte's named_data
// segments or a .safetensors file.
#include <map>
#include <string>

#include "io/bytes.h"

namespace wgml::ir {

using NamedData = std::map<std::string, io::ByteView, std::less<>>;

}  // namespace wgml::ir
