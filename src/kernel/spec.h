#pragma once
// A kernel spec (kernels/specs/<domain>/<Op>.json) parsed and statically validated: every key
// known, every value of the right JSON type, every expression parsed, every name an expression
// reads defined where it is read. The format is documented in docs/kernels.md.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernel/expr.h"
#include "kernel/template.h"
#include "kernel/uniform_layout.h"
#include "wgml/dtype.h"

namespace wgml::kernel {

struct TensorSpec {
  std::string name;   // the spec's name (shapes.NAME, bindings)
  std::string onnx;   // the ONNX name, when it differs
  std::string dtype;  // a type variable of typeConstraints, or a dtype name
  bool optional = false;
  // A member of a list of tensors ("list": N on `tensors` makes tensors0..N-1): the list's name,
  // and the member's index, which its expressions read as `listIndex`.
  std::string list;
  int64_t list_index = 0;
  std::string dtype_attribute;  // outputs: an attribute holding an ExecuTorch ScalarType code for the dtype
  // Outputs: an expression naming the dtype (e.g. "bfloat16") where no dtypeAttribute names one,
  // seen from the inputs and attributes (Dequantize: `dtype`, else the scales' dtype or bfloat16).
  std::optional<Expr> dtype_expr;
  std::optional<Expr> rank;   // inputs: required rank; outputs: the rank
  std::optional<Expr> shape;  // inputs: required shape; outputs: the shape
  // Inputs only:
  std::string storage;                       // "", "uint32", "int32", "packed"
  std::string narrowing;                     // "", "checked"
  std::optional<Expr> range_min, range_max;  // valueRange
  // "values": true: an op parameter (Resize's scales and sizes) the planner reads as `values.NAME`,
  // never bound to a pass; the request carries its elements (KernelRequest::input_values).
  bool host_values = false;
  std::string path;  // JSON path, for messages
};

struct AttributeSpec {
  std::string name;
  std::optional<Value> default_value;  // none: the attribute is required
  std::optional<List> allowed;         // attributeConstraints.NAME.values
  std::optional<double> min, max;      // attributeConstraints.NAME.min / max
};

struct TunableSpec {
  std::string name;
  int64_t default_value = 0;
  std::optional<int64_t> min, max;
};

struct DeriveEntry {
  std::string name;
  Expr expr;
};

struct ParamsField {
  std::string name;
  UniformType type;
  Expr value;
};

// A top-level `bindings` entry: the element type of a tensor binding, or a uniform struct.
struct BindingDecl {
  std::string name;
  std::string element_type;         // "$derivedName" or a WGSL type; empty for a struct
  std::vector<ParamsField> fields;  // the struct's fields
  bool is_struct() const { return element_type.empty(); }
};

struct PassBinding {
  std::string arg;           // the tensor (input or output); empty for a uniform struct
  std::string name;          // the WGSL variable
  std::string element_type;  // "$derivedName" or a WGSL type; empty for a uniform struct
  bool uniform = false;      // a uniform struct: KernelSpec::bindings[name] declares it
};

struct ViewAlias {
  std::string input;  // binding names in the pass
  std::string output;
};

struct PassSpec {
  std::string id, name, shader, entry_point;
  std::vector<DeriveEntry> derive;
  std::vector<PassBinding> bindings;
  // Either x/y/z, or `workgroups` that the engine folds into x/y/z by the device's limit.
  std::optional<Expr> x, y, z, workgroups;
  std::vector<ViewAlias> view_alias;
  // false: the template bounds-checks every access itself against the shapes the engine sized the
  // buffers from, so the implementation's own checks (wgpu clamps every index) may be left out.
  bool runtime_checks = true;
  std::shared_ptr<const Template> shader_template;  // set by the engine when it loads the spec
  // The names the template reads (set with shader_template): the rendered WGSL is a function of
  // their values alone, so those values key the render cache.
  std::vector<Expr::NameUse> template_reads;
  std::string path;
};

struct VariantSpec {
  std::string id;
  int64_t priority = 0;
  std::vector<Expr> when;
  std::vector<DeriveEntry> derive;
  // Temporary buffers its passes share (split-K partial sums, flash-decoding partials): a dtype
  // (a type variable or a dtype name) and a shape computed in the variant's scope.
  std::vector<TensorSpec> scratch;
  std::vector<PassSpec> passes;
  std::string path;
};

struct KernelSpec {
  std::string file;   // the spec file, with "#Op" for an op of a family
  bool view = false;  // the backend runs the node as a view of its input: no kernel
  std::string domain, name;
  int64_t since_version = 0;
  std::vector<TensorSpec> inputs, outputs;
  // Inputs MLX casts to their promoted dtype before the op computes (a + b of float16 and
  // bfloat16 adds in float32): the backend casts them first, so the kernel sees one dtype.
  std::vector<std::string> promote;
  // Inputs MLX widens before the op (a sum of bool, int8 or int16 accumulates in int32, of uint8
  // in uint32): the backend casts them first. By input, the dtypes it widens (empty: all four).
  std::map<std::string, std::vector<DType>> widen;
  // Inputs MLX computes on as float32 when they are integers or bool (its at_least_float: sin of
  // an int32 tensor is a float32 tensor): the backend casts them first.
  std::vector<std::string> at_least_float;
  // Inputs the op casts to another input's dtype first (SliceUpdate's update to dst's, as MLX's
  // slice_update does): input -> the input whose dtype it takes.
  std::map<std::string, std::string> cast_like;
  std::vector<AttributeSpec> attributes;
  std::map<std::string, std::vector<DType>> type_constraints;
  std::vector<TunableSpec> tunables;
  std::vector<Expr> when;
  std::vector<DeriveEntry> derive;
  std::map<std::string, BindingDecl> bindings;
  std::vector<VariantSpec> variants;

  std::string qualified_name() const { return domain + "." + name; }
  const TensorSpec* scratch(const VariantSpec& variant, std::string_view n) const;
  const TensorSpec* input(std::string_view n) const;
  const TensorSpec* output(std::string_view n) const;
  const TensorSpec* tensor(std::string_view n) const;  // input or output
  const AttributeSpec* attribute(std::string_view n) const;
  const TunableSpec* tunable(std::string_view n) const;
  bool is_type_variable(std::string_view n) const { return type_constraints.count(std::string(n)) != 0; }
};

// Parses and validates the JSON text of a spec file: one spec, or one per op of a family
// (spec/family.h). Template names are not resolved here (the engine does that). Throws
// wgml::Error(InvalidFormat) naming `file` (and the op of a family), the JSON path and, for
// expressions, the column.
std::vector<KernelSpec> parse_specs(const std::string& json_text, const std::string& file);
// The same for a file that must hold a single spec.
KernelSpec parse_spec(const std::string& json_text, const std::string& file);
// Reads the spec file at `path`; errors and KernelSpec::file name it `display_name` when given.
std::vector<KernelSpec> load_spec_file(const std::string& path, const std::string& display_name = "");
// How messages name a file found under `dir`, a folder of the kernels folder: from that folder on
// ("kernels/specs/mlx/binary.json"), so no error shows where the kernels were built or installed.
std::string kernels_folder_name(const std::string& file, const std::string& dir);

// The names an expression may read at one place of a spec: the namespaces (each with the members
// it has) and plain names (derived values, template globals).
class NameTable {
 public:
  static NameTable for_spec(const KernelSpec& spec);
  void add_plain(const std::string& name) { plain_.push_back(name); }
  void add_derived(const std::vector<DeriveEntry>& entries);
  // Throws wgml::Error(InvalidFormat) at the first name or member that is not defined.
  void check(const Expr& expr) const;
  void check(const Expr& expr, const Expr::NameUse& use) const;

 private:
  std::map<std::string, std::vector<std::string>> namespaces_;
  std::vector<std::string> plain_;
};

}  // namespace wgml::kernel
