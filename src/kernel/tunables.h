#pragma once
// Tunable overrides. A spec gives each tunable a default; an adapter file (JSON, one per GPU
// adapter) and per-run settings (`--tunable Op.NAME=VALUE`) override it, per-run first:
//   adapter file: { "TensorScatter": { "WORKGROUP_SIZE": 128 } }
// An op may be named plainly (TensorScatter) or with its domain (ai.onnx.TensorScatter); the
// qualified name wins.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace wgml::kernel {

struct KernelSpec;

class TunableOverrides {
 public:
  // "Op.NAME=VALUE" (VALUE an integer). Throws wgml::Error(InvalidArgument) on another form.
  void add_run_override(const std::string& setting);
  // Throws wgml::Error(Io) when the file cannot be read, InvalidFormat on another structure.
  void load_adapter_file(const std::string& path);

  // The value of each of `spec`'s tunables. Throws wgml::Error(InvalidArgument) when an override
  // for this op names a tunable the spec lacks or lies outside the tunable's [min, max].
  std::map<std::string, int64_t> resolve(const KernelSpec& spec) const;

  // Every op an override names, as written ("Add", "ai.onnx.TensorScatter").
  std::vector<std::string> named_ops() const;

 private:
  // op name -> tunable -> (value, where it came from)
  using Layer = std::map<std::string, std::map<std::string, std::pair<int64_t, std::string>>>;
  static std::optional<std::pair<int64_t, std::string>> lookup(const Layer& layer, const KernelSpec& spec,
                                                               const std::string& tunable);
  static void check_names(const Layer& layer, const KernelSpec& spec);
  Layer run_, adapter_;
};

}  // namespace wgml::kernel
