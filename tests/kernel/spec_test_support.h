#pragma once
// Helpers for the spec engine tests: a scratch template directory, and the error text of a call.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "wgml/error.h"

namespace wgml::kernel::testing {

inline const std::string kKernelsDir = std::string(WGML_SOURCE_DIR) + "/kernels";
// A byte-identical copy of the spec engine's seed (docs/fixtures.md), so a clone alone passes.
inline const std::string kSeedSpec = std::string(WGML_SOURCE_DIR) + "/tests/fixtures/seeds/TensorScatter.json";

// A temporary directory holding the shared snippets of kernels/wgsl/common plus test templates.
class ScratchTemplates {
 public:
  explicit ScratchTemplates(const std::string& tag)
      : dir_(std::filesystem::temp_directory_path() / ("wgml_" + tag + "_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir_);
    std::filesystem::copy(kKernelsDir + "/wgsl/common", dir_ / "common", std::filesystem::copy_options::recursive);
  }
  ~ScratchTemplates() { std::filesystem::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) const { std::ofstream(dir_ / name) << text; }
  std::string dir() const { return dir_.string(); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

// The message of the wgml::Error `f` throws, checking its code; a test failure when none is thrown.
inline std::string error_of(const std::function<void()>& f, ErrorCode code) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no wgml::Error was thrown";
  return "";
}

}  // namespace wgml::kernel::testing
