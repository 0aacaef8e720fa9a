#include "io/output_files.h"

#include <algorithm>
#include <array>
#include <set>

namespace wgml::io {
namespace {

bool is_control(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }

bool is_portable(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

std::string ascii_upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](char c) { return c >= 'a' && c <= 'z' ? char(c - 'a' + 'A') : c; });
  return s;
}

// Windows opens a device instead of a file when the part before the first '.' is one of these.
bool is_windows_device_name(const std::string& stem) {
  static const std::array<std::string_view, 4> kPlain = {"CON", "PRN", "AUX", "NUL"};
  const std::string upper = ascii_upper(stem.substr(0, stem.find('.')));
  if (std::find(kPlain.begin(), kPlain.end(), upper) != kPlain.end()) return true;
  const bool numbered_port = upper.size() == 4 && (upper.starts_with("COM") || upper.starts_with("LPT"));
  return numbered_port && upper[3] >= '0' && upper[3] <= '9';
}

}  // namespace

std::string output_file_stem(std::string_view name) {
  std::string kept;
  for (char c : name)
    if (!is_control(c)) kept += c;
  if (kept.size() > kMaxOutputStem) kept.resize(kMaxOutputStem);
  std::string stem = kept;
  for (size_t i = 0; i < kept.size(); ++i) {
    const bool lone_inner_dot = kept[i] == '.' && i != 0 && i + 1 != kept.size() && kept[i - 1] != '.';
    if (!is_portable(kept[i]) || (kept[i] == '.' && !lone_inner_dot)) stem[i] = '_';
  }
  if (stem.empty()) return "output";
  if (is_windows_device_name(stem)) stem.insert(0, "_");
  return stem;
}

std::vector<std::string> output_file_stems(const std::vector<std::string>& names) {
  std::vector<std::string> stems(names.size());
  std::set<std::string> taken;  // upper-cased: Windows and macOS file systems ignore case
  auto claim = [&](size_t i) {
    const std::string base = output_file_stem(names[i]);
    std::string stem = base;
    for (int n = 2; taken.count(ascii_upper(stem)); ++n) stem = base + "-" + std::to_string(n);
    taken.insert(ascii_upper(stem));
    stems[i] = std::move(stem);
  };
  // Names that are already plain file names claim theirs first, so a renamed name never takes a
  // plain one's file ("a/b" then "a_b": "a_b" keeps "a_b").
  for (size_t i = 0; i < names.size(); ++i)
    if (output_file_stem(names[i]) == names[i]) claim(i);
  for (size_t i = 0; i < names.size(); ++i)
    if (stems[i].empty()) claim(i);
  return stems;
}

}  // namespace wgml::io
