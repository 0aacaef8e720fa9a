#include "core/printable.h"

#include <cstdint>

namespace wgml {
namespace {

// The length of the well-formed UTF-8 sequence starting at text[at] (Unicode's table 3-7: no
// overlong forms, no surrogates, nothing past U+10FFFF), or 0 where text[at] starts none.
size_t utf8_sequence_length(std::string_view text, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[at + i]); };
  const uint8_t lead = byte(0);
  if (lead < 0x80) return 1;
  size_t length = 0;
  uint8_t second_min = 0x80, second_max = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) second_min = 0xa0;
    if (lead == 0xed) second_max = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) second_min = 0x90;
    if (lead == 0xf4) second_max = 0x8f;
  } else {
    return 0;
  }
  if (text.size() - at < length) return 0;
  if (byte(1) < second_min || byte(1) > second_max) return 0;
  for (size_t i = 2; i < length; ++i)
    if (byte(i) < 0x80 || byte(i) > 0xbf) return 0;
  return length;
}

bool is_control(std::string_view sequence, Newlines newlines) {
  const auto lead = static_cast<uint8_t>(sequence[0]);
  if (lead == '\n') return newlines == Newlines::Escape;
  if (lead < 0x20 || lead == 0x7f) return true;
  return lead == 0xc2 && static_cast<uint8_t>(sequence[1]) <= 0x9f;  // C1: U+0080-U+009F
}

void append_escaped(std::string& out, std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (const char c : bytes) {
    const auto byte = static_cast<uint8_t>(c);
    out += "\\x";
    out += kHex[byte >> 4];
    out += kHex[byte & 0xf];
  }
}

}  // namespace

std::string printable(std::string_view text, Newlines newlines) {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    const size_t length = utf8_sequence_length(text, at);
    const std::string_view sequence = text.substr(at, length ? length : 1);
    if (length == 0 || is_control(sequence, newlines))
      append_escaped(out, sequence);
    else
      out += sequence;
    at += sequence.size();
  }
  return out;
}

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    const size_t length = utf8_sequence_length(text, at);
    if (length == 0) {
      out += "\xef\xbf\xbd";  // U+FFFD
      ++at;
      continue;
    }
    out += text.substr(at, length);
    at += length;
  }
  return out;
}

}  // namespace wgml
