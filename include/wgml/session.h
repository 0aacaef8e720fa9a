#pragma once
// wgml::Session: load a model file once, run it many times.
//
//   wgml::Session session("model.pte");
//   auto outputs = session.run({wgml::Tensor::from_bytes(wgml::DType::Float32, {2, 16}, data)});
//
// A Session keeps the program's mutable buffers (KV caches) across run() calls, until reset().
// It is not thread-safe: one run() at a time.
#include <memory>
#include <string>
#include <vector>

#include "wgml/error.h"
#include "wgml/tensor.h"

namespace wgml {

struct SessionOptions {
  // "cpu" (the reference backend) or "webgpu" (nodes with kernels on the GPU, the rest on the CPU).
  std::string device = "cpu";
  std::string constants_path;         // constants for a standalone .mlxg payload
  std::string adapter;                // webgpu: an adapter index or part of its name; empty for the best
  std::vector<std::string> tunables;  // webgpu: "Op.NAME=VALUE" kernel tunable overrides
  std::string tunables_file;          // webgpu: a per-adapter tunables JSON file
  bool profile = false;               // webgpu: time every GPU dispatch (Session::profile)
};

// Time spent per op kind, summed over the runs since the last call of Session::profile().
struct OpProfile {
  std::string op;  // a kernel pass ("Add", "TensorScatter.Scatter") or a node run on the CPU
  // "webgpu"; "cpu" (a fallback); "host" (positions or shape arithmetic from values the host holds);
  // or "view" (a shape change of a GPU tensor: nothing runs)
  std::string device;
  uint64_t calls = 0;
  double total_ms = 0;  // GPU time from timestamp queries; wall time on the CPU
  std::string note;     // for a node run on the CPU instead of the GPU: why
};

// What one run() did on the GPU besides computing: a steady decode step (after its first two)
// makes no plans, renders no kernels, compiles no pipelines and creates no buffers. Zero on the CPU.
struct RunStats {
  uint64_t plans_made = 0;           // kernel plans made for requests not seen before
  uint64_t kernels_rendered = 0;     // WGSL rendered from templates (a shape class not seen before)
  uint64_t pipelines_compiled = 0;   // compute pipelines compiled
  uint64_t buffers_created = 0;      // GPU buffers created (not reused from the pool)
  uint64_t bind_groups_created = 0;  // GPU bind groups created (not found in the recorder's cache)
  uint64_t submits = 0;              // queue submissions
  uint64_t dispatches = 0;           // compute dispatches
  uint64_t bytes_uploaded = 0;       // host to GPU
  uint64_t bytes_read = 0;           // GPU to host (outputs read, CPU fallbacks' inputs)
};

// What happened between two snapshots of Session::totals(): each counter's increase.
RunStats operator-(const RunStats& after, const RunStats& before);

// One program input or output as the model declares it.
struct IoInfo {
  std::string name;
  std::string kind;  // "tensor", "int", "float", "bool"
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;      // -1 for dynamic dims
  std::vector<int64_t> max_shape;  // each dim's upper bound: its size when static, -1 when unbounded
};

class Session {
 public:
  explicit Session(const std::string& path, SessionOptions options = {});
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  const std::vector<IoInfo>& inputs() const;
  const std::vector<IoInfo>& outputs() const;
  std::vector<Value> run(const std::vector<Value>& inputs);
  // Forgets what earlier runs left in the mutable buffers (a KV cache): they hold what they held
  // after loading.
  void reset();
  const RunStats& last_run_stats() const;
  // Counters summed since the session was made, including reads of outputs after run() returned.
  RunStats totals() const;

  // The device the session runs on: "cpu", or "webgpu: <adapter>".
  std::string device_description() const;
  // Per-op times since the last call, slowest first (needs SessionOptions::profile on webgpu).
  // With `trace_path`, also writes those GPU times as a Chrome/Perfetto trace (one slice per
  // kernel and per compute pass).
  std::vector<OpProfile> profile(const std::string& trace_path = "");

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace wgml
