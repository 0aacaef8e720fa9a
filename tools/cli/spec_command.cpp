#include "spec_command.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "kernel/engine.h"
#include "wgml/error.h"

namespace wgml::cli {

namespace {

[[noreturn]] void bad_argument(const std::string& option, const std::string& value, const std::string& expected) {
  throw Error(ErrorCode::InvalidArgument, option + " " + value + ": expected " + expected);
}

// "NAME=VALUE" -> (NAME, VALUE).
std::pair<std::string, std::string> split_setting(const std::string& option, const std::string& setting) {
  const size_t eq = setting.find('=');
  if (eq == std::string::npos || eq == 0) bad_argument(option, setting, "NAME=VALUE");
  return {setting.substr(0, eq), setting.substr(eq + 1)};
}

// "2x4x8" or "2,4,8"; empty for a scalar.
Shape parse_shape(const std::string& setting, const std::string& text) {
  Shape shape;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = text.find_first_of("x,", pos);
    const std::string dim = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (dim.empty() || dim.find_first_not_of("0123456789") != std::string::npos || dim.size() > 12)
      bad_argument("--shapes", setting, "NAME=D0xD1x... with non-negative dimensions");
    shape.push_back(std::stoll(dim));
    pos = end == std::string::npos ? text.size() : end + 1;
  }
  return shape;
}

// A JSON number, bool, string or list; anything else is taken as a plain string (mode=circular).
kernel::Value parse_attribute(const std::string& text) {
  const auto json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded()) return kernel::Value(text);
  const std::function<kernel::Value(const nlohmann::json&)> convert = [&](const nlohmann::json& j) -> kernel::Value {
    if (j.is_boolean()) return kernel::Value(j.get<bool>());
    if (j.is_number_integer()) return kernel::Value(j.get<int64_t>());
    if (j.is_number()) return kernel::Value(j.get<double>());
    if (j.is_array()) {
      kernel::List items;
      for (const auto& item : j) items.push_back(convert(item));
      return kernel::Value(std::move(items));
    }
    return kernel::Value(j.is_string() ? j.get<std::string>() : text);
  };
  return convert(json);
}

std::string hex(const std::vector<uint8_t>& bytes) {
  std::string text;
  char byte[4];
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::snprintf(byte, sizeof byte, "%02x", bytes[i]);
    text += (i ? " " : "") + std::string(byte);
  }
  return text;
}

void print_tensor_spec(const kernel::TensorSpec& t) {
  std::cout << "  " << t.name;
  if (t.onnx != t.name) std::cout << " (onnx " << t.onnx << ")";
  std::cout << ": " << t.dtype;
  if (t.optional) std::cout << ", optional";
  if (t.host_values) std::cout << ", values read on the host";
  if (t.rank) std::cout << ", rank " << t.rank->text();
  if (t.shape) std::cout << ", shape " << t.shape->text();
  if (!t.storage.empty()) std::cout << ", storage " << t.storage;
  if (!t.narrowing.empty()) std::cout << ", narrowing " << t.narrowing;
  if (t.range_min) std::cout << ", valueRange [" << t.range_min->text() << ", " << t.range_max->text() << "]";
  std::cout << "\n";
}

void print_pass_spec(const kernel::PassSpec& p) {
  std::cout << "    pass " << p.id << " (" << p.name << "): " << p.shader << "\n      bindings:";
  for (const auto& b : p.bindings) {
    std::cout << " " << b.name;
    if (!b.uniform && b.arg != b.name) std::cout << "<-" << b.arg;
    if (!b.element_type.empty()) std::cout << ":" << b.element_type;
  }
  std::cout << "\n      dispatch: ";
  if (p.workgroups)
    std::cout << "workgroups " << p.workgroups->text() << " (folded)";
  else
    std::cout << "x " << p.x->text() << "; y " << p.y->text() << "; z " << p.z->text();
  std::cout << "\n";
  for (const auto& a : p.view_alias)
    std::cout << "      viewAlias: " << a.input << " -> " << a.output << " (skipped when they share a buffer)\n";
}

}  // namespace

SpecCommands::SpecCommands(CLI::App& app) {
  group_ = app.add_subcommand("spec", "Kernel specs: validate one, or render its WGSL for a request");
  group_->require_subcommand(1);
  const std::string default_templates = std::string(WGML_KERNELS_DIR) + "/wgsl";
  for (CLI::App** cmd : {&check_, &render_}) {
    const bool is_check = cmd == &check_;
    *cmd = group_->add_subcommand(is_check ? "check" : "render",
                                  is_check ? "Validate a spec and its templates; print its variants and passes"
                                           : "Print the chosen variant, derived values and rendered WGSL of one request");
    (*cmd)->add_option("file", file_, "Spec file (.json): a single spec or a family")->required();
    (*cmd)->add_option("--op", op_, "The op of a family file (check: all of them when left out)");
    (*cmd)->add_option("--templates", templates_, "Template directory (default " + default_templates + ")");
  }
  templates_ = default_templates;
  render_->add_option("--shapes", shapes_, "NAME=D0xD1x... per present input (outputs are computed)")->required();
  render_->add_option("--dtypes", dtypes_, "NAME=DTYPE per type variable (T=float32) or tensor");
  render_->add_option("--attrs", attrs_, "NAME=VALUE (a JSON value or a plain string)");
  render_->add_option("--values", values_, "NAME=[V0, V1, ...]: the elements of an input read on the host (\"values\": true)");
  render_->add_option("--tunable", tunables_, "Op.NAME=VALUE");
  render_->add_option("--tunables-file", tunables_file_, "Per-adapter tunables (JSON)");
  render_->add_option("--alias", aliases_, "INPUT=OUTPUT: let the output share the input's buffer (in place)");
  render_->add_flag("--no-f16", no_f16_, "Render for a device without shader-f16");
  render_->add_flag("--subgroups", subgroups_, "Render for a device with subgroup operations");
  render_->add_option("--max-workgroups", max_workgroups_, "maxComputeWorkgroupsPerDimension (default 65535)");
}

int SpecCommands::run() const { return *check_ ? check() : render(); }

// The specs of the file, or the one --op names.
std::vector<std::shared_ptr<const kernel::KernelSpec>> SpecCommands::load(kernel::Engine& engine) const {
  auto specs = engine.load(file_);
  if (op_.empty()) return specs;
  for (const auto& s : specs)
    if (s->name == op_) return {s};
  std::string names;
  for (const auto& s : specs) names += (names.empty() ? "" : ", ") + s->name;
  bad_argument("--op", op_, "an op of " + file_ + ": " + names);
}

int SpecCommands::check() const {
  kernel::Engine engine(templates_);
  for (const auto& s : load(engine)) print_spec(*s);
  std::cout << "ok: the spec and its templates are valid\n";
  return 0;
}

void SpecCommands::print_spec(const kernel::KernelSpec& spec) const {
  const kernel::KernelSpec* s = &spec;
  if (s->view) {
    std::cout << s->qualified_name() << ": a view (no kernel)\n";
    return;
  }
  std::cout << s->qualified_name() << " (since opset " << s->since_version << "): " << file_ << "\ninputs:\n";
  for (const auto& t : s->inputs) print_tensor_spec(t);
  std::cout << "outputs:\n";
  for (const auto& t : s->outputs) print_tensor_spec(t);
  for (const auto& a : s->attributes)
    std::cout << "attribute " << a.name << (a.default_value ? " = " + a.default_value->repr() : " (required)")
              << (a.allowed ? " in " + kernel::Value(*a.allowed).repr() : "") << "\n";
  for (const auto& [var, types] : s->type_constraints) {
    std::cout << "type " << var << ":";
    for (DType t : types) std::cout << " " << dtype_name(t);
    std::cout << "\n";
  }
  for (const auto& t : s->tunables) std::cout << "tunable " << t.name << " = " << t.default_value << "\n";
  std::vector<const kernel::VariantSpec*> order;
  for (const auto& v : s->variants) order.push_back(&v);
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->priority > b->priority; });
  std::cout << "variants (tried in this order):\n";
  for (const auto* v : order) {
    std::cout << "  " << v->id << " (priority " << v->priority << ")";
    for (size_t i = 0; i < v->when.size(); ++i) std::cout << (i ? " and " : " when ") << v->when[i].text();
    std::cout << "\n";
    for (const auto& p : v->passes) print_pass_spec(p);
  }
}

int SpecCommands::render() const {
  kernel::Engine engine(templates_);
  const auto specs = load(engine);
  if (specs.size() != 1)
    bad_argument("--op", op_, "the op to render: " + file_ + " is a family of " + std::to_string(specs.size()));
  const auto& s = specs.front();
  std::map<std::string, DType> dtypes;
  for (const auto& setting : dtypes_) {
    const auto [name, value] = split_setting("--dtypes", setting);
    const auto dtype = dtype_from_name(value);
    if (!dtype) bad_argument("--dtypes", setting, "NAME=DTYPE with a dtype such as float32");
    dtypes[name] = *dtype;
  }
  kernel::KernelRequest request;
  for (const auto& setting : shapes_) {
    const auto [name, value] = split_setting("--shapes", setting);
    const kernel::TensorSpec* t = s->input(name);
    if (!t) bad_argument("--shapes", setting, "the name of an input of " + s->name);
    const auto dtype = dtypes.count(name)       ? dtypes.at(name)
                       : dtypes.count(t->dtype) ? dtypes.at(t->dtype)
                                                : dtype_from_name(t->dtype);
    if (!dtype) bad_argument("--shapes", setting, "a dtype for it: --dtypes " + t->dtype + "=DTYPE or " + name + "=DTYPE");
    request.inputs[name] = {*dtype, parse_shape(setting, value)};
  }
  for (const auto& setting : attrs_) {
    const auto [name, value] = split_setting("--attrs", setting);
    request.attributes[name] = parse_attribute(value);
  }
  for (const auto& setting : values_) {
    const auto [name, value] = split_setting("--values", setting);
    const kernel::Value list = parse_attribute(value);
    if (!list.is_list()) bad_argument("--values", setting, "NAME=[V0, V1, ...], a JSON list of numbers");
    request.input_values[name] = list.as_list();
  }
  for (const auto& setting : aliases_) request.may_alias.push_back(split_setting("--alias", setting));
  kernel::TunableOverrides tunables;
  if (!tunables_file_.empty()) tunables.load_adapter_file(tunables_file_);
  for (const auto& setting : tunables_) tunables.add_run_override(setting);
  kernel::DeviceCaps device;
  device.shader_f16 = !no_f16_;
  device.subgroups = subgroups_;
  device.max_workgroups_per_dimension = max_workgroups_;

  const kernel::KernelPlan plan = engine.plan(*s, request, device, tunables);
  std::cout << "op: " << plan.op << "\nvariant: " << plan.variant << "\ntensors:\n";
  for (const auto& t : plan.tensors) {
    std::cout << "  " << t.name << ": "
              << (t.is_scratch  ? "scratch "
                  : t.is_output ? "output "
                                : "input ")
              << dtype_name(t.dtype) << " " << kernel::Value::int_list(t.shape).to_text() << ", stored as " << t.storage.scalar
              << " (" << kernel::storage_kind_name(t.storage.kind) << "), " << t.gpu_bytes << " bytes";
    if (t.value_range) std::cout << ", valueRange [" << t.value_range->min << ", " << t.value_range->max << "]";
    if (!t.alias_of.empty()) std::cout << ", shares the buffer of " << t.alias_of;
    std::cout << "\n";
  }
  for (const auto& id : plan.skipped_passes) std::cout << "skipped pass: " << id << " (its output shares its input's buffer)\n";
  for (const auto& p : plan.passes) {
    std::cout << "\npass " << p.id << " (" << p.name << ") from " << p.shader << ", entry point " << p.entry_point
              << "\n  derived:";
    for (const auto& [name, value] : p.derived) std::cout << " " << name << "=" << value.repr();
    std::cout << "\n  bindings:\n";
    for (const auto& b : p.bindings)
      std::cout << "    @binding(" << b.index << ") " << b.name << ": " << b.element_type << ", "
                << kernel::binding_access_name(b.access) << (b.tensor.empty() ? "" : " (" + b.tensor + ")") << "\n";
    if (!p.params.empty()) std::cout << "  params (" << p.params.size() << " bytes): " << hex(p.params) << "\n";
    std::cout << "  dispatch: " << p.dispatch[0] << " x " << p.dispatch[1] << " x " << p.dispatch[2] << "\n  wgsl:\n" << *p.wgsl;
  }
  return 0;
}

}  // namespace wgml::cli
