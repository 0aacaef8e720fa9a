#pragma once
// wgml::Session: load a model file once, run it many times.
//
//   wgml::Session session("model.pte");
//   auto outputs = session.run({wgml::Tensor::from_bytes(wgml::DType::Float32, {2, 16}, data)});
//
// A Session keeps the program's mutable buffers (KV caches) across run() calls, until reset().
//
// Threads. Sessions share no mutable state: different Session objects may be made, run and
// destroyed on different threads at the same time (CPU and WebGPU alike; each WebGPU session opens
// its own device). One Session is not thread-safe: its calls must not overlap. It may move from
// thread to thread, as long as each call finishes before the next one starts on another thread
// (a mutex, a join or a queue orders them); its state, KV cache included, carries over. The const
// accessors (inputs, outputs, device_description, usable) may run at the same time as each other,
// but not during run() or profile(). An output Tensor may be handed to another thread, and any
// Tensor, input or output, may be destroyed on any thread at any time, during the session's calls
// too (its GPU buffers go back to the session's pool from there). Two threads may read one Tensor
// (or copies sharing its storage) at once once its bytes are on the host; the first data() of a
// WebGPU output downloads it through its session, so make that first read on one thread, and not
// during the session's calls.
// tests/api/session_concurrency_test.cpp checks this under ThreadSanitizer (tools/build.sh tsan).
#include <map>
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
  // Time every instruction (and on webgpu every GPU dispatch), and note what is live at each run's
  // memory peak (Session::profile, Session::memory_profile).
  bool profile = false;
  // The most bytes the session's tensors may hold at once, on the host and on the device together
  // (docs/reliability.md). 0: the default, the memory free at load (MemAvailable), at most three
  // quarters of the machine's physical memory. The caller's inputs do not count; outputs count
  // until the caller drops them. A program declaring a static tensor above the limit is refused at
  // load, and a tensor computed larger at run time fails that run, both with
  // ErrorCode::ResourceLimit naming the tensor's node and its size.
  uint64_t max_memory_bytes = 0;
  // webgpu: recorded work is submitted every this many dispatches, so that the GPU starts on a run
  // while the host records the rest of it (docs/performance.md measures decode against it); 0: the
  // backend's default.
  uint32_t dispatches_per_submit = 0;
};

// Time spent per op kind, summed over the runs since the last call of Session::profile().
struct OpProfile {
  std::string op;  // a kernel pass ("Add", "TensorScatter.Scatter") or a node run on the CPU
  // "webgpu"; "cpu" (the CPU backend's ops, or a fallback of a WebGPU run); "host" (positions or
  // shape arithmetic from values the host holds); "executor" (value arithmetic and slot copies the
  // executor does itself, on the CPU); or "view" (a shape change of a GPU tensor: nothing runs)
  std::string device;
  uint64_t calls = 0;
  double total_ms = 0;  // GPU time from timestamp queries; wall time on the CPU
  std::string note;     // for a node run on the CPU instead of the GPU: why
  // webgpu: pipelines compiled for this kernel pass since the last report, and the host time that
  // took (not part of total_ms). On a CPU adapter it includes the driver's compile to machine
  // code, which a no-op dispatch right after creating the pipeline sets off (docs/performance.md).
  uint64_t compiles = 0;
  double compile_ms = 0;
};

// What one run() did on the GPU besides computing: a steady decode step (after its first two)
// makes no plans, renders no kernels, compiles no pipelines and creates no buffers. Zero on the CPU.
struct RunStats {
  uint64_t plans_made = 0;           // kernel plans made for requests not seen before
  uint64_t plan_keys_built = 0;      // plan-cache lookups by a key holding the whole request (a bound call needs none)
  uint64_t kernels_rendered = 0;     // WGSL rendered from templates (a shape class not seen before)
  uint64_t pipelines_compiled = 0;   // compute pipelines compiled
  uint64_t buffers_created = 0;      // GPU buffers created (not reused from the pool)
  uint64_t bind_groups_created = 0;  // GPU bind groups created (not found in the recorder's cache)
  uint64_t submits = 0;              // queue submissions
  uint64_t dispatches = 0;           // compute dispatches
  uint64_t bytes_uploaded = 0;       // host to GPU
  uint64_t bytes_read = 0;           // GPU to host (outputs read, CPU fallbacks' inputs)
  // Not counters: what the last run() (or, in totals(), the latest one) held and took, on any device.
  uint64_t peak_host_bytes = 0;        // tensor bytes in host memory at most at once (mapped model files not counted)
  uint64_t peak_device_bytes = 0;      // GPU buffers allocated at most at once, free ones the pool keeps included
  uint64_t device_buffers_in_use = 0;  // GPU buffers holding tensors after the run (KV caches, constants, outputs)
  double wall_ms = 0;                  // run()'s wall time (outputs still on the GPU are read later)
};

// What happened between two snapshots of Session::totals(): each counter's increase (the
// non-counters are `after`'s).
RunStats operator-(const RunStats& after, const RunStats& before);

// Where the wall time of profiled runs went, on the CPU that drives them: the parts add up to
// wall_ms. The GPU's own busy time (timestamp queries) overlaps them and is given apart.
struct ProfileTotals {
  uint64_t runs = 0;
  double wall_ms = 0;               // run() calls, summed
  double cpu_ops_ms = 0;            // ops run on the CPU: the CPU backend's, or a WebGPU run's fallbacks
  double host_ms = 0;               // WebGPU runs: positions and shape arithmetic computed on the host
  double executor_ms = 0;           // value arithmetic and slot copies the executor does itself
  double gpu_recording_ms = 0;      // WebGPU runs: encoding kernels and uploads for the GPU, compiles not included
  double compile_ms = 0;            // WebGPU runs: compiling pipelines (OpProfile::compile_ms) during run()
  uint64_t pipelines_compiled = 0;  // during run()
  double other_ms = 0;              // the rest: submitting, waiting for the GPU, the executor's bookkeeping
  double gpu_busy_ms = 0;           // WebGPU runs: the kernels' GPU time (timestamp queries)
  // WebGPU: the GPU time of the load's own kernels (the init chain's, and constants folded at load:
  // weight transposes and their repacking), kept out of the ops above, which are the runs';
  // reported by the first profile() after the load only.
  double load_gpu_ms = 0;
  uint64_t load_dispatches = 0;
};

// A tensor live at a run's memory peak.
struct LiveTensorInfo {
  std::string slot;    // "temp 1234", "constant 7", "mutable_buffer 3", ...
  std::string tensor;  // "float32 [1, 64, 512]"
  uint64_t host_bytes = 0;
  uint64_t device_bytes = 0;
  std::string written_by;  // the instruction that wrote it last ("chain 0, instruction 12 (AddNode, from /conv1/Conv)")
};

// What was live when the last profiled run's memory (host tensors plus GPU buffers in use) was highest,
// measured after each instruction.
struct MemoryProfile {
  uint64_t host_bytes = 0;
  uint64_t device_bytes = 0;
  std::string after;                    // the instruction after which it was highest
  std::vector<LiveTensorInfo> largest;  // largest first; views of one storage counted once
};

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
  // The state kept between runs (KV caches), named as the program names it.
  const std::vector<IoInfo>& mutable_buffers() const;
  // What the program says about itself as integers: a .pte's constant methods (ExecuTorch's LLM
  // export writes get_max_ctx_len, get_prefill_chunk_size, ...), by name; empty for other formats.
  const std::map<std::string, int64_t>& metadata() const;
  std::vector<Value> run(const std::vector<Value>& inputs);
  // The same into `outputs` (cleared first). A loop that keeps its vectors (a decode loop) makes
  // no heap allocation in a steady WebGPU step.
  void run(const std::vector<Value>& inputs, std::vector<Value>& outputs);
  // Greedy decoding's pick: the index of the largest value in the last row (last axis) of
  // `logits`, NaN above every number and the first among equals (MLX's argmax), as an int64 [1, 1]
  // tensor. On WebGPU, logits that live on the GPU are picked from there and the token stays there
  // until read: fed to the next run() as its token ids, the next step is recorded while this one
  // still runs, and reading it (data()) waits only for the work before it. Throws
  // wgml::Error(InvalidArgument) for a tensor that is not float or has an empty last axis.
  Tensor greedy_token(const Tensor& logits);
  // Forgets what earlier runs left in the mutable buffers (a KV cache): they hold what they held
  // after loading.
  void reset();
  const RunStats& last_run_stats() const;
  // Wall time of loading: reading the model, binding constants, the init chain and constant folding.
  double load_ms() const;
  // Whether run() can still be called. A failed run (ResourceLimit, a bad input, a GPU validation
  // or out-of-memory error) leaves the session usable, though mutable buffers (a KV cache) may hold
  // part of the failed call's update; a lost WebGPU device does not, and run() then throws at once.
  bool usable() const;
  // Counters summed since the session was made, including reads of outputs after run() returned.
  RunStats totals() const;

  // The device the session runs on: "cpu", or "webgpu: <adapter>".
  std::string device_description() const;
  // Per-op times since the last call, slowest first (GPU or CPU time plus compile time; needs
  // SessionOptions::profile on webgpu).
  // With `trace_path`, also writes those GPU times as a Chrome/Perfetto trace (one slice per
  // kernel and per compute pass).
  std::vector<OpProfile> profile(const std::string& trace_path = "");
  // The last run's memory peak and what was live then (needs SessionOptions::profile).
  MemoryProfile memory_profile() const;
  // Where the wall time of the runs that profile() last reported went.
  const ProfileTotals& profile_totals() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace wgml
