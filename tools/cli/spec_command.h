#pragma once
// `wgml spec check FILE` (validate a kernel spec and its templates; print variants and passes)
// and `wgml spec render FILE --shapes ... --dtypes ... --attrs ...` (the chosen variant, derived
// values, bindings, params, dispatch and rendered WGSL of one request).
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "kernel/engine.h"

namespace wgml::cli {

class SpecCommands {
 public:
  // Adds the `spec` subcommand group to `app`.
  explicit SpecCommands(CLI::App& app);
  bool selected() const { return static_cast<bool>(*group_); }
  // Throws wgml::Error on an invalid spec or request.
  int run() const;

 private:
  int check() const;
  int render() const;
  std::vector<std::shared_ptr<const kernel::KernelSpec>> load(kernel::Engine& engine) const;
  void print_spec(const kernel::KernelSpec& spec) const;

  CLI::App* group_;
  CLI::App* check_;
  CLI::App* render_;
  std::string file_;
  std::string op_;
  std::string templates_;
  std::vector<std::string> shapes_, dtypes_, attrs_, values_, tunables_, aliases_;
  std::string tunables_file_;
  bool no_f16_ = false;
  bool subgroups_ = false;
  uint32_t max_workgroups_ = 65535;
};

}  // namespace wgml::cli
