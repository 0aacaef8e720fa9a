#pragma once
// The Jinja subset WGSL templates are written in (docs/kernels.md, "Templates"): {{ expr }},
// {% if %}/{% elif %}/{% else %}/{% endif %}, {% for x in xs %}/{% endfor %} with `loop`,
// {% set x = expr %}, {% include "name" %}, {# comments #}, and `-` whitespace control. Blocks
// behave as in Jinja with trim_blocks and lstrip_blocks on. Expressions are spec expressions
// (spec/expr.h). A template is compiled once and rendered many times.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernel/expr.h"

namespace wgml::kernel {

class TemplateLibrary;

class Template {
 public:
  struct Node;

  // Compiles `text`; includes are compiled through `library` (may be null when there are none).
  // Throws wgml::Error(InvalidFormat) naming the template, line and column.
  static std::shared_ptr<const Template> compile(const std::string& name, const std::string& text, TemplateLibrary* library);

  // Throws wgml::Error(Runtime) naming the template, line and column of the failing expression.
  std::string render(const Scope& scope) const;

  // A name that the template (or a template it includes) reads but never binds with set or for.
  struct FreeName {
    Expr::NameUse use;
    const Expr* expr = nullptr;  // for Expr::locate
  };
  std::vector<FreeName> free_names() const;

  const std::string& name() const { return name_; }

 private:
  void collect(std::vector<FreeName>& used, std::vector<std::string>& bound) const;

  std::string name_;
  std::vector<std::shared_ptr<const Node>> body_;
};

// The templates of one directory, each compiled once on first use.
class TemplateLibrary {
 public:
  explicit TemplateLibrary(std::string directory) : directory_(std::move(directory)) {}

  // Throws wgml::Error(Io) when the file does not exist, InvalidFormat when it does not compile
  // (an include cycle included).
  std::shared_ptr<const Template> get(const std::string& name);
  const std::string& directory() const { return directory_; }

 private:
  std::string directory_;
  std::map<std::string, std::shared_ptr<const Template>> compiled_;
  std::vector<std::string> compiling_;  // include chain, for cycle errors
};

}  // namespace wgml::kernel
