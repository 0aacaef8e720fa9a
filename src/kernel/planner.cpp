#include "kernel/planner.h"

#include <algorithm>
#include <utility>

#include "core/workgroups.h"
#include "kernel/dynamic_plan.h"
#include "kernel/uniform_layout.h"
#include "wgml/error.h"

namespace wgml::kernel {

const char* binding_role_name(BindingRole role) {
  switch (role) {
    case BindingRole::Input:
      return "input";
    case BindingRole::Output:
      return "output";
    case BindingRole::Scratch:
      return "scratch";
    case BindingRole::Params:
      return "params";
  }
  return "?";
}

const char* binding_access_name(BindingAccess access) {
  switch (access) {
    case BindingAccess::Read:
      return "read";
    case BindingAccess::ReadWrite:
      return "read_write";
    case BindingAccess::Uniform:
      return "uniform";
  }
  return "?";
}

const PlanTensor* KernelPlan::tensor(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

PlanTensor* KernelPlan::tensor(const std::string& name) { return const_cast<PlanTensor*>(std::as_const(*this).tensor(name)); }

namespace {

// Derived values: each evaluated on first use (so order in the file does not matter), once.
class DeriveScope : public Scope {
 public:
  DeriveScope(const std::vector<DeriveEntry>& entries, const Scope& parent) : parent_(parent) {
    for (const auto& e : entries) slots_.push_back({&e, std::nullopt, false});
  }

  std::optional<Value> find(std::string_view name) const override {
    for (auto& slot : slots_) {
      if (slot.entry->name != name) continue;
      if (slot.value) return slot.value;
      if (slot.busy)
        throw Error(ErrorCode::InvalidFormat,
                    slot.entry->expr.locate(1, "derived value '" + slot.entry->name + "' depends on itself"));
      slot.busy = true;
      slot.value = slot.entry->expr.evaluate(*this);
      slot.busy = false;
      return slot.value;
    }
    return parent_.find(name);
  }

  void append_all(std::vector<std::pair<std::string, Value>>& out) const {
    for (const auto& slot : slots_) out.emplace_back(slot.entry->name, *find(slot.entry->name));
  }

 private:
  struct Slot {
    const DeriveEntry* entry;
    mutable std::optional<Value> value;
    mutable bool busy;
  };
  std::vector<Slot> slots_;
  const Scope& parent_;
};

std::string shape_text(const Shape& shape) { return Value::int_list(shape).to_text(); }

int64_t to_int(const Value& v, const Expr& e, const std::string& what) {
  if (!v.is_int()) throw Error(ErrorCode::Runtime, e.locate(1, what + " must be an int, found " + v.repr()));
  return v.as_int();
}

// Builds one plan for one request.
class Planner {
 public:
  Planner(const KernelSpec& spec, const KernelRequest& request, const DeviceCaps& device, const TunableOverrides& tunables,
          RenderCache* renders)
      : spec_(spec), request_(request), device_(device), tunables_(tunables.resolve(spec)), renders_(renders) {}

  KernelPlan run() {
    match_inputs();
    match_attributes();
    build_base_scope();
    DeriveScope spec_scope(spec_.derive, base_);
    check_spec_conditions(spec_scope);
    KernelPlan plan;
    plan.op = spec_.qualified_name();
    const VariantSpec& variant = choose_variant(spec_scope);
    plan.variant = variant.id;
    add_tensors(spec_scope, plan);
    DeriveScope variant_scope(variant.derive, spec_scope);
    add_scratch(variant, variant_scope, plan);
    decide_aliases(variant, plan);
    for (const PassSpec& pass : variant.passes) {
      if (std::find(plan.skipped_passes.begin(), plan.skipped_passes.end(), pass.id) == plan.skipped_passes.end())
        plan.passes.push_back(build_pass(variant, {&spec_scope, &variant_scope}, pass, plan));
    }
    if (!request_.dynamic_attributes.empty()) plan.dynamic = dynamic_plan(variant, spec_scope, variant_scope, plan);
    return plan;
  }

 private:
  [[noreturn]] void fail(ErrorCode code, const std::string& what) const {
    throw Error(code, spec_.qualified_name() + " (" + spec_.file + "): " + what);
  }

  // ---- inputs, outputs, dtypes -------------------------------------------------------------

  void bind_dtype(const TensorSpec& t, DType dtype, bool output) {
    const std::string role = output ? "output" : "input";
    if (!spec_.is_type_variable(t.dtype)) {
      if (dtype != *dtype_from_name(t.dtype))
        fail(ErrorCode::InvalidArgument,
             role + " '" + t.name + "' is " + std::string(dtype_name(dtype)) + ", the spec requires " + t.dtype);
      return;
    }
    const auto [it, inserted] = type_vars_.emplace(t.dtype, dtype);
    if (!inserted && it->second != dtype)
      fail(ErrorCode::InvalidArgument, role + " '" + t.name + "' is " + std::string(dtype_name(dtype)) + " but " + t.dtype +
                                           " is already " + std::string(dtype_name(it->second)) + " from " +
                                           type_source_[t.dtype]);
    if (!inserted) return;
    type_source_[t.dtype] = role + " '" + t.name + "'";
    const auto& allowed = spec_.type_constraints.at(t.dtype);
    if (std::find(allowed.begin(), allowed.end(), dtype) == allowed.end()) {
      std::string names;
      for (DType d : allowed) names += (names.empty() ? "" : ", ") + std::string(dtype_name(d));
      fail(ErrorCode::InvalidArgument, t.dtype + " = " + std::string(dtype_name(dtype)) + " (from " + role + " '" + t.name +
                                           "') is not allowed; typeConstraints." + t.dtype + ": " + names);
    }
  }

  void bind_storage(const TensorSpec& t, DType dtype) {
    if (!t.storage.empty()) {
      try {
        storage_[t.name] = declared_storage(dtype, t.storage, t.narrowing, t.name);
      } catch (const Error& e) {
        fail(ErrorCode::Unsupported, e.what());
      }
      return;
    }
    const auto storage = default_storage(dtype);
    if (!storage)
      fail(ErrorCode::Unsupported, "'" + t.name + "' is " + std::string(dtype_name(dtype)) +
                                       ", which has no GPU storage unless the spec declares one (storage, narrowing)");
    storage_[t.name] = *storage;
  }

  void match_inputs() {
    for (const auto& [name, desc] : request_.inputs)
      if (!spec_.input(name))
        fail(ErrorCode::InvalidArgument, "there is no input '" + name + "' (inputs: " + names_of(spec_.inputs) + ")");
    for (const auto& [name, desc] : request_.outputs)
      if (!spec_.output(name))
        fail(ErrorCode::InvalidArgument, "there is no output '" + name + "' (outputs: " + names_of(spec_.outputs) + ")");
    for (const TensorSpec& t : spec_.inputs) {
      const auto it = request_.inputs.find(t.name);
      if (it == request_.inputs.end()) {
        if (!t.optional) fail(ErrorCode::InvalidArgument, "input '" + t.name + "' is required");
        continue;
      }
      bind_dtype(t, it->second.dtype, false);
      shapes_[t.name] = it->second.shape;
      if (t.host_values)
        match_values(t);
      else
        bind_storage(t, it->second.dtype);
    }
  }

  // An input read on the host: the request carries one value per element.
  void match_values(const TensorSpec& t) {
    const auto it = request_.input_values.find(t.name);
    if (it == request_.input_values.end())
      fail(ErrorCode::InvalidArgument, "input '" + t.name + "' is read on the host (values), and the request lacks its values");
    const int64_t count = shape_numel(shapes_[t.name]);
    if (static_cast<int64_t>(it->second.size()) != count)
      fail(ErrorCode::InvalidArgument, "input '" + t.name + "' has " + std::to_string(count) +
                                           " elements, and the request gives " + std::to_string(it->second.size()) + " values");
    values_obj_[t.name] = Value(it->second);
  }

  static std::string names_of(const std::vector<TensorSpec>& tensors) {
    std::string names;
    for (const auto& t : tensors) names += (names.empty() ? "" : ", ") + t.name;
    return names;
  }

  // ---- attributes ---------------------------------------------------------------------------

  void match_attributes() {
    for (const auto& [name, value] : request_.attributes)
      if (!spec_.attribute(name)) fail(ErrorCode::InvalidArgument, "there is no attribute '" + name + "'");
    for (const AttributeSpec& a : spec_.attributes) {
      const auto it = request_.attributes.find(a.name);
      if (it == request_.attributes.end() && !a.default_value)
        fail(ErrorCode::InvalidArgument, "attribute '" + a.name + "' is required");
      Value value = it == request_.attributes.end() ? *a.default_value : it->second;
      if (a.default_value) value = conform(a, *a.default_value, value);
      check_constraints(a, value);
      attrs_[a.name] = value;
    }
  }

  // An attribute takes the kind of its default: an int given for a float default becomes a float,
  // 0 or 1 for a bool default that bool (ONNX attributes and fused ops have no bools).
  Value conform(const AttributeSpec& a, const Value& default_value, const Value& value) const {
    if (default_value.is_float() && value.is_int()) return Value(static_cast<double>(value.as_int()));
    if (default_value.is_bool() && value.is_int() && (value.as_int() == 0 || value.as_int() == 1))
      return Value(value.as_int() == 1);
    if (default_value.kind() != value.kind())
      fail(ErrorCode::InvalidArgument, "attribute '" + a.name + "' must be a " + kind_name(default_value.kind()) +
                                           " like its default " + default_value.repr() + ", found " + value.repr());
    return value;
  }

  void check_constraints(const AttributeSpec& a, const Value& value) const {
    if (a.allowed && std::find(a.allowed->begin(), a.allowed->end(), value) == a.allowed->end())
      fail(ErrorCode::InvalidArgument,
           "attribute '" + a.name + "' = " + value.repr() + " is not one of " + Value(*a.allowed).repr());
    if ((a.min || a.max) && !value.is_number())
      fail(ErrorCode::InvalidArgument, "attribute '" + a.name + "' must be a number, found " + value.repr());
    if ((a.min && value.as_number() < *a.min) || (a.max && value.as_number() > *a.max))
      fail(ErrorCode::InvalidArgument, "attribute '" + a.name + "' = " + value.repr() + " lies outside [" +
                                           (a.min ? format_float(*a.min) : "-inf") + ", " +
                                           (a.max ? format_float(*a.max) : "inf") + "]");
  }

  // ---- the scope every expression starts from -----------------------------------------------

  void publish_tensor(const std::string& name) {
    shapes_obj_[name] = Value::int_list(shapes_[name]);
    ranks_obj_[name] = Value(static_cast<int64_t>(shapes_[name].size()));
    if (!storage_.count(name)) return;  // read on the host: no storage scalar
    dtypes_obj_[name] = Value(storage_[name].scalar);
    types_obj_[name] = logical_type(name);
  }

  // The logical dtype ("bool", "int8", ...) where the storage scalar does not tell it apart.
  Value logical_type(const std::string& tensor) { return Value(std::string(dtype_name(storage_[tensor].logical))); }

  void refresh_base() {
    Object present;
    for (const auto* list : {&spec_.inputs, &spec_.outputs})
      for (const auto& t : *list) present[t.name] = Value(shapes_.count(t.name) != 0);
    Object tunables;
    for (const auto& [name, value] : tunables_) tunables[name] = Value(value);
    base_ = ObjectScope(
        Object{{"shapes", Value(shapes_obj_)},
               {"ranks", Value(ranks_obj_)},
               {"dtypes", Value(dtypes_obj_)},
               {"types", Value(types_obj_)},
               {"present", Value(present)},
               {"attrs", Value(attrs_)},
               {"tunables", Value(tunables)},
               {"values", Value(values_obj_)},
               {"device", Value(Object{{"shaderF16", Value(device_.shader_f16)},
                                       {"subgroups", Value(device_.subgroups)},
                                       {"maxWorkgroupsPerDimension", Value(device_.max_workgroups_per_dimension)}})}});
  }

  void build_base_scope() {
    for (const TensorSpec& t : spec_.inputs)
      if (shapes_.count(t.name)) publish_tensor(t.name);
    // A type variable reads as the storage scalar of the first tensor that binds it.
    for (const auto* list : {&spec_.inputs, &spec_.outputs})
      for (const auto& t : *list)
        if (spec_.is_type_variable(t.dtype) && storage_.count(t.name) && !dtypes_obj_.count(t.dtype)) {
          dtypes_obj_[t.dtype] = Value(storage_[t.name].scalar);
          types_obj_[t.dtype] = logical_type(t.name);
        }
    refresh_base();
    for (const TensorSpec& t : spec_.outputs)
      if (!t.optional || request_.outputs.count(t.name) || request_.wanted_outputs.count(t.name)) match_output(t);
    refresh_base();
    for (const auto* list : {&spec_.inputs, &spec_.outputs})
      for (const TensorSpec& t : *list)
        if (shapes_.count(t.name)) check_rank_and_shape(t);
  }

  void match_output(const TensorSpec& t) {
    const auto it = request_.outputs.find(t.name);
    DType dtype;
    if (it != request_.outputs.end()) {
      bind_dtype(t, it->second.dtype, true);
      dtype = it->second.dtype;
      shapes_[t.name] = it->second.shape;
    } else {
      if (!t.shape) fail(ErrorCode::InvalidArgument, "output '" + t.name + "' has no shape expression; give its shape");
      if (const auto from_attribute = dtype_of_attribute(t))
        bind_dtype(t, *from_attribute, true);
      else if (t.dtype_expr)
        bind_dtype(t, dtype_of_expr(t), true);
      if (spec_.is_type_variable(t.dtype) && !type_vars_.count(t.dtype))
        fail(ErrorCode::InvalidArgument, "output '" + t.name + "': no input binds its type " + t.dtype + "; give its dtype");
      dtype = spec_.is_type_variable(t.dtype) ? type_vars_.at(t.dtype) : *dtype_from_name(t.dtype);
      // The spec's derived values may help (an axis normalised once); they see the inputs only.
      const DeriveScope derived(spec_.derive, base_);
      shapes_[t.name] = evaluate_shape(*t.shape, tensor_scope(t, derived));
    }
    bind_storage(t, dtype);
    if (spec_.is_type_variable(t.dtype) && !dtypes_obj_.count(t.dtype)) {
      dtypes_obj_[t.dtype] = Value(storage_[t.name].scalar);
      types_obj_[t.dtype] = logical_type(t.name);
    }
    publish_tensor(t.name);
  }

  // The dtype an output's `dtypeAttribute` names (an ExecuTorch ScalarType code; negative: none).
  std::optional<DType> dtype_of_attribute(const TensorSpec& t) const {
    if (t.dtype_attribute.empty()) return std::nullopt;
    const auto it = attrs_.find(t.dtype_attribute);
    if (it == attrs_.end() || !it->second.is_int())
      fail(ErrorCode::InvalidArgument,
           "output '" + t.name + "': dtypeAttribute '" + t.dtype_attribute + "' is not an int attribute");
    if (it->second.as_int() < 0) return std::nullopt;
    const auto dtype = dtype_from_scalar_type(static_cast<int>(it->second.as_int()));
    if (!dtype)
      fail(ErrorCode::InvalidArgument, "attribute '" + t.dtype_attribute + "' = " + it->second.repr() + " is no ScalarType code");
    return dtype;
  }

  // The dtype an output's `dtypeExpr` names, seen from the inputs and attributes.
  DType dtype_of_expr(const TensorSpec& t) const {
    const Expr& e = *t.dtype_expr;
    const Value v = e.evaluate(base_);
    const auto dtype = v.is_string() ? dtype_from_name(v.as_string()) : std::nullopt;
    if (!dtype) throw Error(ErrorCode::Runtime, e.locate(1, "dtypeExpr must name a dtype, found " + v.repr()));
    return *dtype;
  }

  Shape evaluate_shape(const Expr& e, const Scope& scope) const {
    const Value v = e.evaluate(scope);
    Shape shape;
    if (v.is_list())
      for (const Value& d : v.as_list()) shape.push_back(d.is_int() && d.as_int() >= 0 ? d.as_int() : -1);
    if (!v.is_list() || std::find(shape.begin(), shape.end(), -1) != shape.end())
      throw Error(ErrorCode::Runtime, e.locate(1, "a shape must be a list of non-negative ints, found " + v.repr()));
    return shape;
  }

  // The scope a tensor's own expressions see: a list member's also read `listIndex`.
  static ObjectScope tensor_scope(const TensorSpec& t, const Scope& parent) {
    return ObjectScope(t.list.empty() ? Object{} : Object{{"listIndex", Value(t.list_index)}}, &parent);
  }

  void check_rank_and_shape(const TensorSpec& t) const {
    const Shape& shape = shapes_.at(t.name);
    const ObjectScope scope = tensor_scope(t, base_);
    if (t.rank) {
      const int64_t rank = to_int(t.rank->evaluate(scope), *t.rank, "rank");
      if (rank != static_cast<int64_t>(shape.size()))
        fail(ErrorCode::InvalidArgument, "'" + t.name + "' has rank " + std::to_string(shape.size()) + " (shape " +
                                             shape_text(shape) + "), the spec requires " + std::to_string(rank));
    }
    const bool given = request_.inputs.count(t.name) || request_.outputs.count(t.name);  // not computed from `shape`
    if (t.shape && given) {
      const Shape expected = evaluate_shape(*t.shape, scope);
      if (expected != shape)
        fail(ErrorCode::InvalidArgument,
             "'" + t.name + "' has shape " + shape_text(shape) + ", the spec requires " + shape_text(expected));
    }
  }

  // ---- conditions and variants --------------------------------------------------------------

  std::string describe_request() const {
    std::string text = "shapes";
    for (const auto& [name, shape] : shapes_) text += " " + name + "=" + shape_text(shape);
    text += "; dtypes";
    for (const auto& [var, dtype] : type_vars_) {
      text += " " + var + "=" + std::string(dtype_name(dtype));
      // A type bound by inputs read on the host alone has no storage scalar.
      if (const auto scalar = dtypes_obj_.find(var); scalar != dtypes_obj_.end()) text += " (" + scalar->second.as_string() + ")";
    }
    text += "; attrs";
    for (const auto& [name, value] : attrs_) text += " " + name + "=" + value.repr();
    return text + "; device shaderF16=" + (device_.shader_f16 ? "true" : "false");
  }

  // The index of the first condition that is false, or -1.
  static int first_false(const std::vector<Expr>& conditions, const Scope& scope) {
    for (size_t i = 0; i < conditions.size(); ++i)
      if (!conditions[i].evaluate(scope).truthy()) return static_cast<int>(i);
    return -1;
  }

  void check_spec_conditions(const Scope& scope) const {
    const int failed = first_false(spec_.when, scope);
    if (failed < 0) return;
    const Expr& e = spec_.when[static_cast<size_t>(failed)];
    std::string what =
        "does not apply: when[" + std::to_string(failed) + "] `" + e.text() + "` is false for " + describe_request();
    if (e.text().find("f16Ok") != std::string::npos && !device_.shader_f16)
      what = "float16 is not supported on this device (no shader-f16): when[" + std::to_string(failed) + "] `" + e.text() +
             "` is false for " + describe_request();
    fail(ErrorCode::Unsupported, what);
  }

  const VariantSpec& choose_variant(const Scope& spec_scope) const {
    std::vector<const VariantSpec*> order;
    for (const auto& v : spec_.variants) order.push_back(&v);
    std::stable_sort(order.begin(), order.end(),
                     [](const VariantSpec* a, const VariantSpec* b) { return a->priority > b->priority; });
    std::string reasons;
    for (const VariantSpec* v : order) {
      DeriveScope scope(v->derive, spec_scope);
      const int failed = first_false(v->when, scope);
      if (failed < 0) return *v;
      reasons += "\n  " + v->id + ": when[" + std::to_string(failed) + "] `" + v->when[static_cast<size_t>(failed)].text() +
                 "` is false";
    }
    fail(ErrorCode::Unsupported, "no variant applies to " + describe_request() + reasons);
  }

  // ---- tensors ------------------------------------------------------------------------------

  void add_tensors(const Scope& spec_scope, KernelPlan& plan) const {
    for (const auto* list : {&spec_.inputs, &spec_.outputs}) {
      for (const TensorSpec& t : *list) {
        if (!shapes_.count(t.name) || t.host_values) continue;
        PlanTensor pt;
        pt.name = t.name;
        pt.onnx = t.onnx;
        pt.is_output = list == &spec_.outputs;
        pt.storage = storage_.at(t.name);
        pt.dtype = pt.storage.logical;
        pt.shape = shapes_.at(t.name);
        size_buffer(pt);
        const ObjectScope scope = tensor_scope(t, spec_scope);
        if (t.range_min)
          pt.value_range = ValueRange{to_int(t.range_min->evaluate(scope), *t.range_min, "valueRange[0]"),
                                      to_int(t.range_max->evaluate(scope), *t.range_max, "valueRange[1]")};
        plan.tensors.push_back(std::move(pt));
      }
    }
  }

  void size_buffer(PlanTensor& t) const {
    t.gpu_bytes = gpu_buffer_bytes(t.storage, shape_numel(t.shape));
    if (t.gpu_bytes > device_.max_storage_binding_bytes)
      fail(ErrorCode::Unsupported, "'" + t.name + "' needs a " + std::to_string(t.gpu_bytes) +
                                       "-byte buffer; the device binds at most " +
                                       std::to_string(device_.max_storage_binding_bytes));
  }

  void add_scratch(const VariantSpec& variant, const Scope& variant_scope, KernelPlan& plan) const {
    for (const TensorSpec& t : variant.scratch) {
      PlanTensor pt;
      pt.name = t.name;
      pt.is_scratch = true;
      const bool variable = spec_.is_type_variable(t.dtype);
      if (variable && !type_vars_.count(t.dtype)) fail(ErrorCode::Unsupported, t.path + ": no tensor binds its type " + t.dtype);
      pt.dtype = variable ? type_vars_.at(t.dtype) : *dtype_from_name(t.dtype);
      const auto storage = default_storage(pt.dtype);
      if (!storage) fail(ErrorCode::Unsupported, t.path + ": " + std::string(dtype_name(pt.dtype)) + " has no GPU storage");
      pt.storage = *storage;
      pt.shape = evaluate_shape(*t.shape, variant_scope);
      size_buffer(pt);
      plan.tensors.push_back(std::move(pt));
    }
  }

  // ---- view aliasing ------------------------------------------------------------------------

  static const PassBinding& binding_named(const PassSpec& pass, const std::string& name) {
    return *std::find_if(pass.bindings.begin(), pass.bindings.end(), [&](const PassBinding& b) { return b.name == name; });
  }

  bool may_alias(const std::string& input, const std::string& output) const {
    return std::find(request_.may_alias.begin(), request_.may_alias.end(), std::make_pair(input, output)) !=
           request_.may_alias.end();
  }

  // A pass whose every viewAlias pair the caller lets share a buffer only copies an input into an
  // output that already holds it: it is skipped, and the output uses the input's buffer.
  void decide_aliases(const VariantSpec& variant, KernelPlan& plan) const {
    for (const auto& [input, output] : request_.may_alias)
      if (!spec_.input(input) || !spec_.output(output))
        fail(ErrorCode::InvalidArgument,
             "may_alias (" + input + ", " + output + "): expected an input and an output of the spec");
    for (const PassSpec& pass : variant.passes) {
      if (pass.view_alias.empty()) continue;
      const bool all = std::all_of(pass.view_alias.begin(), pass.view_alias.end(), [&](const ViewAlias& a) {
        return may_alias(binding_named(pass, a.input).arg, binding_named(pass, a.output).arg);
      });
      if (!all) continue;
      for (const ViewAlias& a : pass.view_alias) {
        const std::string& input = binding_named(pass, a.input).arg;
        PlanTensor& out = *plan.tensor(binding_named(pass, a.output).arg);
        const PlanTensor* in = plan.tensor(input);
        if (!in || in->storage != out.storage || in->gpu_bytes != out.gpu_bytes)
          fail(ErrorCode::InvalidArgument,
               "'" + out.name + "' cannot share the buffer of '" + input + "': their storage or size differ");
        out.alias_of = input;
        out.alias_index = static_cast<int>(in - plan.tensors.data());
      }
      plan.skipped_passes.push_back(pass.id);
    }
  }

  // ---- passes -------------------------------------------------------------------------------

  bool is_optional(const std::string& name) const {
    const TensorSpec* t = spec_.tensor(name);
    return t && t->optional;
  }

  PlanBinding tensor_binding(const PassSpec& pass, const PassBinding& b, const Scope& scope, const KernelPlan& plan) const {
    const PlanTensor* tensor = plan.tensor(b.arg);
    if (!tensor) fail(ErrorCode::Unsupported, "pass '" + pass.id + "' binds '" + b.arg + "', which is absent");
    PlanBinding out;
    out.name = b.name;
    out.tensor = b.arg;
    out.tensor_index = static_cast<int>(tensor - plan.tensors.data());
    out.role = tensor->is_scratch ? BindingRole::Scratch : tensor->is_output ? BindingRole::Output : BindingRole::Input;
    out.access = tensor->is_output || tensor->is_scratch ? BindingAccess::ReadWrite : BindingAccess::Read;
    out.element_type = tensor->storage.scalar;
    if (!b.element_type.empty() && b.element_type[0] == '$') {
      const auto value = scope.find(b.element_type.substr(1));
      if (!value || !value->is_string() || !is_storage_element_type(value->as_string()))
        fail(ErrorCode::Runtime, pass.path + ": binding '" + b.name + "': elementType " + b.element_type + " = " +
                                     (value ? value->repr() : "undefined") + " is not a WGSL element type");
      out.element_type = value->as_string();
    } else if (!b.element_type.empty()) {
      out.element_type = b.element_type;
    }
    if (element_scalar(out.element_type) != tensor->storage.scalar)
      fail(ErrorCode::Runtime, pass.path + ": binding '" + b.name + "' has element type " + out.element_type + " but '" + b.arg +
                                   "' is stored as " + tensor->storage.scalar + " (" + storage_kind_name(tensor->storage.kind) +
                                   " " + std::string(dtype_name(tensor->dtype)) + ")");
    return out;
  }

  // The fields of uniform binding `decl` at their offsets; `size` gets the struct's size.
  static std::vector<UniformField> laid_out_fields(const BindingDecl& decl, uint32_t& size) {
    std::vector<UniformField> fields;
    for (const auto& f : decl.fields) fields.push_back({f.name, f.type, 0});
    size = lay_out_uniform(fields);
    return fields;
  }

  PlanBinding params_binding(const PassBinding& b, const Scope& scope, std::vector<uint8_t>& bytes, List& fields_out) const {
    const BindingDecl& decl = spec_.bindings.at(b.name);
    uint32_t size = 0;
    const std::vector<UniformField> fields = laid_out_fields(decl, size);
    bytes.assign(size, 0);
    for (size_t i = 0; i < fields.size(); ++i) {
      const Expr& e = decl.fields[i].value;
      const std::string error = write_uniform(fields[i], e.evaluate(scope), bytes);
      // A value the field's type cannot represent (a 64-bit ONNX dim past u32) is a request this
      // kernel cannot take, not a bad spec: Unsupported lets the caller run the CPU reference.
      if (!error.empty()) throw Error(ErrorCode::Unsupported, e.locate(1, "params field '" + fields[i].name + "': " + error));
      fields_out.push_back(Value(
          Object{{"name", Value(fields[i].name)}, {"type", Value(fields[i].type.wgsl())}, {"offset", Value(fields[i].offset)}}));
    }
    PlanBinding out;
    out.name = b.name;
    out.role = BindingRole::Params;
    out.access = BindingAccess::Uniform;
    out.element_type = "Params";
    return out;
  }

  void check_alias_bindings(const PassSpec& pass, const std::vector<PlanBinding>& bindings, const KernelPlan& plan) const {
    for (const PlanBinding& b : bindings) {
      const PlanTensor* t = b.role == BindingRole::Output ? plan.tensor(b.tensor) : nullptr;
      if (!t || t->alias_of.empty()) continue;
      for (const PlanBinding& other : bindings)
        if (other.tensor == t->alias_of)
          fail(ErrorCode::Runtime, "pass '" + pass.id + "' binds both '" + t->alias_of + "' and '" + t->name +
                                       "', which share one buffer (viewAlias); bind only '" + t->name + "'");
    }
  }

  std::array<uint32_t, 3> dispatch(const PassSpec& pass, const Scope& scope) const {
    const int64_t limit = device_.max_workgroups_per_dimension;
    if (limit <= 0) fail(ErrorCode::InvalidArgument, "the device allows no workgroups (maxComputeWorkgroupsPerDimension 0)");
    std::array<int64_t, 3> size{};
    if (pass.workgroups) {
      const int64_t n = to_int(pass.workgroups->evaluate(scope), *pass.workgroups, "workgroups");
      if (n < 0) throw Error(ErrorCode::Runtime, pass.workgroups->locate(1, "workgroups is negative: " + std::to_string(n)));
      const auto folded = fold_workgroup_count(static_cast<uint64_t>(n), static_cast<uint64_t>(limit));
      for (size_t i = 0; i < 3; ++i) size[i] = static_cast<int64_t>(folded[i]);
    } else {
      const std::optional<Expr>* axes[3] = {&pass.x, &pass.y, &pass.z};
      for (int i = 0; i < 3; ++i)
        size[static_cast<size_t>(i)] = to_int((*axes[i])->evaluate(scope), **axes[i], std::string(1, "xyz"[i]));
    }
    std::array<uint32_t, 3> out{};
    for (size_t i = 0; i < 3; ++i) {
      if (size[i] < 0 || size[i] > limit)
        fail(ErrorCode::Runtime, "pass '" + pass.id + "': dispatch " + std::string(1, "xyz"[i]) + " = " +
                                     std::to_string(size[i]) + " lies outside [0, " + std::to_string(limit) +
                                     "] (maxComputeWorkgroupsPerDimension)");
      out[i] = static_cast<uint32_t>(size[i]);
    }
    return out;
  }

  // The derive layers a pass sees: the spec's and the variant's.
  struct Layers {
    const DeriveScope* spec;
    const DeriveScope* variant;
  };

  PlanPass build_pass(const VariantSpec& variant, Layers layers, const PassSpec& pass, const KernelPlan& plan) const {
    DeriveScope scope(pass.derive, *layers.variant);
    PlanPass out;
    out.id = pass.id;
    out.name = pass.name;
    out.shader = pass.shader;
    out.entry_point = pass.entry_point;
    out.runtime_checks = pass.runtime_checks;
    List binding_values, param_fields;
    bool uses_f16 = false;
    for (const PassBinding& b : pass.bindings) {
      // An optional tensor the request leaves out is not bound (Clip without a_max).
      if (!b.uniform && !plan.tensor(b.arg) && is_optional(b.arg)) continue;
      PlanBinding pb = b.uniform ? params_binding(b, scope, out.params, param_fields) : tensor_binding(pass, b, scope, plan);
      pb.index = static_cast<uint32_t>(out.bindings.size());
      uses_f16 = uses_f16 || pb.element_type.find("f16") != std::string::npos;
      binding_values.push_back(Value(Object{{"name", Value(pb.name)},
                                            {"index", Value(pb.index)},
                                            {"type", Value(pb.element_type)},
                                            {"access", Value(binding_access_name(pb.access))},
                                            {"uniform", Value(pb.role == BindingRole::Params)},
                                            {"tensor", Value(pb.tensor)}}));
      out.bindings.push_back(std::move(pb));
    }
    for (const Value& f : param_fields) uses_f16 = uses_f16 || f.member("type")->as_string().find("f16") != std::string::npos;
    if (uses_f16 && !device_.shader_f16)
      fail(ErrorCode::Unsupported,
           "float16 is not supported on this device (no shader-f16): pass '" + pass.id + "' needs f16 storage");
    check_alias_bindings(pass, out.bindings, plan);
    out.dispatch = dispatch(pass, scope);
    ObjectScope context(
        Object{{"bindings", Value(binding_values)},
               {"paramFields", Value(param_fields)},
               {"pass", Value(Object{{"id", Value(pass.id)}, {"name", Value(pass.name)}, {"variant", Value(variant.id)}})},
               {"entryPoint", Value(pass.entry_point)},
               {"usesF16", Value(uses_f16)},
               {"bf16Outputs", Value(writes_bfloat16(out.bindings, plan))}},
        &scope);
    out.wgsl = render(pass, context);
    for (const DeriveScope* layer : {layers.spec, layers.variant, static_cast<const DeriveScope*>(&scope)})
      layer->append_all(out.derived);
    return out;
  }

  // Whether the pass writes a bfloat16 output (stored widened to f32): its template rounds what it
  // stores with wgml_out (common/prelude.wgsl.jinja).
  static bool writes_bfloat16(const std::vector<PlanBinding>& bindings, const KernelPlan& plan) {
    return std::any_of(bindings.begin(), bindings.end(), [&](const PlanBinding& b) {
      return b.role == BindingRole::Output && plan.tensor(b.tensor)->dtype == DType::BFloat16;
    });
  }

  // ---- dynamic attributes (kernel/dynamic_plan.h) ---------------------------------------------

  // Derived values by layer (spec, variant, pass) and the scopes of layers 0-3.
  class LayerNames : public PlanNames {
   public:
    LayerNames(std::array<const std::vector<DeriveEntry>*, 3> layers, std::array<const Scope*, 4> scopes)
        : layers_(layers), scopes_(scopes) {}
    const DeriveEntry* derived(std::string_view name, int layer, int& defined_in) const override {
      for (int l = std::min(layer, 3); l >= 1; --l)
        for (const DeriveEntry& e : *layers_[static_cast<size_t>(l - 1)])
          if (e.name == name) {
            defined_in = l;
            return &e;
          }
      return nullptr;
    }
    const Scope& scope(int layer) const override { return *scopes_[static_cast<size_t>(layer)]; }

   private:
    std::array<const std::vector<DeriveEntry>*, 3> layers_;
    std::array<const Scope*, 4> scopes_;
  };

  // Whether the tensors (ranks, shapes, dtypes, value ranges) and scratch may read the dynamic
  // attributes: then they are not params alone.
  bool tensors_depend(const VariantSpec& variant, const DynamicCompiler& c) const {
    for (const auto* list : {&spec_.inputs, &spec_.outputs})
      for (const TensorSpec& t : *list) {
        if ((t.rank && c.depends(*t.rank, 1)) || (t.shape && c.depends(*t.shape, 1)) ||
            (t.dtype_expr && c.depends(*t.dtype_expr, 1)))
          return true;
        if ((t.range_min && c.depends(*t.range_min, 1)) || (t.range_max && c.depends(*t.range_max, 1))) return true;
        if (std::find(request_.dynamic_attributes.begin(), request_.dynamic_attributes.end(), t.dtype_attribute) !=
            request_.dynamic_attributes.end())
          return true;
      }
    return std::any_of(variant.scratch.begin(), variant.scratch.end(),
                       [&](const TensorSpec& t) { return t.shape && c.depends(*t.shape, 2); });
  }

  // `conditions` at `layer` that read the dynamic attributes, compiled into `out` (with `all`, the
  // others too); false when one does not compile.
  static bool compile_conditions(const std::vector<Expr>& conditions, int layer, const DynamicCompiler& c, bool all,
                                 std::vector<IntProgram>& out) {
    for (const Expr& e : conditions) {
      if (!all && !c.depends(e, layer)) continue;
      auto program = c.compile(e, layer);
      if (!program) return false;
      out.push_back(std::move(*program));
    }
    return true;
  }

  // The variants tried before `chosen` (choose_variant's order) whose rejection may change with the
  // dynamic attributes, compiled into `d`; false when one does not compile.
  bool compile_rejected(const VariantSpec& chosen, const DeriveScope& spec_scope, DynamicPlan& d) const {
    static const std::vector<DeriveEntry> none;
    std::vector<const VariantSpec*> order;
    for (const auto& v : spec_.variants) order.push_back(&v);
    std::stable_sort(order.begin(), order.end(),
                     [](const VariantSpec* a, const VariantSpec* b) { return a->priority > b->priority; });
    for (const VariantSpec* v : order) {
      if (v == &chosen) break;
      DeriveScope scope(v->derive, spec_scope);
      LayerNames names({&spec_.derive, &v->derive, &none}, {&base_, &spec_scope, &scope, &scope});
      const DynamicCompiler c(request_.dynamic_attributes, names);
      if (std::none_of(v->when.begin(), v->when.end(), [&](const Expr& e) { return c.depends(e, 2); })) continue;
      d.rejected.emplace_back();
      if (!compile_conditions(v->when, 2, c, true, d.rejected.back())) return false;
    }
    return true;
  }

  // The params fields and dispatch sizes of `pass` (the plan's `index`) that read the dynamic
  // attributes, compiled into `d`; false when its WGSL may read them or one does not compile.
  bool compile_pass(size_t index, const PassSpec& pass, const DynamicCompiler& c, DynamicPlan& d) const {
    for (const Expr::NameUse& use : pass.template_reads)
      if (c.depends(use, 3)) return false;
    for (const PassBinding& b : pass.bindings) {
      if (!b.element_type.empty() && b.element_type[0] == '$' && c.depends(Expr::NameUse{b.element_type.substr(1), "", 0}, 3))
        return false;
      if (!b.uniform) continue;
      const BindingDecl& decl = spec_.bindings.at(b.name);
      uint32_t size = 0;
      const std::vector<UniformField> fields = laid_out_fields(decl, size);
      for (size_t i = 0; i < fields.size(); ++i) {
        if (!c.depends(decl.fields[i].value, 3)) continue;
        const UniformType& type = fields[i].type;
        if (type.lanes != 1 || type.array_count != 0 || (type.scalar != "u32" && type.scalar != "i32")) return false;
        auto program = c.compile(decl.fields[i].value, 3);
        if (!program) return false;
        d.fields.push_back({index, fields[i].offset, type.scalar == "i32", std::move(*program)});
      }
    }
    const std::optional<Expr>* axes[3] = {&pass.x, &pass.y, &pass.z};
    const bool folded = pass.workgroups.has_value();
    if (folded ? !c.depends(*pass.workgroups, 3)
               : std::none_of(axes, axes + 3, [&](const std::optional<Expr>* a) { return c.depends(**a, 3); }))
      return true;
    DynamicPlan::Dispatch dispatch{index, folded, {}};
    for (size_t axis = 0; axis < (folded ? 1 : 3); ++axis) {
      auto program = c.compile(folded ? *pass.workgroups : **axes[axis], 3);
      if (!program) return false;
      dispatch.sizes[axis] = std::move(*program);
    }
    d.dispatches.push_back(std::move(dispatch));
    return true;
  }

  std::shared_ptr<const DynamicPlan> dynamic_plan(const VariantSpec& variant, const DeriveScope& spec_scope,
                                                  const DeriveScope& variant_scope, const KernelPlan& plan) const {
    static const std::vector<DeriveEntry> none;
    auto d = std::make_shared<DynamicPlan>();
    for (const std::string& name : request_.dynamic_attributes) {
      const AttributeSpec* a = spec_.attribute(name);
      if (!a || !attrs_.at(name).is_int()) return nullptr;
      d->attributes.push_back({name, a->allowed, a->min, a->max});
    }
    const LayerNames names({&spec_.derive, &variant.derive, &none}, {&base_, &spec_scope, &variant_scope, &variant_scope});
    const DynamicCompiler c(request_.dynamic_attributes, names);
    if (tensors_depend(variant, c) || !compile_conditions(spec_.when, 1, c, false, d->conditions) ||
        !compile_conditions(variant.when, 2, c, false, d->conditions) || !compile_rejected(variant, spec_scope, *d))
      return nullptr;
    for (size_t i = 0; i < plan.passes.size(); ++i) {
      const auto pass = std::find_if(variant.passes.begin(), variant.passes.end(),
                                     [&](const PassSpec& p) { return p.id == plan.passes[i].id; });
      DeriveScope pass_scope(pass->derive, variant_scope);
      const LayerNames pass_names({&spec_.derive, &variant.derive, &pass->derive},
                                  {&base_, &spec_scope, &variant_scope, &pass_scope});
      if (!compile_pass(i, *pass, DynamicCompiler(request_.dynamic_attributes, pass_names), *d)) return nullptr;
    }
    return d;
  }

  // The pass's WGSL: from the render cache when its template read the same values before.
  std::shared_ptr<const std::string> render(const PassSpec& pass, const Scope& context) const {
    if (!renders_) return std::make_shared<const std::string>(pass.shader_template->render(context));
    std::string key = spec_.file + "|" + pass.path;
    for (const Expr::NameUse& use : pass.template_reads) {
      std::optional<Value> value = context.find(use.name);
      if (value && !use.member.empty() && value->is_object()) {
        const Value* member = value->member(use.member);
        value = member ? std::optional<Value>(*member) : std::nullopt;
      }
      key += '|';
      key += use.name;
      key += '.';
      key += use.member;
      if (value) value->append_key(key);
    }
    if (auto cached = renders_->find(key)) return cached;
    return renders_->insert(key, pass.shader_template->render(context));
  }

  const KernelSpec& spec_;
  const KernelRequest& request_;
  const DeviceCaps& device_;
  const std::map<std::string, int64_t> tunables_;
  RenderCache* renders_;
  std::map<std::string, DType> type_vars_;
  std::map<std::string, std::string> type_source_;
  std::map<std::string, StorageType> storage_;
  std::map<std::string, Shape> shapes_;
  Object shapes_obj_, ranks_obj_, dtypes_obj_, types_obj_, attrs_, values_obj_;
  ObjectScope base_{Object{}};
};

}  // namespace

std::shared_ptr<const std::string> RenderCache::find(const std::string& key) const {
  std::lock_guard lock(mutex_);
  const auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : it->second;
}

std::shared_ptr<const std::string> RenderCache::insert(const std::string& key, std::string wgsl) {
  std::lock_guard lock(mutex_);
  ++renders_;
  if (entries_.size() >= kMaxEntries) entries_.clear();
  auto text = std::make_shared<const std::string>(std::move(wgsl));
  entries_.emplace(key, text);
  return text;
}

uint64_t RenderCache::renders() const {
  std::lock_guard lock(mutex_);
  return renders_;
}

KernelPlan plan_request(const KernelSpec& spec, const KernelRequest& request, const DeviceCaps& device,
                        const TunableOverrides& tunables, RenderCache* renders) {
  if (spec.view) throw Error(ErrorCode::InvalidArgument, spec.qualified_name() + " is a view: it has no kernel to plan");
  return Planner(spec, request, device, tunables, renders).run();
}

}  // namespace wgml::kernel
