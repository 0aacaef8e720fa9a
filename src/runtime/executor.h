#pragma once
// Executor: owns a loaded model's state and runs it with ExecuTorch MLX-runtime semantics.
// Constants are bound once, mutable buffers zero-filled once and kept across run() calls, the
// init chain runs once, the main chain gets the fused ops its backend runs (runtime/fusion.h), then the main-chain instructions
// that compute only from constants (runtime/constant_folding.h); per call the main chain runs with their results rebound. Control
// flow (Scan, If), value-slot arithmetic and slot copies are handled here for every backend; everything else goes to the backend.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/model.h"
#include "runtime/backend.h"
#include "runtime/constant_folding.h"
#include "runtime/copy_drops.h"
#include "runtime/exec_context.h"
#include "runtime/memory_watch.h"

namespace wgml::runtime {

// An input as errors name it ("model.pte: input 2"), the string made only when one is thrown.
struct InputLabel {
  const std::string& path;
  size_t index;
  bool unused = false;  // an input the program never reads
  std::string str() const;
};

class Executor {
 public:
  Executor(std::shared_ptr<const ir::Model> model, const Backend& backend);

  // Positional inputs in the method's order (Model::method_inputs, else input_map order); returns
  // outputs in the method's order (Model::method_outputs, else output_map order).
  std::vector<Value> run(const std::vector<Value>& inputs);
  // The same into `outputs` (cleared first): a caller that keeps the vector allocates none.
  void run(const std::vector<Value>& inputs, std::vector<Value>& outputs);
  // Back to the state after loading: mutable buffers zero, the init chain run again.
  void reset();

  const ir::Model& model() const { return *model_; }

  // Whether runs time every instruction and note what is live at their memory peak
  // (runtime/memory_watch.h); off by default.
  void profile(bool on) { profiling_ = on; }
  // The last profiled run's peak.
  const MemorySnapshot& memory_peak() const { return memory_watch_.peak(); }
  // Wall time per instruction name ("AddNode", "ai.onnx.Resize") over the profiled runs; control
  // flow is not timed itself (its bodies' instructions are). `native`: the executor ran it.
  struct OpTime {
    uint64_t calls = 0;
    double ms = 0;
    bool native = false;
  };
  const std::map<std::string, OpTime>& op_times() const { return op_times_; }

  // Node types this executor runs itself, whatever the backend.
  static bool handles_natively(size_t union_id);

 private:
  void bind_constants();
  void fold_constants();
  void zero_mutable_buffers();
  void bind_inputs(const std::vector<Value>& inputs);
  void bind_input(size_t i, const Value& v, const InputLabel& name);
  Value take_output(size_t i);
  void reset_transients();

  void run_chain(uint32_t chain);
  void drop_dead_copies(uint32_t chain, size_t index);
  void run_instruction(uint32_t chain, size_t index, const ir::Instruction& instruction);
  // Runs a node or ONNX op, its errors located at the instruction.
  void run_located(uint32_t chain, size_t index, const ir::Instruction& instruction);
  void run_node(const ir::Node& node);
  void run_onnx_op(const ir::OnnxOp& op);
  // Runs a fused op's kernel; false when the backend has none or the op does not fit it.
  bool run_fused_kernel(uint32_t chain, size_t index, const ir::OnnxOp& op);
  void run_scan(const ir::ScanNode& scan);
  void run_if(const ir::IfNode& node);
  std::string where(uint32_t chain, size_t index, const ir::Instruction& instruction) const;

  std::shared_ptr<const ir::Model> model_;
  const Backend& backend_;
  ExecContext ctx_;
  FoldingPlan folding_;
  // Per main-chain instruction that folded: the tensors it wrote, bound again where it stands.
  std::vector<std::vector<std::pair<ir::Tid, Tensor>>> folded_results_;
  // Per chain and instruction: the temps dead once it has run (runtime/release_plan.h).
  std::vector<std::vector<std::vector<ir::Tid>>> releases_;
  // Per chain and instruction: the host or device copies of temps dead once it has run.
  std::vector<std::vector<std::vector<CopyDrop>>> copy_drops_;
  bool profiling_ = false;
  MemoryWatch memory_watch_;
  std::map<std::string, OpTime> op_times_;
};

}  // namespace wgml::runtime
