#pragma once
// ExecuTorch .pte container: a Program FlatBuffer (identifier "ET12"), an optional extended header
// ("eh00") right after the identifier, and data segments after the FlatBuffer. wgml reads the
// MLXBackend delegate's processed bytes and the program's named data; see docs/pte-format.md.
#include <string>

#include "io/bytes.h"
#include "ir/named_data.h"

namespace wgml::frontend {

inline constexpr const char* kMlxBackendId = "MLXBackend";

struct PteContents {
  io::ByteView payload;      // the MLXBackend delegate's processed data (an MLX0 payload)
  std::string payload_name;  // "<path>: plan 'forward', delegate 0 (MLXBackend)"
  ir::NamedData named_data;
};

bool looks_like_pte(const io::ByteView& file);

// Verifies the container and extracts the MLX delegate and named data. Throws wgml::Error.
PteContents read_pte(const io::ByteView& file, const std::string& path);

}  // namespace wgml::frontend
