#pragma once
// The file names `wgml run --output-dir` writes outputs under. An output's name comes from the
// model file, which is untrusted: it may hold separators ("gpu_0/softmax_1", "../../x"), a leading
// dot, control characters or characters Windows refuses. One rule maps every name to a plain file
// name that stays inside the output folder (docs/reliability.md):
//
//   1. control characters (bytes 0x00-0x1F and 0x7F) are dropped;
//   2. the name is cut to kMaxOutputStem bytes;
//   3. every byte outside [A-Za-z0-9._-] becomes '_' (separators, spaces, <>:"|?*, non-ASCII bytes);
//   4. a '.' that is first, last or follows another '.' becomes '_' (no hidden files, no "..");
//   5. an empty result becomes "output"; a stem whose part before its first '.' is a Windows device
//      name (CON, NUL, COM1, ...) gets a leading '_';
//   6. stems are claimed first by the names that are already plain file names (they keep them), then
//      by the others in order; a stem already taken (compared ignoring ASCII case) gets the first
//      free suffix "-2", "-3", ...
//
// The file is STEM.npy, or STEM.stepK.npy for the K-th of several calls. A name already made of
// [A-Za-z0-9._-] with no leading, trailing or doubled dot keeps its own name.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace wgml::io {

inline constexpr size_t kMaxOutputStem = 100;

// The stem (rules 1-5) of one output name.
std::string output_file_stem(std::string_view name);

// The stems of all outputs in order (rules 1-6): distinct even ignoring case.
std::vector<std::string> output_file_stems(const std::vector<std::string>& names);

}  // namespace wgml::io
