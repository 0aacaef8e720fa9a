#pragma once
// Planning one request with one spec, the engine's work per kernel call (docs/kernels.md): matching
// and typeConstraints, the spec's `when`, the applicable variant of highest priority, derived
// values, bindings, the packed params struct, dispatch sizes, rendered WGSL (through the render
// cache), storage narrowing and view aliasing.
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernel/plan.h"
#include "kernel/spec.h"
#include "kernel/tunables.h"

namespace wgml::kernel {

// What the engine needs to know of the GPU.
struct DeviceCaps {
  bool shader_f16 = false;
  bool subgroups = false;  // WGSL `enable subgroups;` (subgroupAdd, subgroupMax, ...)
  uint32_t max_workgroups_per_dimension = 65535;
  uint64_t max_storage_binding_bytes = uint64_t{128} << 20;
};

struct TensorDesc {
  DType dtype = DType::Float32;
  Shape shape;
};

struct KernelRequest {
  std::map<std::string, TensorDesc> inputs;   // by the spec's input name; absent optional inputs left out
  std::map<std::string, TensorDesc> outputs;  // by name; computed from the spec's `shape` when left out
  // The optional outputs to produce (Split's first n parts); the others are left out.
  std::set<std::string> wanted_outputs;
  std::map<std::string, Value> attributes;  // absent ones take the spec's defaults
  // The elements of the inputs the spec reads on the host ("values": true), ints or floats by the
  // input's dtype, in row-major order.
  std::map<std::string, List> input_values;
  // (input, output) pairs the caller lets share one buffer: the in-place KV-cache update.
  std::vector<std::pair<std::string, std::string>> may_alias;
  // Int attributes whose values change from call to call (read from value slots: a cache
  // position): the plan then says how its params follow them (KernelPlan::dynamic).
  std::vector<std::string> dynamic_attributes;
};

// Rendered WGSL, found again by the values of the names its template read (PassSpec::
// template_reads). A template that reads ranks, dtypes and code-shaping attributes but no shapes
// renders once per shape class: a growing KV cache or a new sequence length finds the WGSL (and
// so the pipeline) of the previous step. Thread-safe.
class RenderCache {
 public:
  std::shared_ptr<const std::string> find(const std::string& key) const;
  std::shared_ptr<const std::string> insert(const std::string& key, std::string wgsl);
  uint64_t renders() const;  // templates rendered since the cache was made

 private:
  static constexpr size_t kMaxEntries = 4096;  // then cleared: only shape-baking templates get there
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const std::string>> entries_;
  uint64_t renders_ = 0;
};

// Throws wgml::Error: InvalidArgument when the request does not match the spec (a missing or
// unknown input, a dtype outside typeConstraints, an attribute outside its constraints, a view),
// Unsupported when the spec's `when` or every variant rejects it (naming the condition), Runtime
// when an expression fails.
KernelPlan plan_request(const KernelSpec& spec, const KernelRequest& request, const DeviceCaps& device,
                        const TunableOverrides& tunables, RenderCache* renders);

}  // namespace wgml::kernel
