#include "kernel/engine.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "wgml/error.h"

namespace wgml::kernel {
namespace {

// The names templates see besides the spec's namespaces and derived values.
const std::vector<std::string>& template_globals() {
  static const std::vector<std::string> names = {"bindings", "paramFields", "pass", "entryPoint", "usesF16", "bf16Outputs"};
  return names;
}

// Each (name, member) a template reads, once, in a fixed order.
std::vector<Expr::NameUse> distinct_reads(const std::vector<Template::FreeName>& free_names) {
  std::vector<Expr::NameUse> reads;
  for (const auto& free : free_names) {
    const bool seen = std::any_of(reads.begin(), reads.end(),
                                  [&](const Expr::NameUse& r) { return r.name == free.use.name && r.member == free.use.member; });
    if (!seen) reads.push_back({free.use.name, free.use.member, 0});
  }
  return reads;
}

}  // namespace

Engine::Engine(std::string template_dir) : templates_(std::move(template_dir)) {}

void Engine::attach_templates(KernelSpec& spec) {
  NameTable table = NameTable::for_spec(spec);
  table.add_derived(spec.derive);
  for (const auto& name : template_globals()) table.add_plain(name);
  for (VariantSpec& variant : spec.variants) {
    NameTable variant_table = table;
    variant_table.add_derived(variant.derive);
    for (PassSpec& pass : variant.passes) {
      try {
        pass.shader_template = templates_.get(pass.shader);
      } catch (const Error& e) {
        throw Error(ErrorCode::InvalidFormat, spec.file + ": " + pass.path + ".shader: " + e.what());
      }
      NameTable pass_table = variant_table;
      pass_table.add_derived(pass.derive);
      const std::vector<Template::FreeName> free_names = pass.shader_template->free_names();
      pass.template_reads = distinct_reads(free_names);
      for (const auto& free : free_names) {
        try {
          pass_table.check(*free.expr, free.use);
        } catch (const Error& e) {
          throw Error(ErrorCode::InvalidFormat,
                      spec.file + ": " + pass.path + ": its template reads a name this pass does not define:\n" + e.what());
        }
      }
    }
  }
}

std::vector<std::shared_ptr<const KernelSpec>> Engine::load(const std::string& spec_path, const std::string& display_name) {
  std::vector<std::shared_ptr<const KernelSpec>> loaded;
  for (KernelSpec& spec : load_spec_file(spec_path, display_name)) loaded.push_back(add(std::move(spec)));
  return loaded;
}

std::shared_ptr<const KernelSpec> Engine::add(KernelSpec parsed) {
  auto spec = std::make_shared<KernelSpec>(std::move(parsed));
  attach_templates(*spec);
  specs_[{spec->domain, spec->name}] = spec;
  return spec;
}

void Engine::load_directory(const std::string& specs_dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(specs_dir))
    if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::map<std::pair<std::string, std::string>, std::string> defined_by;
  for (const auto& file : files) {
    for (const auto& spec : load(file.string(), kernels_folder_name(file.string(), specs_dir))) {
      const auto [it, first] = defined_by.emplace(std::make_pair(spec->domain, spec->name), spec->file);
      if (!first)
        throw Error(ErrorCode::InvalidFormat,
                    spec->file + ": " + spec->qualified_name() + " is already defined by " + it->second);
    }
  }
}

const KernelSpec* Engine::find(const std::string& domain, const std::string& op) const {
  const auto it = specs_.find({domain, op});
  return it == specs_.end() ? nullptr : it->second.get();
}

KernelPlan Engine::plan(const KernelSpec& spec, const KernelRequest& request, const DeviceCaps& device,
                        const TunableOverrides& tunables, RenderCache* renders) const {
  return plan_request(spec, request, device, tunables, renders);
}

}  // namespace wgml::kernel
