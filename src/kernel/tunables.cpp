#include "kernel/tunables.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "kernel/spec.h"
#include "wgml/error.h"

namespace wgml::kernel {

void TunableOverrides::add_run_override(const std::string& setting) {
  const size_t eq = setting.find('=');
  const size_t dot = setting.rfind('.', eq);
  const auto bad = [&](const std::string& why) {
    throw Error(ErrorCode::InvalidArgument, "--tunable " + setting + ": " + why + " (expected Op.NAME=VALUE)");
  };
  if (eq == std::string::npos || dot == std::string::npos || dot == 0 || dot + 1 == eq) bad("malformed");
  const std::string value = setting.substr(eq + 1);
  size_t used = 0;
  int64_t parsed = 0;
  try {
    parsed = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (value.empty() || used != value.size()) bad("the value must be an integer");
  run_[setting.substr(0, dot)][setting.substr(dot + 1, eq - dot - 1)] = {parsed, "--tunable " + setting};
}

void TunableOverrides::load_adapter_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorCode::Io, path + ": cannot open the tunables file");
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number such as 1E400
    throw Error(ErrorCode::InvalidFormat, path + ": not valid JSON: " + e.what());
  }
  if (!root.is_object()) throw Error(ErrorCode::InvalidFormat, path + ": expected an object of Op: {NAME: value}");
  for (const auto& [op, tunables] : root.items()) {
    if (!tunables.is_object()) throw Error(ErrorCode::InvalidFormat, path + ": " + op + ": expected an object of NAME: value");
    for (const auto& [name, value] : tunables.items()) {
      if (!value.is_number_integer())
        throw Error(ErrorCode::InvalidFormat, path + ": " + op + "." + name + ": expected an integer");
      adapter_[op][name] = {value.get<int64_t>(), path};
    }
  }
}

std::optional<std::pair<int64_t, std::string>> TunableOverrides::lookup(const Layer& layer, const KernelSpec& spec,
                                                                        const std::string& tunable) {
  for (const std::string& op : {spec.qualified_name(), spec.name}) {
    const auto it = layer.find(op);
    if (it == layer.end()) continue;
    const auto value = it->second.find(tunable);
    if (value != it->second.end()) return value->second;
  }
  return std::nullopt;
}

void TunableOverrides::check_names(const Layer& layer, const KernelSpec& spec) {
  for (const std::string& op : {spec.qualified_name(), spec.name}) {
    const auto it = layer.find(op);
    if (it == layer.end()) continue;
    for (const auto& [name, value] : it->second) {
      if (spec.tunable(name)) continue;
      std::string known;
      for (const auto& t : spec.tunables) known += (known.empty() ? "" : ", ") + t.name;
      throw Error(ErrorCode::InvalidArgument, value.second + ": " + spec.name + " has no tunable '" + name +
                                                  "' (it has: " + (known.empty() ? "none" : known) + ")");
    }
  }
}

std::vector<std::string> TunableOverrides::named_ops() const {
  std::vector<std::string> ops;
  for (const Layer* layer : {&run_, &adapter_})
    for (const auto& entry : *layer) ops.push_back(entry.first);
  return ops;
}

std::map<std::string, int64_t> TunableOverrides::resolve(const KernelSpec& spec) const {
  check_names(run_, spec);
  check_names(adapter_, spec);
  std::map<std::string, int64_t> values;
  for (const TunableSpec& t : spec.tunables) {
    auto chosen = lookup(run_, spec, t.name);
    if (!chosen) chosen = lookup(adapter_, spec, t.name);
    if (chosen && ((t.min && chosen->first < *t.min) || (t.max && chosen->first > *t.max)))
      throw Error(ErrorCode::InvalidArgument,
                  chosen->second + ": " + spec.name + "." + t.name + " = " + std::to_string(chosen->first) + " lies outside [" +
                      (t.min ? std::to_string(*t.min) : "-inf") + ", " + (t.max ? std::to_string(*t.max) : "inf") + "]");
    values[t.name] = chosen ? chosen->first : t.default_value;
  }
  return values;
}

}  // namespace wgml::kernel
