#pragma once
// The MLX-delegate payload: 4 zero bytes, "MLX0", u64 LE data-segment offset, u64 LE data-segment
// size, then the MLXGraph FlatBuffer (no file identifier) up to the data segment.
#include <string>

#include "io/bytes.h"
#include "ir/program.h"

namespace wgml::ir {

inline constexpr size_t kPayloadHeaderSize = 24;

// True when the bytes start with the payload magic (used to sniff standalone .mlxg files).
bool looks_like_payload(const io::ByteView& blob);

// Verifies and decodes a payload, then validates the program. `source` names the payload in
// every error ("model.pte: MLXBackend delegate"). Throws wgml::Error.
Program read_payload(const io::ByteView& blob, const std::string& source);

}  // namespace wgml::ir
