#pragma once
// kernel::Engine: loads kernel spec files and families (validating them and their templates) and
// turns a request (the op's tensors, attributes, a device) into a KernelPlan (kernel/plan.h) with
// kernel/planner.h. docs/kernels.md describes the format and these steps.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernel/planner.h"
#include "kernel/spec.h"
#include "kernel/template.h"
#include "kernel/tunables.h"

namespace wgml::kernel {

class Engine {
 public:
  // `template_dir`: where the specs' shader templates (and their includes) live.
  explicit Engine(std::string template_dir);

  // Parses and validates a spec file (a single spec or a family) and its templates (each exists
  // and compiles; every name a template reads is defined for each pass that renders it). Throws
  // wgml::Error naming the file. Returns the specs it holds, one per op.
  std::vector<std::shared_ptr<const KernelSpec>> load(const std::string& spec_path, const std::string& display_name = "");
  // The same for a spec already parsed (parse_spec).
  std::shared_ptr<const KernelSpec> add(KernelSpec spec);
  // Loads every spec file under `specs_dir`; an op defined by two files is an error.
  void load_directory(const std::string& specs_dir);
  const KernelSpec* find(const std::string& domain, const std::string& op) const;
  const std::map<std::pair<std::string, std::string>, std::shared_ptr<const KernelSpec>>& specs() const { return specs_; }

  // Throws wgml::Error: InvalidArgument when the request does not match the spec (a missing or
  // unknown input, a dtype outside typeConstraints, an attribute outside its constraints),
  // Unsupported when the spec's `when` or every variant rejects it (naming the condition), Runtime
  // when an expression fails.
  // With `renders`, a pass whose template read the same values as an earlier one reuses its WGSL.
  KernelPlan plan(const KernelSpec& spec, const KernelRequest& request, const DeviceCaps& device,
                  const TunableOverrides& tunables = {}, RenderCache* renders = nullptr) const;

 private:
  void attach_templates(KernelSpec& spec);
  TemplateLibrary templates_;
  std::map<std::pair<std::string, std::string>, std::shared_ptr<const KernelSpec>> specs_;
};

}  // namespace wgml::kernel
