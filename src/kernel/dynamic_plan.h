#pragma once
// Plans that follow values changing every call while dtypes, shapes and code stay the same: a
// decode step's cache position, the keys its attention covers. A request names such attributes
// (KernelRequest::dynamic_attributes: the caller's value slots); the planner then compiles what
// reads them, the params fields, dispatch sizes and the conditions that chose the variant, into
// small integer programs with every other name folded to its value. A bound call re-evaluates
// those alone: no plan, no string, no allocation (docs/kernels.md, "Dynamic attributes").
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/expr.h"
#include "kernel/spec.h"

namespace wgml::kernel {

// An integer expression over the dynamic attributes' values, as a stack program.
class IntProgram {
 public:
  enum class Op : uint8_t {
    Const,
    Load,
    Neg,
    Abs,
    Not,
    Add,
    Sub,
    Mul,
    FloorDiv,
    Mod,
    CeilDiv,
    RoundUp,
    Min,
    Max,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
    Select,
    Clamp
  };
  struct Step {
    Op op;
    int64_t arg;  // Const: the value; Load: the attribute's index
  };

  // The value for `values` (the dynamic attributes' values, in order); nullopt where the spec's
  // own evaluation would fail (an overflow, a division by zero), which the full planner reports.
  std::optional<int64_t> run(std::span<const int64_t> values) const;

  std::vector<Step> steps;
};

// What a plan recomputes when only its dynamic attributes change.
struct DynamicPlan {
  struct Attribute {
    std::string name;
    std::optional<List> allowed;  // the spec's attributeConstraints
    std::optional<double> min, max;
  };
  struct Field {
    size_t pass = 0;
    uint32_t offset = 0;
    bool is_signed = false;  // i32, else u32
    IntProgram value;
  };
  struct Dispatch {
    size_t pass = 0;
    bool folded = false;              // one `workgroups` count, folded by the device's limit
    std::array<IntProgram, 3> sizes;  // x, y, z (only [0] when folded)
  };

  std::vector<Attribute> attributes;   // in the order apply() takes their values
  std::vector<IntProgram> conditions;  // `when`s that read them: each must stay true
  // Per variant of higher priority than the chosen one whose `when` reads them: its conditions,
  // not all of which may become true.
  std::vector<std::vector<IntProgram>> rejected;
  std::vector<Field> fields;
  std::vector<Dispatch> dispatches;

  // Writes the params fields and dispatch sizes for `values` into `params` and `dispatch` (per
  // pass, the plan's to start with). False, writing nothing, where the request must be planned
  // afresh: an attribute constraint or a condition changes, a value does not fit its field.
  bool apply(std::span<const int64_t> values, uint32_t max_workgroups_per_dimension, std::vector<std::vector<uint8_t>>& params,
             std::vector<std::array<uint32_t, 3>>& dispatch) const;
};

// Names as an expression at a layer of a plan sees them: layer 0 is the base scope (shapes,
// attrs, ...), 1 the spec's derived values, 2 the variant's, 3 the pass's.
class PlanNames {
 public:
  virtual ~PlanNames() = default;
  // The derived value `name` seen from `layer`, and the layer it is defined in; null when none.
  virtual const DeriveEntry* derived(std::string_view name, int layer, int& defined_in) const = 0;
  // The scope an expression at `layer` is evaluated in.
  virtual const Scope& scope(int layer) const = 0;
};

// Compiles the expressions of one plan that read `dynamic` attributes.
class DynamicCompiler {
 public:
  DynamicCompiler(const std::vector<std::string>& dynamic, const PlanNames& names) : dynamic_(dynamic), names_(names) {}

  // Whether `e`, at `layer`, reads a dynamic attribute (through derived values too).
  bool depends(const Expr& e, int layer) const;
  // Whether a template's or binding's read of `name` (and its `member`) at `layer` does.
  bool depends(const Expr::NameUse& use, int layer) const;
  // `e` at `layer` as an IntProgram; nullopt where it uses what programs cannot express (lists,
  // floats, strings), so the plan is made afresh when the attributes change.
  std::optional<IntProgram> compile(const Expr& e, int layer) const;

 private:
  bool depends(const Expr& e, const Expr::Node& n, int layer) const;
  bool name_depends(std::string_view name, int layer) const;
  bool compile(const Expr& e, const Expr::Node& n, int layer, IntProgram& out) const;
  // A condition that reads no dynamic attribute decides here, as the evaluator would: the branch
  // it skips may not even evaluate (`not present.mask or ranks.mask <= 4`). `decided` for a
  // ternary, `and` or `or` whose first operand reads none and folds to an int or bool; `taken` is
  // the operand it comes to.
  struct Decision {
    bool decided = false;
    const Expr::Node* taken = nullptr;
  };
  Decision decide(const Expr& e, const Expr::Node& n, int layer) const;
  // `n`, which reads no dynamic attribute, evaluated to an int (a bool as 0 or 1); nullopt when it
  // is neither or fails.
  std::optional<int64_t> fold(const Expr& e, const Expr::Node& n, int layer) const;
  int dynamic_index(std::string_view name) const;

  const std::vector<std::string>& dynamic_;
  const PlanNames& names_;
};

}  // namespace wgml::kernel
