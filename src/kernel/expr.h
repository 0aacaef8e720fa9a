#pragma once
// The expression language of kernel specs and WGSL templates (docs/kernels.md, "Expressions"):
// literals, lists, arithmetic, comparisons, `and`/`or`/`not`, `a if c else b`, `~` concatenation,
// member access, indexing and slicing, function calls and `|` filters. An expression is parsed
// once into an immutable tree and evaluated many times against a Scope.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/value.h"

namespace wgml::kernel {

// Where an expression's text comes from, for error messages: a spec file and the JSON path of the
// string, or a template file and its line. Columns are 1-based; `column_base` is added so that a
// column inside a template tag is reported as the column in the template's line.
struct Origin {
  std::string file;
  std::string path;
  int column_base = 0;
};

// The names an expression can read. `device` (an object: shaderF16, maxWorkgroupsPerDimension)
// is read by f16Ok.
class Scope {
 public:
  virtual ~Scope() = default;
  virtual std::optional<Value> find(std::string_view name) const = 0;
};

// A Scope backed by an Object, with an optional enclosing scope for names it lacks.
class ObjectScope : public Scope {
 public:
  explicit ObjectScope(Object names, const Scope* parent = nullptr) : names_(std::move(names)), parent_(parent) {}
  std::optional<Value> find(std::string_view name) const override;
  void set(const std::string& name, Value value) { names_[name] = std::move(value); }

 private:
  Object names_;
  const Scope* parent_;
};

class Expr {
 public:
  struct Node;

  // Throws wgml::Error(InvalidFormat) naming the origin and column on a syntax error or an
  // unknown function.
  static Expr parse(std::string_view text, Origin origin);

  // Throws wgml::Error(Runtime) naming the origin and column on an undefined name, a type
  // mismatch, a division by zero, an index out of range, an integer overflow.
  Value evaluate(const Scope& scope) const;

  // A name the expression reads, and the member it reads of it (`shapes.past` gives
  // {"shapes", "past"}; a bare name gives an empty member). Function names are not included.
  struct NameUse {
    std::string name;
    std::string member;
    int column = 0;
  };
  const std::vector<NameUse>& names() const;

  const std::string& text() const { return *text_; }
  // The syntax tree (expr_internal.h), for code that compiles expressions (dynamic_plan.h).
  const Node& tree() const { return *root_; }
  const Origin& origin() const { return *origin_; }
  // The error message for `what` at `column`: origin, column, the text and a caret under it.
  std::string locate(int column, const std::string& what) const;

 private:
  friend class ExprCache;
  std::shared_ptr<const std::string> text_;
  std::shared_ptr<const Origin> origin_;
  std::shared_ptr<const Node> root_;
  std::shared_ptr<const std::vector<NameUse>> names_;
};

// Parses expressions, sharing the tree of a text it parsed before: a family's members repeat their
// family's derive, when and params texts, and a parsed tree never changes. Each expression keeps
// its own origin for its messages.
class ExprCache {
 public:
  Expr parse(std::string_view text, Origin origin);

 private:
  std::map<std::string, Expr, std::less<>> parsed_;
};

// The built-in functions (also usable as filters: `x | f(a)` is `f(x, a)`).
bool is_function(std::string_view name);

}  // namespace wgml::kernel
