#pragma once
// Bind once, launch many. The first GPU call of an instruction works out, by name, what its
// operands mean to its kernel spec: casts, plan, compiled pipelines, which operand feeds which
// plan tensor. A BoundCall keeps that per instruction; a later call whose operands have the same
// dtypes, shapes and value-slot values (its signature) reuses it and records its dispatches from
// slot indices alone: no field names, no maps, no plan-cache key. A decode step repeats the same
// few hundred calls every token, which makes that per-call path most of the host's work.
#include <array>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "backend/webgpu/plan_runner.h"
#include "ir/slots.h"
#include "kernel/plan.h"
#include "runtime/exec_context.h"

namespace wgml::backend::webgpu {

// One call's operands in a fixed order (a node's fields, an ONNX op's positions), without names.
struct CallOperands {
  std::vector<ir::Tid> inputs;
  std::vector<ir::Tid> outputs;
  std::vector<int64_t> values;  // what the call's value slots hold (positions, cache bounds), bit patterns for floats

  void clear() {
    inputs.clear();
    outputs.clear();
    values.clear();
  }
};

// `ops` and the context's tensors as the words a bound call is compared by: each input's dtype and
// shape, then the values, then for each input that is also an output slot whether its storage may
// be written in place (nothing but the slot holds it). Returns where the values start.
size_t call_signature(const runtime::ExecContext& ctx, const CallOperands& ops, std::vector<int64_t>& out);

struct BoundCall {
  std::vector<int64_t> signature;
  size_t values_begin = 0;  // where CallOperands::values start in the signature
  std::shared_ptr<const kernel::KernelPlan> plan;
  std::vector<const gpu::Kernel*> kernels;  // per pass
  // Per pass: the params and dispatch size of the last launch (the plan's, rewritten by its
  // DynamicPlan as the values change).
  std::vector<std::vector<uint8_t>> params;
  std::vector<std::array<uint32_t, 3>> dispatch;
  // Per CallOperands::values entry: the index of the DynamicPlan attribute it is, or -1 when the
  // plan holds it fixed; and the attributes' values in the DynamicPlan's order (scratch).
  std::vector<int> value_attribute;
  std::vector<int64_t> dynamic_values;
  // Per plan tensor: the index of its operand in CallOperands::inputs (inputs) or ::outputs
  // (outputs), -1 for scratch.
  std::vector<int> operand;
  uint64_t* calls = nullptr;  // the op's Placement::on_gpu counter
  GpuBuffers buffers;         // reused by every launch
};

// The bound calls of one execution, by instruction.
class BoundCalls {
 public:
  // Records `ops` with the bound call of `instruction` and returns true when its signature is the
  // one bound; false (nothing recorded) otherwise, or when an input does not fit its storage.
  bool launch(runtime::ExecContext& ctx, const std::shared_ptr<GpuContext>& gpu, const void* instruction,
              const CallOperands& ops);
  // The signature of `ops` as launch() last computed it: what bind() keeps.
  const std::vector<int64_t>& last_signature() const { return signature_; }
  size_t last_values_begin() const { return values_begin_; }
  void bind(const void* instruction, BoundCall call) { calls_[instruction] = std::move(call); }
  void unbind(const void* instruction) { calls_.erase(instruction); }
  size_t size() const { return calls_.size(); }
  // Scratch for the call being run: its operands are read once, into the same vectors every call.
  CallOperands& operands() { return operands_; }

 private:
  // Whether `call` follows the values of `ops` (a signature that differs from its own in them
  // alone) by rewriting its params: then its signature is signature_.
  bool follow_values(BoundCall& call, const CallOperands& ops, uint32_t max_workgroups_per_dimension);

  std::unordered_map<const void*, BoundCall> calls_;
  CallOperands operands_;
  size_t values_begin_ = 0;
  std::vector<int64_t> signature_;
};

}  // namespace wgml::backend::webgpu
