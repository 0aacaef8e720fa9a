#pragma once
// KernelPlan: everything a GPU backend needs to run one op, with no knowledge of specs: the
// tensors (how each is stored on the GPU and how big its buffer is), and the passes in order,
// each with its rendered WGSL, entry point, bindings, uniform bytes and dispatch size.
//
// A backend runs a plan like this:
//   1. For each tensor: an input is uploaded as its bytes in t.storage, range-checked against
//      t.value_range (the WebGPU backend's host_packing.h) into a buffer of t.gpu_bytes; an output gets a buffer of
//      t.gpu_bytes, except when t.alias_of names an input: then it *is* that input's buffer.
//   2. For each pass: a pipeline from (wgsl, entry_point) (cache it by wgsl), a bind group with
//      binding i -> the buffer of bindings[i].tensor (storage, read-only when bindings[i].access is
//      Read) or a uniform holding `params` (role Params), then dispatch(dispatch[0..2]).
//   3. Outputs are downloaded and converted back from t.storage.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernel/storage.h"
#include "kernel/value.h"

namespace wgml::kernel {

struct DynamicPlan;  // kernel/dynamic_plan.h

struct PlanTensor {
  std::string name;  // the spec's name
  std::string onnx;  // the ONNX name
  bool is_output = false;
  bool is_scratch = false;  // a variant's temporary: written and read by its passes, never returned
  DType dtype = DType::Float32;
  Shape shape;
  StorageType storage;
  uint64_t gpu_bytes = 0;                 // buffer size (whole u32 words)
  std::optional<ValueRange> value_range;  // inputs: checked on upload; outputs: what the kernel guarantees
  std::string alias_of;                   // outputs: the input whose buffer this output shares
  int alias_index = -1;                   // that input's index in KernelPlan::tensors
};

enum class BindingRole { Input, Output, Scratch, Params };
enum class BindingAccess { Read, ReadWrite, Uniform };
const char* binding_role_name(BindingRole role);
const char* binding_access_name(BindingAccess access);

struct PlanBinding {
  uint32_t index = 0;  // @group(0) @binding(index)
  std::string name;    // the WGSL variable
  BindingRole role = BindingRole::Input;
  BindingAccess access = BindingAccess::Read;
  std::string tensor;        // PlanTensor::name; empty for Params
  int tensor_index = -1;     // its index in KernelPlan::tensors; -1 for Params
  std::string element_type;  // WGSL element of the array<...>, or "Params" for the uniform struct
};

struct PlanPass {
  std::string id;
  std::string name;    // for profiles: "TensorScatter.Scatter"
  std::string shader;  // the template it was rendered from
  std::string entry_point;
  bool runtime_checks = true;  // PassSpec::runtime_checks
  // Shared by every plan whose template read the same values (Engine's RenderCache): the same
  // pointer means the same code, so a backend may key its compiled pipelines by it.
  std::shared_ptr<const std::string> wgsl;
  std::vector<PlanBinding> bindings;
  std::vector<uint8_t> params;  // the uniform struct's bytes (empty when the pass has none)
  std::array<uint32_t, 3> dispatch{1, 1, 1};
  std::vector<std::pair<std::string, Value>> derived;  // variant and pass derive values, in order
};

struct KernelPlan {
  std::string op;                   // "ai.onnx.TensorScatter"
  std::string variant;              // the chosen variant's id
  std::vector<PlanTensor> tensors;  // present inputs, then outputs, in spec order
  std::vector<PlanPass> passes;
  std::vector<std::string> skipped_passes;  // ids of copy passes made unnecessary by aliasing
  // How the params and dispatch sizes follow the request's dynamic attributes while the rest of the
  // request stays as it is; null when it named none, or when what they feed cannot be recomputed
  // alone (a shape, the WGSL, a float).
  std::shared_ptr<const DynamicPlan> dynamic;

  const PlanTensor* tensor(const std::string& name) const;
  PlanTensor* tensor(const std::string& name);
};

}  // namespace wgml::kernel
