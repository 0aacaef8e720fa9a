#include "kernel/decomposition.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kernel/spec.h"
#include "wgml/error.h"

namespace wgml::kernel {
namespace {

using Json = nlohmann::ordered_json;

class DecompositionParser {
 public:
  explicit DecompositionParser(const std::string& file) : file_(file) {}

  std::vector<Decomposition> run(const Json& root) {
    expect(root.is_object() && root.contains("domain") && root.at("domain").is_string(), "", "an object with a \"domain\"");
    expect(root.contains("decompositions") && root.at("decompositions").is_object(), "decompositions",
           "an object of op: decomposition");
    for (const auto& [key, _] : root.items())
      if (key != "domain" && key != "description" && key != "decompositions") fail(key, "unknown key");
    std::vector<Decomposition> out;
    for (const auto& [op, body] : root.at("decompositions").items()) out.push_back(decomposition(root.at("domain"), op, body));
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw Error(ErrorCode::InvalidFormat, file_ + ": " + (path.empty() ? "(top level)" : path) + ": " + what);
  }
  void expect(bool ok, const std::string& path, const char* expected) const {
    if (!ok) fail(path, std::string("expected ") + expected);
  }
  std::string string(const Json& j, const std::string& path) const {
    expect(j.is_string(), path, "a string");
    return j.get<std::string>();
  }
  Expr expr(const Json& j, const std::string& path) const {
    expect(j.is_string() || j.is_number() || j.is_boolean(), path, "an expression");
    return Expr::parse(j.is_string() ? j.get<std::string>() : j.dump(), Origin{file_, path, 0});
  }

  Decomposition decomposition(const Json& domain, const std::string& op, const Json& body) {
    const std::string path = "decompositions." + op;
    expect(body.is_object(), path, "an object");
    for (const auto& [key, _] : body.items())
      if (key != "description" && key != "input" && key != "output" && key != "steps") fail(path + "." + key, "unknown key");
    Decomposition d{file_, domain.get<std::string>(), op, "", "", {}};
    d.input = body.contains("input") ? string(body.at("input"), path + ".input") : "x";
    d.output = body.contains("output") ? string(body.at("output"), path + ".output") : "out";
    expect(body.contains("steps") && body.at("steps").is_array(), path + ".steps", "a list of steps");
    for (size_t i = 0; i < body.at("steps").size(); ++i)
      d.steps.push_back(step(body.at("steps")[i], path + ".steps[" + std::to_string(i) + "]"));
    return d;
  }

  DecompositionStep step(const Json& j, const std::string& path) {
    expect(j.is_object() && j.contains("op"), path, "an object with an \"op\"");
    DecompositionStep s;
    s.path = path;
    for (const auto& [key, value] : j.items()) {
      if (key == "op") {
        s.op = string(value, path + ".op");
      } else if (key == "for") {
        s.loop_variable = string(value, path + ".for");
      } else if (key == "in") {
        s.loop_list = expr(value, path + ".in");
      } else if (key == "inputs") {
        expect(value.is_object(), path + ".inputs", "an object of step input: node field or \"previous\"");
        for (const auto& [name, field] : value.items()) s.inputs[name] = string(field, path + ".inputs." + name);
      } else if (key == "attributes") {
        expect(value.is_object(), path + ".attributes", "an object of attribute: expression");
        for (const auto& [name, e] : value.items()) s.attributes.emplace(name, expr(e, path + ".attributes." + name));
      } else if (key != "description") {
        fail(path + "." + key, "unknown key (allowed: op, for, in, inputs, attributes, description)");
      }
    }
    if (s.loop_variable.empty() != !s.loop_list) fail(path, "\"for\" and \"in\" go together");
    return s;
  }

  const std::string& file_;
};

}  // namespace

std::vector<Decomposition> load_decompositions(const std::string& path, const std::string& display_name) {
  const std::string& name = display_name.empty() ? path : display_name;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::Io, name + ": cannot open the decomposition file");
  std::stringstream text;
  text << in.rdbuf();
  Json root;
  try {
    root = Json::parse(text.str());
  } catch (const Json::exception& e) {  // parse_error, or out_of_range for a number such as 1E400
    throw Error(ErrorCode::InvalidFormat, name + ": not valid JSON: " + e.what());
  }
  return DecompositionParser(name).run(root);
}

std::map<std::pair<std::string, std::string>, Decomposition> load_decomposition_directory(const std::string& dir) {
  std::map<std::pair<std::string, std::string>, Decomposition> out;
  if (!std::filesystem::exists(dir)) return out;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const auto& file : files)
    for (Decomposition& d : load_decompositions(file.string(), kernels_folder_name(file.string(), dir))) {
      const auto key = std::make_pair(d.domain, d.op);
      if (out.count(key)) throw Error(ErrorCode::InvalidFormat, d.file + ": " + d.domain + "." + d.op + " is decomposed twice");
      out.emplace(key, std::move(d));
    }
  return out;
}

}  // namespace wgml::kernel
