#pragma once
// Slot references and the tagged scalar-or-slot operands of the MLX-delegate IR, as plain C++.
#include <cstdint>

namespace wgml::ir {

struct Tid {
  uint32_t idx = 0;
  friend bool operator==(Tid a, Tid b) { return a.idx == b.idx; }
};

struct Vid {
  uint32_t idx = 0;
  friend bool operator==(Vid a, Vid b) { return a.idx == b.idx; }
};

struct IntOrVid {
  int64_t literal = 0;
  Vid vid{};
  bool is_vid = false;
};

struct FloatOrVid {
  double literal = 0;
  Vid vid{};
  bool is_vid = false;
};

struct VidOrTid {
  Vid vid{};
  Tid tid{};
  bool is_vid = false;
};

struct IntOrVidOrTid {
  enum Kind : uint8_t { Literal = 0, Value = 1, Tensor = 2 };
  int64_t literal = 0;
  Vid vid{};
  Tid tid{};
  uint8_t kind = Literal;
};

// How a node uses a slot field: validation and liveness analysis read this.
enum class FieldRole { Read, Write, ReadWrite };

}  // namespace wgml::ir
