#include "kernel/spec.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "kernel/family.h"
#include "kernel/storage.h"
#include "wgml/error.h"

namespace wgml::kernel {

using Json = nlohmann::ordered_json;

namespace {

std::string join_names(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& n : names) text += (text.empty() ? "" : ", ") + n;
  return text.empty() ? "none" : text;
}

const char* json_kind(const Json& j) {
  if (j.is_object()) return "an object";
  if (j.is_array()) return "a list";
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "a bool";
  if (j.is_number()) return "a number";
  return "null";
}

bool is_identifier(const std::string& s) {
  return !s.empty() && !std::isdigit(static_cast<unsigned char>(s[0])) &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// Reads JSON values at known paths and fails with the file and the path.
class Reader {
 public:
  Reader(const std::string& file, ExprCache& exprs) : file_(file), exprs_(exprs) {}

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw Error(ErrorCode::InvalidFormat, file_ + ": " + (path.empty() ? "(top level)" : path) + ": " + what);
  }

  void expect(const Json& j, bool ok, const std::string& path, const char* expected) const {
    if (!ok) fail(path, std::string("expected ") + expected + ", found " + json_kind(j));
  }

  // Checks that `j` is an object whose keys are all in `allowed` and include `required`.
  void keys(const Json& j, const std::string& path, std::initializer_list<const char*> allowed,
            std::initializer_list<const char*> required = {}) const {
    expect(j, j.is_object(), path, "an object");
    for (const auto& item : j.items()) {
      const std::string& key = item.key();
      if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return key == a; })) {
        std::vector<std::string> names(allowed.begin(), allowed.end());
        fail(child(path, key), "unknown key '" + key + "' (allowed: " + join_names(names) + ")");
      }
    }
    for (const char* key : required)
      if (!j.contains(key)) fail(path, std::string("missing required key '") + key + "'");
  }

  static std::string child(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }
  static std::string item(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

  std::string string(const Json& j, const std::string& path) const {
    expect(j, j.is_string(), path, "a string");
    return j.get<std::string>();
  }
  std::string string_or(const Json& object, const char* key, const std::string& path, std::string fallback) const {
    return object.contains(key) ? string(object.at(key), child(path, key)) : fallback;
  }
  int64_t integer(const Json& j, const std::string& path) const {
    expect(j, j.is_number_integer(), path, "an integer");
    return j.get<int64_t>();
  }
  bool boolean(const Json& j, const std::string& path) const {
    expect(j, j.is_boolean(), path, "a bool");
    return j.get<bool>();
  }

  // An expression: a string to parse, or a number or bool literal.
  Expr expr(const Json& j, const std::string& path) const {
    expect(j, j.is_string() || j.is_number() || j.is_boolean(), path, "an expression (a string, number or bool)");
    const std::string text = j.is_string() ? j.get<std::string>() : j.dump();
    if (text.find_first_not_of(" \t") == std::string::npos) fail(path, "empty expression");
    return exprs_.parse(text, Origin{file_, path, 0});
  }

  std::vector<Expr> expr_list(const Json& j, const std::string& path) const {
    expect(j, j.is_array(), path, "a list of expressions");
    std::vector<Expr> out;
    for (size_t i = 0; i < j.size(); ++i) out.push_back(expr(j[i], item(path, i)));
    return out;
  }

  std::vector<DeriveEntry> derive(const Json& j, const std::string& path) const {
    expect(j, j.is_object(), path, "an object of name: expression");
    std::vector<DeriveEntry> out;
    for (const auto& [key, value] : j.items()) {
      if (!is_identifier(key)) fail(child(path, key), "a derived name must be an identifier");
      if (is_function(key)) fail(child(path, key), "'" + key + "' is a built-in function");
      out.push_back({key, expr(value, child(path, key))});
    }
    return out;
  }

  Value value(const Json& j, const std::string& path) const {
    if (j.is_boolean()) return Value(j.get<bool>());
    if (j.is_number_integer()) return Value(j.get<int64_t>());
    if (j.is_number()) return Value(j.get<double>());
    if (j.is_string()) return Value(j.get<std::string>());
    if (j.is_array()) {
      List items;
      for (size_t i = 0; i < j.size(); ++i) items.push_back(value(j[i], item(path, i)));
      return Value(std::move(items));
    }
    fail(path, std::string("expected a bool, number, string or list, found ") + json_kind(j));
  }

 private:
  const std::string& file_;
  ExprCache& exprs_;
};

class SpecParser {
 public:
  SpecParser(const std::string& file, const Json& root, ExprCache& exprs) : r_(file, exprs), root_(root) { spec_.file = file; }

  KernelSpec run() {
    if (root_.is_object() && root_.contains("view")) return view();
    r_.keys(
        root_, "",
        {"domain", "name", "sinceVersion", "description", "inputs", "outputs", "attributes", "attributeConstraints",
         "typeConstraints", "tunables", "when", "derive", "bindings", "variants", "promote", "widen", "atLeastFloat", "castLike"},
        {"domain", "name", "inputs", "outputs", "variants"});
    spec_.domain = r_.string(root_.at("domain"), "domain");
    spec_.name = r_.string(root_.at("name"), "name");
    if (root_.contains("sinceVersion")) spec_.since_version = r_.integer(root_.at("sinceVersion"), "sinceVersion");
    type_constraints();
    tensors("inputs", true, spec_.inputs);
    tensors("outputs", false, spec_.outputs);
    if (root_.contains("promote")) spec_.promote = cast_inputs("promote", 2);
    if (root_.contains("widen")) widen();
    if (root_.contains("castLike")) cast_like();
    if (root_.contains("atLeastFloat")) spec_.at_least_float = cast_inputs("atLeastFloat", 0);  // [] undoes a family's
    attributes();
    tunables();
    if (root_.contains("when")) spec_.when = r_.expr_list(root_.at("when"), "when");
    if (root_.contains("derive")) spec_.derive = r_.derive(root_.at("derive"), "derive");
    bindings();
    variants();
    check_names();
    return std::move(spec_);
  }

 private:
  // A node the backend runs as a view of its input (a new shape or strides over the same buffer):
  // no kernel, so nothing but its name.
  KernelSpec view() {
    r_.keys(root_, "", {"domain", "name", "description", "view"}, {"domain", "name", "view"});
    if (!r_.boolean(root_.at("view"), "view")) r_.fail("view", "a view spec says \"view\": true");
    spec_.domain = r_.string(root_.at("domain"), "domain");
    spec_.name = r_.string(root_.at("name"), "name");
    spec_.view = true;
    return std::move(spec_);
  }

  void type_constraints() {
    if (!root_.contains("typeConstraints")) return;
    const Json& j = root_.at("typeConstraints");
    r_.expect(j, j.is_object(), "typeConstraints", "an object");
    for (const auto& [var, list] : j.items()) {
      const std::string path = Reader::child("typeConstraints", var);
      r_.expect(list, list.is_array() && !list.empty(), path, "a non-empty list of dtype names");
      auto& types = spec_.type_constraints[var];
      for (size_t i = 0; i < list.size(); ++i) {
        const std::string name = r_.string(list[i], Reader::item(path, i));
        const auto dtype = dtype_from_name(name);
        if (!dtype) r_.fail(Reader::item(path, i), "unknown dtype '" + name + "'");
        types.push_back(*dtype);
      }
    }
  }

  std::vector<DType> allowed_dtypes(const TensorSpec& t) const {
    if (spec_.is_type_variable(t.dtype)) return spec_.type_constraints.at(t.dtype);
    return {*dtype_from_name(t.dtype)};
  }

  void tensors(const char* section, bool inputs, std::vector<TensorSpec>& out) {
    const Json& j = root_.at(section);
    // Ops that make a tensor from attributes alone (Full, ARange) have no inputs; every op has an output.
    r_.expect(j, j.is_object() && (inputs || !j.empty()), section,
              inputs ? "an object of tensors" : "a non-empty object of tensors");
    for (const auto& [name, body] : j.items()) {
      const std::string path = Reader::child(section, name);
      if (!is_identifier(name)) r_.fail(path, "a tensor name must be an identifier");
      if (spec_.tensor(name)) r_.fail(path, "'" + name + "' is already an input");
      if (inputs)
        r_.keys(
            body, path,
            {"onnx", "dtype", "rank", "shape", "optional", "list", "storage", "narrowing", "valueRange", "values", "description"},
            {"dtype"});
      else
        r_.keys(body, path,
                {"onnx", "dtype", "rank", "shape", "optional", "list", "dtypeAttribute", "dtypeExpr", "storage", "valueRange",
                 "description"},
                {"dtype"});
      TensorSpec t;
      t.name = name;
      t.path = path;
      t.onnx = r_.string_or(body, "onnx", path, name);
      t.dtype = r_.string(body.at("dtype"), Reader::child(path, "dtype"));
      if (!spec_.is_type_variable(t.dtype) && !dtype_from_name(t.dtype))
        r_.fail(Reader::child(path, "dtype"), "'" + t.dtype + "' is neither a type variable of typeConstraints nor a dtype name");
      if (body.contains("optional")) t.optional = r_.boolean(body.at("optional"), Reader::child(path, "optional"));
      if (body.contains("rank")) t.rank = r_.expr(body.at("rank"), Reader::child(path, "rank"));
      if (body.contains("shape")) t.shape = r_.expr(body.at("shape"), Reader::child(path, "shape"));
      t.storage = r_.string_or(body, "storage", path, "");
      t.narrowing = r_.string_or(body, "narrowing", path, "");
      if (!t.narrowing.empty() && t.storage.empty()) r_.fail(Reader::child(path, "narrowing"), "narrowing needs a storage");
      if (!t.narrowing.empty() && t.narrowing != "checked")
        r_.fail(Reader::child(path, "narrowing"), "the only narrowing is \"checked\", found \"" + t.narrowing + "\"");
      if (body.contains("valueRange")) value_range(body.at("valueRange"), Reader::child(path, "valueRange"), t);
      // A packed output is written a whole u32 word per invocation (a storage conversion); a
      // narrowing one would have nothing to check.
      if (!inputs && !t.storage.empty() && t.storage != "packed")
        r_.fail(Reader::child(path, "storage"), "an output's storage can only be \"packed\"");
      if (!t.storage.empty()) check_storage(t);
      if (body.contains("values")) host_values(body.at("values"), Reader::child(path, "values"), t);
      t.dtype_attribute = r_.string_or(body, "dtypeAttribute", path, "");
      if (body.contains("dtypeExpr")) t.dtype_expr = r_.expr(body.at("dtypeExpr"), Reader::child(path, "dtypeExpr"));
      if (body.contains("list"))
        add_list(body.at("list"), Reader::child(path, "list"), std::move(t), out);
      else
        out.push_back(std::move(t));
    }
  }

  // A list of up to `count` tensors binds as NAME0, NAME1, ...: the first as declared, the rest
  // optional, each remembering the list it belongs to (the IR maps list fields onto it).
  void add_list(const Json& j, const std::string& path, TensorSpec t, std::vector<TensorSpec>& out) {
    const int64_t count = r_.integer(j, path);
    if (count < 1 || count > 16) r_.fail(path, "a list holds 1 to 16 tensors, found " + std::to_string(count));
    t.list = t.name;
    for (int64_t k = 0; k < count; ++k) {
      TensorSpec member = t;
      member.name = t.name + std::to_string(k);
      member.optional = t.optional || k > 0;
      member.list_index = k;
      if (spec_.tensor(member.name)) r_.fail(path, "'" + member.name + "' is already a tensor of the spec");
      out.push_back(std::move(member));
    }
  }

  // An input read on the host has no GPU storage, so nothing of it may say how it is stored.
  void host_values(const Json& j, const std::string& path, TensorSpec& t) const {
    t.host_values = r_.boolean(j, path);
    if (t.host_values && (!t.storage.empty() || t.range_min))
      r_.fail(path, "an input read on the host (values) has no GPU storage, narrowing or valueRange");
  }

  void value_range(const Json& j, const std::string& path, TensorSpec& t) {
    r_.expect(j, j.is_array() && j.size() == 2, path, "a list [min, max] of two expressions");
    t.range_min = r_.expr(j[0], Reader::item(path, 0));
    t.range_max = r_.expr(j[1], Reader::item(path, 1));
  }

  void check_storage(const TensorSpec& t) {
    for (DType d : allowed_dtypes(t)) {
      try {
        declared_storage(d, t.storage, t.narrowing, t.name);
      } catch (const Error& e) {
        r_.fail(Reader::child(t.path, "storage"), e.what());
      }
    }
  }

  void attributes() {
    if (root_.contains("attributes")) {
      const Json& j = root_.at("attributes");
      r_.expect(j, j.is_object(), "attributes", "an object");
      for (const auto& [name, body] : j.items()) {
        const std::string path = Reader::child("attributes", name);
        r_.keys(body, path, {"default", "description"});
        AttributeSpec a;
        a.name = name;
        if (body.contains("default")) a.default_value = r_.value(body.at("default"), Reader::child(path, "default"));
        spec_.attributes.push_back(std::move(a));
      }
    }
    if (!root_.contains("attributeConstraints")) return;
    const Json& j = root_.at("attributeConstraints");
    r_.expect(j, j.is_object(), "attributeConstraints", "an object");
    for (const auto& item : j.items()) {
      const std::string& name = item.key();
      const Json& body = item.value();
      const std::string path = Reader::child("attributeConstraints", name);
      auto it =
          std::find_if(spec_.attributes.begin(), spec_.attributes.end(), [&](const AttributeSpec& a) { return a.name == name; });
      if (it == spec_.attributes.end()) r_.fail(path, "'" + name + "' is not a declared attribute");
      r_.keys(body, path, {"values", "min", "max"});
      if (body.contains("values")) {
        const Value values = r_.value(body.at("values"), Reader::child(path, "values"));
        if (!values.is_list() || values.as_list().empty()) r_.fail(Reader::child(path, "values"), "expected a non-empty list");
        it->allowed = values.as_list();
      }
      for (const char* bound : {"min", "max"}) {
        if (!body.contains(bound)) continue;
        const Json& b = body.at(bound);
        r_.expect(b, b.is_number(), Reader::child(path, bound), "a number");
        (std::string(bound) == "min" ? it->min : it->max) = b.get<double>();
      }
    }
  }

  void tunables() {
    if (!root_.contains("tunables")) return;
    const Json& j = root_.at("tunables");
    r_.expect(j, j.is_object(), "tunables", "an object");
    for (const auto& [name, body] : j.items()) {
      const std::string path = Reader::child("tunables", name);
      if (!is_identifier(name)) r_.fail(path, "a tunable name must be an identifier");
      r_.keys(body, path, {"default", "min", "max", "description"}, {"default"});
      TunableSpec t;
      t.name = name;
      t.default_value = r_.integer(body.at("default"), Reader::child(path, "default"));
      if (body.contains("min")) t.min = r_.integer(body.at("min"), Reader::child(path, "min"));
      if (body.contains("max")) t.max = r_.integer(body.at("max"), Reader::child(path, "max"));
      if ((t.min && t.default_value < *t.min) || (t.max && t.default_value > *t.max))
        r_.fail(Reader::child(path, "default"), "the default lies outside [min, max]");
      spec_.tunables.push_back(t);
    }
  }

  void bindings() {
    if (!root_.contains("bindings")) return;
    const Json& j = root_.at("bindings");
    r_.expect(j, j.is_object(), "bindings", "an object");
    for (const auto& [name, body] : j.items()) {
      const std::string path = Reader::child("bindings", name);
      if (!is_identifier(name)) r_.fail(path, "a binding name must be an identifier");
      r_.keys(body, path, {"elementType", "struct"});
      BindingDecl decl;
      decl.name = name;
      if (body.contains("elementType") == body.contains("struct"))
        r_.fail(path, "give either elementType (a tensor binding) or struct (a uniform struct)");
      if (body.contains("elementType")) {
        if (!spec_.tensor(name))
          r_.fail(path, "'" + name + "' is not an input or output; only a struct binding may have another name");
        decl.element_type = element_type(body.at("elementType"), Reader::child(path, "elementType"));
      } else {
        if (spec_.tensor(name)) r_.fail(path, "'" + name + "' is a tensor; a struct binding needs another name");
        decl.fields = struct_fields(body.at("struct"), Reader::child(path, "struct"));
      }
      spec_.bindings[name] = std::move(decl);
    }
  }

  std::string element_type(const Json& j, const std::string& path) const {
    const std::string t = r_.string(j, path);
    if (t.size() > 1 && t[0] == '$' && is_identifier(t.substr(1))) return t;
    if (!is_storage_element_type(t))
      r_.fail(path, "expected \"$derivedName\" or a WGSL element type (f32, f16, i32, u32, vecN<...>), found \"" + t + "\"");
    return t;
  }

  std::vector<ParamsField> struct_fields(const Json& j, const std::string& path) const {
    r_.expect(j, j.is_array() && !j.empty(), path, "a non-empty list of fields");
    std::vector<ParamsField> fields;
    std::set<std::string> names;
    for (size_t i = 0; i < j.size(); ++i) {
      const std::string p = Reader::item(path, i);
      r_.keys(j[i], p, {"name", "type", "value", "description"}, {"name", "type", "value"});
      const std::string name = r_.string(j[i].at("name"), Reader::child(p, "name"));
      if (!is_identifier(name) || !names.insert(name).second)
        r_.fail(Reader::child(p, "name"), "expected a new identifier, found '" + name + "'");
      UniformType type;
      const std::string error = parse_uniform_type(r_.string(j[i].at("type"), Reader::child(p, "type")), type);
      if (!error.empty()) r_.fail(Reader::child(p, "type"), error);
      fields.push_back({name, type, r_.expr(j[i].at("value"), Reader::child(p, "value"))});
    }
    return fields;
  }

  // `promote`, `widen` and `atLeastFloat`: inputs, each typed by a type variable, that the backend casts first.
  // A list input (Concatenate's `tensors`) names all its members.
  std::vector<std::string> cast_inputs(const char* key, size_t at_least) {
    const Json& j = root_.at(key);
    const char* expected = at_least <= 1 ? "a list of inputs" : "a list of at least two inputs";
    r_.expect(j, j.is_array(), key, expected);
    std::vector<std::string> names;
    for (size_t i = 0; i < j.size(); ++i) {
      const std::vector<std::string> members = cast_input(j[i], Reader::item(key, i));
      names.insert(names.end(), members.begin(), members.end());
    }
    r_.expect(j, names.size() >= at_least, key, expected);
    return names;
  }

  std::vector<std::string> cast_input(const Json& j, const std::string& path) const {
    const std::string name = r_.string(j, path);
    std::vector<std::string> names;
    for (const TensorSpec& t : spec_.inputs)
      if ((t.name == name || t.list == name) && spec_.is_type_variable(t.dtype)) names.push_back(t.name);
    if (names.empty()) r_.fail(path, "'" + name + "' is not an input whose dtype is a type variable");
    return names;
  }

  // `castLike`: an object of input: the input whose dtype it is cast to.
  void cast_like() {
    const Json& j = root_.at("castLike");
    r_.expect(j, j.is_object() && !j.empty(), "castLike", "an object of input: input");
    for (const auto& [name, like] : j.items()) {
      const std::string path = Reader::child("castLike", name);
      const std::string target = r_.string(like, path);
      if (cast_input(Json(name), path).size() != 1 || !spec_.input(target) || target == name)
        r_.fail(path, "expected an input cast to the dtype of another input");
      spec_.cast_like[name] = target;
    }
  }

  // `widen`: a list of inputs (each widens bool, int8, int16 and uint8), or an object naming the
  // dtypes each input widens (Cumsum widens bool alone).
  void widen() {
    const Json& j = root_.at("widen");
    if (j.is_array()) {
      for (const std::string& name : cast_inputs("widen", 1)) spec_.widen[name];
      return;
    }
    r_.expect(j, j.is_object() && !j.empty(), "widen", "a list of inputs or an object of input: [dtype, ...]");
    for (const auto& [name, list] : j.items()) {
      const std::string path = Reader::child("widen", name);
      std::vector<DType> dtypes;
      r_.expect(list, list.is_array() && !list.empty(), path, "a non-empty list of dtype names");
      for (size_t i = 0; i < list.size(); ++i) {
        const auto dtype = dtype_from_name(r_.string(list[i], Reader::item(path, i)));
        if (dtype != DType::Bool && dtype != DType::Int8 && dtype != DType::Int16 && dtype != DType::UInt8)
          r_.fail(Reader::item(path, i), "only bool, int8, int16 and uint8 widen");
        dtypes.push_back(*dtype);
      }
      for (const std::string& input : cast_input(Json(name), path)) spec_.widen[input] = dtypes;
    }
  }

  void variants() {
    const Json& j = root_.at("variants");
    r_.expect(j, j.is_array() && !j.empty(), "variants", "a non-empty list");
    std::set<std::string> ids;
    for (size_t i = 0; i < j.size(); ++i) {
      const std::string path = Reader::item("variants", i);
      r_.keys(j[i], path, {"id", "priority", "when", "derive", "scratch", "passes", "description"}, {"id", "passes"});
      VariantSpec v;
      v.path = path;
      v.id = r_.string(j[i].at("id"), Reader::child(path, "id"));
      if (!ids.insert(v.id).second) r_.fail(Reader::child(path, "id"), "variant id '" + v.id + "' is used twice");
      if (j[i].contains("priority")) v.priority = r_.integer(j[i].at("priority"), Reader::child(path, "priority"));
      if (j[i].contains("when")) v.when = r_.expr_list(j[i].at("when"), Reader::child(path, "when"));
      if (j[i].contains("derive")) v.derive = r_.derive(j[i].at("derive"), Reader::child(path, "derive"));
      if (j[i].contains("scratch")) v.scratch = scratch(j[i].at("scratch"), Reader::child(path, "scratch"));
      scratch_ = &v.scratch;
      const Json& passes = j[i].at("passes");
      r_.expect(passes, passes.is_array() && !passes.empty(), Reader::child(path, "passes"), "a non-empty list");
      std::set<std::string> pass_ids;
      for (size_t p = 0; p < passes.size(); ++p) {
        v.passes.push_back(pass(passes[p], Reader::item(Reader::child(path, "passes"), p), passes.size() == 1));
        if (!pass_ids.insert(v.passes.back().id).second)
          r_.fail(Reader::child(v.passes.back().path, "id"), "pass id '" + v.passes.back().id + "' is used twice");
      }
      scratch_ = nullptr;
      spec_.variants.push_back(std::move(v));
    }
  }

  std::vector<TensorSpec> scratch(const Json& j, const std::string& path) const {
    r_.expect(j, j.is_object(), path, "an object of temporary tensors");
    std::vector<TensorSpec> out;
    for (const auto& [name, body] : j.items()) {
      const std::string item = Reader::child(path, name);
      if (!is_identifier(name)) r_.fail(item, "a tensor name must be an identifier");
      if (spec_.tensor(name)) r_.fail(item, "'" + name + "' is already an input or output");
      r_.keys(body, item, {"dtype", "shape", "description"}, {"dtype", "shape"});
      TensorSpec t;
      t.name = name;
      t.path = item;
      t.dtype = r_.string(body.at("dtype"), Reader::child(item, "dtype"));
      if (!spec_.is_type_variable(t.dtype) && !dtype_from_name(t.dtype))
        r_.fail(Reader::child(item, "dtype"), "'" + t.dtype + "' is neither a type variable of typeConstraints nor a dtype name");
      t.shape = r_.expr(body.at("shape"), Reader::child(item, "shape"));
      out.push_back(std::move(t));
    }
    return out;
  }

  // An input, an output, or a scratch tensor of the variant being read.
  bool is_tensor(const std::string& name) const {
    if (spec_.tensor(name)) return true;
    return scratch_ && std::any_of(scratch_->begin(), scratch_->end(), [&](const TensorSpec& t) { return t.name == name; });
  }

  void reject_host_values(const std::string& name, const std::string& path) const {
    if (const TensorSpec* t = spec_.input(name); t && t->host_values)
      r_.fail(path, "'" + name + "' is read on the host (values): no pass binds it");
  }

  // A pass is named for profiles: by its op alone when it is its variant's only pass.
  PassSpec pass(const Json& j, const std::string& path, bool only_pass) const {
    r_.keys(j, path,
            {"id", "name", "shader", "entryPoint", "derive", "bindings", "dispatch", "viewAlias", "runtimeChecks", "description"},
            {"id", "shader", "bindings", "dispatch"});
    PassSpec p;
    p.path = path;
    p.id = r_.string(j.at("id"), Reader::child(path, "id"));
    p.name = r_.string_or(j, "name", path, only_pass ? spec_.name : spec_.name + "." + p.id);
    p.shader = r_.string(j.at("shader"), Reader::child(path, "shader"));
    p.entry_point = r_.string_or(j, "entryPoint", path, "main");
    if (j.contains("runtimeChecks")) p.runtime_checks = r_.boolean(j.at("runtimeChecks"), Reader::child(path, "runtimeChecks"));
    if (j.contains("derive")) p.derive = r_.derive(j.at("derive"), Reader::child(path, "derive"));
    pass_bindings(j.at("bindings"), Reader::child(path, "bindings"), p);
    dispatch(j.at("dispatch"), Reader::child(path, "dispatch"), p);
    if (j.contains("viewAlias")) view_alias(j.at("viewAlias"), Reader::child(path, "viewAlias"), p);
    return p;
  }

  void pass_bindings(const Json& j, const std::string& path, PassSpec& p) const {
    r_.expect(j, j.is_array() && !j.empty(), path, "a non-empty list of bindings");
    std::set<std::string> names;
    for (size_t i = 0; i < j.size(); ++i) {
      const std::string item = Reader::item(path, i);
      PassBinding b = j[i].is_string() ? named_binding(r_.string(j[i], item), item) : object_binding(j[i], item);
      if (!names.insert(b.name).second) r_.fail(item, "binding name '" + b.name + "' is used twice in this pass");
      if (b.uniform && std::any_of(p.bindings.begin(), p.bindings.end(), [](const PassBinding& o) { return o.uniform; }))
        r_.fail(item, "a pass has at most one uniform struct (its WGSL type is Params)");
      p.bindings.push_back(std::move(b));
    }
  }

  PassBinding named_binding(const std::string& name, const std::string& path) const {
    PassBinding b;
    b.name = name;
    const auto decl = spec_.bindings.find(name);
    if (decl != spec_.bindings.end() && decl->second.is_struct()) {
      b.uniform = true;
      return b;
    }
    reject_host_values(name, path);
    if (!is_tensor(name))
      r_.fail(path, "'" + name + "' is neither an input, an output, a scratch tensor nor a binding of the top-level bindings");
    b.arg = name;
    if (decl != spec_.bindings.end()) b.element_type = decl->second.element_type;
    return b;
  }

  PassBinding object_binding(const Json& j, const std::string& path) const {
    r_.keys(j, path, {"arg", "name", "elementType"}, {"arg"});
    PassBinding b;
    b.arg = r_.string(j.at("arg"), Reader::child(path, "arg"));
    reject_host_values(b.arg, Reader::child(path, "arg"));
    if (!is_tensor(b.arg)) r_.fail(Reader::child(path, "arg"), "'" + b.arg + "' is not an input, output or scratch tensor");
    b.name = r_.string_or(j, "name", path, b.arg);
    if (!is_identifier(b.name)) r_.fail(Reader::child(path, "name"), "a binding name must be an identifier");
    if (j.contains("elementType"))
      b.element_type = element_type(j.at("elementType"), Reader::child(path, "elementType"));
    else if (const auto decl = spec_.bindings.find(b.arg); decl != spec_.bindings.end())
      b.element_type = decl->second.element_type;
    return b;
  }

  void dispatch(const Json& j, const std::string& path, PassSpec& p) const {
    r_.keys(j, path, {"x", "y", "z", "workgroups"});
    if (j.contains("workgroups") == j.contains("x"))
      r_.fail(path, "give either x (with optional y, z) or workgroups (folded into x, y, z by the engine)");
    if (j.contains("workgroups")) {
      if (j.contains("y") || j.contains("z")) r_.fail(path, "workgroups cannot be combined with y or z");
      p.workgroups = r_.expr(j.at("workgroups"), Reader::child(path, "workgroups"));
      return;
    }
    p.x = r_.expr(j.at("x"), Reader::child(path, "x"));
    p.y = j.contains("y") ? r_.expr(j.at("y"), Reader::child(path, "y")) : Expr::parse("1", {spec_.file, path, 0});
    p.z = j.contains("z") ? r_.expr(j.at("z"), Reader::child(path, "z")) : Expr::parse("1", {spec_.file, path, 0});
  }

  void view_alias(const Json& j, const std::string& path, PassSpec& p) const {
    r_.expect(j, j.is_array(), path, "a list of {input, output}");
    for (size_t i = 0; i < j.size(); ++i) {
      const std::string item = Reader::item(path, i);
      r_.keys(j[i], item, {"input", "output"}, {"input", "output"});
      ViewAlias alias{r_.string(j[i].at("input"), Reader::child(item, "input")),
                      r_.string(j[i].at("output"), Reader::child(item, "output"))};
      const auto bound = [&](const std::string& name, bool output) {
        for (const auto& b : p.bindings)
          if (b.name == name && !b.uniform) return output ? spec_.output(b.arg) != nullptr : spec_.input(b.arg) != nullptr;
        return false;
      };
      if (!bound(alias.input, false))
        r_.fail(Reader::child(item, "input"), "'" + alias.input + "' is not a binding of an input in this pass");
      if (!bound(alias.output, true))
        r_.fail(Reader::child(item, "output"), "'" + alias.output + "' is not a binding of an output in this pass");
      p.view_alias.push_back(alias);
    }
  }

  // Every name each expression reads must be defined where it is evaluated.
  void check_names() const {
    NameTable table = NameTable::for_spec(spec_);
    // An output's dtypeExpr is evaluated before the derived values exist (they may read its dtype).
    for (const TensorSpec& t : spec_.outputs)
      if (t.dtype_expr) table.check(*t.dtype_expr);
    table.add_derived(spec_.derive);
    for (const Expr& e : spec_.when) table.check(e);
    for (const auto& d : spec_.derive) table.check(d.expr);
    for (const auto* list : {&spec_.inputs, &spec_.outputs})
      for (const TensorSpec& t : *list) {
        NameTable tensor_table = table;
        if (!t.list.empty()) tensor_table.add_plain("listIndex");
        for (const auto* e : {&t.rank, &t.shape, &t.range_min, &t.range_max})
          if (*e) tensor_table.check(**e);
      }
    for (const VariantSpec& v : spec_.variants) {
      NameTable variant_table = table;
      variant_table.add_derived(v.derive);
      for (const Expr& e : v.when) variant_table.check(e);
      for (const auto& d : v.derive) variant_table.check(d.expr);
      for (const TensorSpec& t : v.scratch) variant_table.check(*t.shape);
      for (const PassSpec& p : v.passes) check_pass(variant_table, p);
    }
  }

  void check_pass(NameTable table, const PassSpec& p) const {
    table.add_derived(p.derive);
    for (const auto& d : p.derive) table.check(d.expr);
    for (const auto* e : {&p.x, &p.y, &p.z, &p.workgroups})
      if (*e) table.check(**e);
    for (size_t i = 0; i < p.bindings.size(); ++i) {
      const PassBinding& b = p.bindings[i];
      if (b.uniform) {
        for (const auto& field : spec_.bindings.at(b.name).fields) table.check(field.value);
      } else if (!b.element_type.empty() && b.element_type[0] == '$') {
        const Expr reference = Expr::parse(b.element_type.substr(1),
                                           {spec_.file, Reader::item(Reader::child(p.path, "bindings"), i) + ".elementType", 1});
        table.check(reference);
      }
    }
  }

  Reader r_;
  const Json& root_;
  KernelSpec spec_;
  const std::vector<TensorSpec>* scratch_ = nullptr;  // the scratch tensors of the variant being read
};

}  // namespace

const TensorSpec* KernelSpec::input(std::string_view n) const {
  for (const auto& t : inputs)
    if (t.name == n) return &t;
  return nullptr;
}

const TensorSpec* KernelSpec::output(std::string_view n) const {
  for (const auto& t : outputs)
    if (t.name == n) return &t;
  return nullptr;
}

const TensorSpec* KernelSpec::tensor(std::string_view n) const {
  const TensorSpec* t = input(n);
  return t ? t : output(n);
}

const TensorSpec* KernelSpec::scratch(const VariantSpec& variant, std::string_view n) const {
  for (const auto& t : variant.scratch)
    if (t.name == n) return &t;
  return nullptr;
}

const AttributeSpec* KernelSpec::attribute(std::string_view n) const {
  for (const auto& a : attributes)
    if (a.name == n) return &a;
  return nullptr;
}

const TunableSpec* KernelSpec::tunable(std::string_view n) const {
  for (const auto& t : tunables)
    if (t.name == n) return &t;
  return nullptr;
}

std::vector<KernelSpec> parse_specs(const std::string& json_text, const std::string& file) {
  Json root;
  try {
    root = Json::parse(json_text);
  } catch (const Json::exception& e) {  // parse_error, or out_of_range for a number such as 1E400
    throw Error(ErrorCode::InvalidFormat, file + ": not valid JSON: " + e.what());
  }
  std::vector<KernelSpec> specs;
  ExprCache exprs;  // a family's members share the expressions they repeat
  for (const ExpandedSpec& expanded : expand_family(root, file))
    specs.push_back(SpecParser(expanded.label, expanded.body, exprs).run());
  return specs;
}

KernelSpec parse_spec(const std::string& json_text, const std::string& file) {
  std::vector<KernelSpec> specs = parse_specs(json_text, file);
  if (specs.size() != 1)
    throw Error(ErrorCode::InvalidFormat,
                file + ": expected a single spec, found a family of " + std::to_string(specs.size()) + " ops");
  return std::move(specs.front());
}

std::vector<KernelSpec> load_spec_file(const std::string& path, const std::string& display_name) {
  const std::string& name = display_name.empty() ? path : display_name;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::Io, name + ": cannot open the spec file");
  std::stringstream text;
  text << in.rdbuf();
  return parse_specs(text.str(), name);
}

std::string kernels_folder_name(const std::string& file, const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path folder = fs::absolute(dir).lexically_normal();
  return fs::absolute(file).lexically_normal().lexically_relative(folder.parent_path().parent_path()).generic_string();
}

NameTable NameTable::for_spec(const KernelSpec& spec) {
  NameTable table;
  std::vector<std::string> tensors, dtypes, attrs, tunables, values;
  for (const auto* list : {&spec.inputs, &spec.outputs})
    for (const auto& t : *list) tensors.push_back(t.name);
  for (const auto& t : spec.inputs)
    if (t.host_values) values.push_back(t.name);
  dtypes = tensors;
  for (const auto& [var, types] : spec.type_constraints) dtypes.push_back(var);
  for (const auto& a : spec.attributes) attrs.push_back(a.name);
  for (const auto& t : spec.tunables) tunables.push_back(t.name);
  table.namespaces_ = {
      {"shapes", tensors},    {"ranks", tensors}, {"present", tensors},
      {"dtypes", dtypes},     {"types", dtypes},  {"attrs", attrs},
      {"tunables", tunables}, {"values", values}, {"device", {"shaderF16", "subgroups", "maxWorkgroupsPerDimension"}}};
  return table;
}

void NameTable::add_derived(const std::vector<DeriveEntry>& entries) {
  for (const auto& e : entries) plain_.push_back(e.name);
}

void NameTable::check(const Expr& expr) const {
  for (const auto& use : expr.names()) check(expr, use);
}

void NameTable::check(const Expr& expr, const Expr::NameUse& use) const {
  if (std::find(plain_.begin(), plain_.end(), use.name) != plain_.end()) return;
  const auto ns = namespaces_.find(use.name);
  if (ns == namespaces_.end()) {
    std::vector<std::string> known;
    for (const auto& [name, members] : namespaces_) known.push_back(name);
    known.insert(known.end(), plain_.begin(), plain_.end());
    throw Error(ErrorCode::InvalidFormat,
                expr.locate(use.column, "'" + use.name + "' is not defined here (defined: " + join_names(known) + ")"));
  }
  if (!use.member.empty() && std::find(ns->second.begin(), ns->second.end(), use.member) == ns->second.end())
    throw Error(ErrorCode::InvalidFormat, expr.locate(use.column, "'" + use.name + "' has no member '" + use.member +
                                                                      "' (members: " + join_names(ns->second) + ")"));
}

}  // namespace wgml::kernel
