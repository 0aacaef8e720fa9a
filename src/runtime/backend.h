#pragma once
// A backend executes IR instructions. It registers one kernel per node type (domain `mlx`) and per
// kept ONNX op it supports; the executor handles control flow and value-slot arithmetic itself,
// identically for every backend.
#include <array>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "ir/program.h"
#include "runtime/exec_context.h"

namespace wgml::runtime {

using KernelFn = void (*)(const ir::Node&, ExecContext&);
using OnnxKernelFn = void (*)(const ir::OnnxOp&, ExecContext&);
// Runs a fused op (runtime/fusion.h) as one kernel; false when it does not fit one, and then the
// executor runs the op's parts.
using FusedKernelFn = bool (*)(const ir::OnnxOp&, ExecContext&);

class KernelTable {
 public:
  template <class N, void (*F)(const N&, ExecContext&)>
  void add() {
    table_[N::kUnionId] = [](const ir::Node& n, ExecContext& ctx) { F(std::get<N>(n), ctx); };
  }
  void set(size_t union_id, KernelFn fn) { table_.at(union_id) = fn; }
  KernelFn find(size_t union_id) const { return union_id < table_.size() ? table_[union_id] : nullptr; }

  // Kernels of ONNX ops kept in their own domain ("ai.onnx", ...), found by (domain, op_type).
  void add_onnx(std::string domain, std::string op_type, OnnxKernelFn fn) { onnx_[{std::move(domain), std::move(op_type)}] = fn; }
  OnnxKernelFn find_onnx(std::string_view domain, std::string_view op_type) const {
    auto it = onnx_.find(std::pair<std::string, std::string>(domain, op_type));
    return it == onnx_.end() ? nullptr : it->second;
  }
  const std::map<std::pair<std::string, std::string>, OnnxKernelFn>& onnx_kernels() const { return onnx_; }

  // Set by a backend that runs fused ops: the executor then fuses the programs it runs.
  void set_fused(FusedKernelFn fn) { fused_ = fn; }
  FusedKernelFn fused() const { return fused_; }

 private:
  std::array<KernelFn, ir::kMaxNodeUnionId + 1> table_{};
  std::map<std::pair<std::string, std::string>, OnnxKernelFn> onnx_;
  FusedKernelFn fused_ = nullptr;
};

// Where an instruction reads its tensors' bytes: on the host (a CPU kernel), on the device (a GPU
// kernel), or either or neither (a view, control flow, a kernel chosen at run time).
enum class ReadSide { Host, Device, Unknown };

// The device memory a backend holds, in bytes (all zero for the CPU backend: its tensors are host
// memory, counted by host_tensor_memory).
struct DeviceMemory {
  uint64_t allocated = 0;  // buffers made and not destroyed, free ones included
  uint64_t in_use = 0;     // buffers holding tensors or scratch now
  uint64_t peak_allocated = 0;
  uint64_t peak_in_use = 0;
  uint64_t buffers_in_use = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  virtual const KernelTable& kernels() const = 0;
  // Called once per executor before anything runs: a backend puts its per-device state into the
  // context (ExecContext::set_backend_state) for its kernels to find.
  virtual void attach(ExecContext& ctx) const {}
  // Called after each run's main chain: a backend starts the work it has queued.
  virtual void end_run(ExecContext& ctx) const {}
  // Called for each tensor an instruction folded at load wrote (runtime/constant_folding.h), right
  // after it ran: a backend may keep it in a more compact form, since it lives as long as the model.
  virtual void settle_folded(const Tensor& t) const {}
  // Called once the constants are folded and those nothing reads anymore let go: a backend may give
  // back the memory that load-time work used.
  virtual void end_load() const {}
  virtual DeviceMemory device_memory() const { return {}; }
  // Where `instruction` reads its tensors (runtime/copy_drops.h). Unknown unless a backend knows.
  virtual ReadSide read_side(const ir::Instruction& instruction) const { return ReadSide::Unknown; }
  // Starts new peaks of device_memory() from what is held now.
  virtual void reset_device_peaks() const {}
};

}  // namespace wgml::runtime
