#pragma once
// Text from a model file (names, op types, producer strings) on its way to a terminal, a log or a
// Python str: such bytes may hold terminal escape sequences (ESC [ 2 J clears the screen) or not be
// UTF-8 at all. wgml::Error escapes its whole message this way, the CLI's printers each name.
#include <string>
#include <string_view>

namespace wgml {

enum class Newlines { Escape, Keep };

// `text` with every control character and every byte that is not part of well-formed UTF-8 written
// as \xNN (two lowercase hex digits per byte): ESC becomes "\x1b", a lone byte 0xff "\xff", the C1
// control U+009B (which some terminals take as CSI) "\xc2\x9b". Control characters are C0
// (0x00-0x1F), DEL (0x7F) and C1 (U+0080-U+009F); Newlines::Keep leaves '\n' as it is, for
// messages of several lines. The result is valid UTF-8, and printable text (every other character,
// a backslash included) comes back unchanged: escaping twice is escaping once.
std::string printable(std::string_view text, Newlines newlines = Newlines::Escape);

// `text` as valid UTF-8: each byte that is not part of a well-formed sequence becomes U+FFFD. For
// JSON, which must be UTF-8 and escapes control characters itself.
std::string valid_utf8(std::string_view text);

}  // namespace wgml
