#include "kernel/family.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "wgml/error.h"

namespace wgml::kernel {
namespace {

using Json = nlohmann::ordered_json;

// The keys of a single spec that an op of a family may also give (merged into the family's).
constexpr std::array<std::string_view, 17> kSpecKeys = {"description",
                                                        "sinceVersion",
                                                        "inputs",
                                                        "outputs",
                                                        "attributes",
                                                        "attributeConstraints",
                                                        "typeConstraints",
                                                        "tunables",
                                                        "when",
                                                        "derive",
                                                        "bindings",
                                                        "variants",
                                                        "view",
                                                        "promote",
                                                        "widen",
                                                        "atLeastFloat",
                                                        "castLike"};

// The keys that only a family file has.
constexpr std::array<std::string_view, 3> kFamilyKeys = {"family", "typeSets", "ops"};

bool is_spec_key(const std::string& key) { return std::find(kSpecKeys.begin(), kSpecKeys.end(), key) != kSpecKeys.end(); }
bool is_family_key(const std::string& key) { return std::find(kFamilyKeys.begin(), kFamilyKeys.end(), key) != kFamilyKeys.end(); }

class FamilyExpander {
 public:
  FamilyExpander(const Json& root, const std::string& file) : root_(root), file_(file) {}

  std::vector<ExpandedSpec> run() {
    expect(root_.at("family").is_string(), "family", "a string");
    expect(root_.contains("ops") && root_.at("ops").is_object() && !root_.at("ops").empty(), "ops",
           "a non-empty object of op name: op entry");
    if (root_.contains("name")) fail("name", "a family names its ops in \"ops\", not with \"name\"");
    Json base = Json::object();
    for (const auto& [key, value] : root_.items())
      if (!is_family_key(key)) base[key] = value;
    std::vector<ExpandedSpec> out;
    for (const auto& [op, entry] : root_.at("ops").items()) out.push_back({file_ + "#" + op, expand_op(base, op, entry)});
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw Error(ErrorCode::InvalidFormat, file_ + ": " + path + ": " + what);
  }
  void expect(bool ok, const std::string& path, const char* expected) const {
    if (!ok) fail(path, std::string("expected ") + expected);
  }

  Json expand_op(const Json& base, const std::string& op, const Json& entry) const {
    const std::string path = "ops." + op;
    expect(entry.is_object(), path, "an object (spec keys to merge, values of the family's derived names)");
    Json spec = base;
    spec["name"] = op;
    for (const auto& [key, value] : entry.items()) {
      if (is_spec_key(key)) {
        merge(spec[key], value, key);
      } else if (spec.contains("derive") && spec.at("derive").contains(key)) {
        // A literal of the op (its WGSL expression, helper list, ...) as a constant expression.
        spec["derive"][key] = value.dump();
      } else {
        fail(path + "." + key, "'" + key + "' is neither a spec key nor a derived value the family declares");
      }
    }
    if (spec.contains("derive"))
      for (const auto& [key, value] : spec.at("derive").items())
        if (value.is_null()) fail(path, "the family leaves '" + key + "' to each op, and this op does not set it");
    resolve_type_sets(spec, path);
    return spec;
  }

  // Objects merge key by key; `when` lists add the op's conditions to the family's; anything else
  // the op gives replaces the family's value.
  static void merge(Json& into, const Json& from, const std::string& key) {
    if (into.is_object() && from.is_object()) {
      for (const auto& [k, v] : from.items()) merge(into[k], v, k);
    } else if (key == "when" && into.is_array() && from.is_array()) {
      into.insert(into.end(), from.begin(), from.end());
    } else {
      into = from;
    }
  }

  // typeConstraints.T may name one of the family's typeSets instead of listing dtypes.
  void resolve_type_sets(Json& spec, const std::string& path) const {
    if (!spec.contains("typeConstraints") || !spec.at("typeConstraints").is_object()) return;
    for (auto& [var, list] : spec.at("typeConstraints").items()) {
      if (!list.is_string()) continue;
      const std::string set = list.get<std::string>();
      if (!root_.contains("typeSets") || !root_.at("typeSets").contains(set))
        fail(path + ".typeConstraints." + var, "'" + set + "' is not one of the family's typeSets");
      list = root_.at("typeSets").at(set);
    }
  }

  const Json& root_;
  const std::string& file_;
};

}  // namespace

std::vector<ExpandedSpec> expand_family(const Json& root, const std::string& file) {
  if (!root.is_object() || !root.contains("family")) return {{file, root}};
  return FamilyExpander(root, file).run();
}

}  // namespace wgml::kernel
