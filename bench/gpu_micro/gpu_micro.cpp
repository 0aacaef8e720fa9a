// gpu_micro: WebGPU micro-benchmarks through wgml's device layer (src/gpu): copy bandwidth,
// cost per dispatch in a batch, f32 FMA rate. Each measurement checks its own result.
//
//   build-dir/bench/gpu_micro/gpu_micro [options] > result.json
//
// Options (all optional):
//   --adapter SEL       adapter index or part of its name (default: the best one)
//   --copy-mib N        copy buffer size in MiB (default 1024; clamped to the binding limit)
//   --copy-reps N       copies per timed batch (default 10)
//   --runs N            timed batches per measurement; the best is reported (default 5)
//   --dispatches N      tiny dispatches per batch (default 2000)
//   --fma-workgroups N  workgroups of 256 threads for the FMA kernel (default 8192)
//   --fma-iters N       loop trips of the FMA kernel; 128 flop per thread per trip (default 1024)
//   --trace PATH        also time one copy batch and one dispatch batch with GPU timestamps
//                       and write them as a Chrome/Perfetto trace
//
// Prints one JSON object on stdout. Exits 2 when a self-check fails, 1 on any error.
// Timing: wall clock from the first recorded dispatch to the end of the GPU work, best of --runs
// after one warm-up batch. Copy bandwidth counts bytes read plus bytes written.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "backend/webgpu/roofline.h"
#include "gpu/buffer_pool.h"
#include "gpu/device.h"
#include "gpu/gpu_error.h"
#include "gpu/grid.h"
#include "gpu/pipeline_cache.h"
#include "gpu/profiler.h"
#include "gpu/recorder.h"
#include "gpu/trace_writer.h"

namespace wgml::gpu {
namespace {

using nlohmann::json;

struct Options {
  std::string adapter;
  uint64_t copy_mib = 1024;
  uint32_t copy_reps = 10;
  uint32_t runs = 5;
  uint32_t dispatches = 2000;
  uint32_t fma_workgroups = 8192;
  uint32_t fma_iters = 1024;
  std::string trace_path;
};

// ---- kernels ---------------------------------------------------------------------------------

// One invocation adds its parameter to a counter: the final count proves every dispatch ran.
const std::string kCountWgsl = R"(
struct Params { increment : u32 }
@group(0) @binding(0) var<storage, read_write> counter : array<u32>;
@group(0) @binding(1) var<uniform> params : Params;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lid : u32) {
  if (lid == 0u) {
    counter[0] = counter[0] + params.increment;
  }
}
)";

// The same counter without parameters: the bind group stays set across dispatches.
const std::string kCountPlainWgsl = R"(
@group(0) @binding(0) var<storage, read_write> counter : array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lid : u32) {
  if (lid == 0u) {
    counter[0] = counter[0] + 1u;
  }
}
)";

// ---- helpers ---------------------------------------------------------------------------------

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

template <class T>
std::span<const std::byte> bytes_of(const T& value) {
  return std::as_bytes(std::span<const T, 1>(&value, 1));
}

struct Bench {
  Device& device;
  BufferPool& pool;
  PipelineCache& pipelines;
  const Options& options;
};

// Times `record` (which records one batch) plus submit and wait: one warm-up, then the best of
// `runs`. Returns {best total seconds, best recording seconds}.
std::pair<double, double> time_batches(Recorder& recorder, uint32_t runs, const std::function<void()>& record) {
  record();
  recorder.finish();
  double best_total = 1e30, best_record = 1e30;
  for (uint32_t run = 0; run < runs; ++run) {
    const auto start = std::chrono::steady_clock::now();
    record();
    best_record = std::min(best_record, seconds_since(start));
    recorder.finish();
    best_total = std::min(best_total, seconds_since(start));
  }
  return {best_total, best_record};
}

// Records one batch with GPU timestamps, appends its slices to `trace` (after the slices already
// there) and returns the summed GPU time of its dispatches in nanoseconds (0 when the device has
// no timestamps).
double profile_batch(Bench& b, const std::function<void(Recorder&)>& record, std::vector<TraceSlice>& trace) {
  if (!b.device.features().timestamp_query) return 0;
  Profiler profiler(b.device, b.pool);
  Recorder recorder(b.device, b.pool, {SubmitPolicy::OncePerRun}, &profiler);
  record(recorder);
  recorder.finish();
  const std::vector<GpuTiming> timings = profiler.collect();
  double ns = 0;
  for (const GpuTiming& t : timings) ns += t.kind == TimingKind::Op ? t.duration_ns : 0;
  double trace_end_us = 0;
  for (const TraceSlice& s : trace) trace_end_us = std::max(trace_end_us, s.start_us + s.duration_us);
  for (TraceSlice& s : trace_slices(timings)) {
    s.start_us += trace_end_us;
    trace.push_back(std::move(s));
  }
  return ns;
}

// ---- measurements ----------------------------------------------------------------------------

json measure_copy(Bench& b, std::vector<TraceSlice>& trace) {
  const WGPULimits& limits = b.device.limits();
  uint64_t bytes = std::min<uint64_t>(b.options.copy_mib << 20, limits.maxStorageBufferBindingSize);
  bytes = bytes / 4096 * 4096;  // whole workgroups of 256 vec4
  const Kernel& kernel =
      b.pipelines.get({"copy", wgml::backend::webgpu::kCopyWgsl, "main", {}, {Access::Read, Access::ReadWrite}, 0});
  PooledBuffer src = b.pool.acquire(bytes, BufferKind::Storage, "copy source");
  PooledBuffer dst = b.pool.acquire(bytes, BufferKind::Storage, "copy destination");
  Recorder recorder(b.device, b.pool, {SubmitPolicy::OncePerRun});

  // Known words at both ends of the source; the checks read them back from the destination.
  const uint64_t probe = std::min<uint64_t>(bytes / 2, 65536);
  std::vector<uint32_t> head(probe / 4), tail(probe / 4);
  for (size_t i = 0; i < head.size(); ++i) {
    head[i] = 0x9E3779B9u * uint32_t(i + 1);
    tail[i] = 0x85EBCA6Bu * uint32_t(i + 7);
  }
  recorder.upload(src.range(0, probe), std::as_bytes(std::span(head)), "copy probe");
  recorder.upload(src.range(bytes - probe, probe), std::as_bytes(std::span(tail)), "copy probe");

  const BufferRange bindings[] = {src.range(), dst.range()};
  const uint64_t workgroups = bytes / 4096;
  auto record = [&](Recorder& r) {
    for (uint32_t i = 0; i < b.options.copy_reps; ++i) r.dispatch(kernel, bindings, {}, workgroups, "copy");
  };
  const auto [total_s, record_s] = time_batches(recorder, b.options.runs, [&] { record(recorder); });
  const double moved = 2.0 * double(bytes) * b.options.copy_reps;

  const auto got_head = recorder.read(dst.range(0, probe), "copy check");
  const auto got_tail = recorder.read(dst.range(bytes - probe, probe), "copy check");
  const bool verified =
      std::memcmp(got_head.data(), head.data(), probe) == 0 && std::memcmp(got_tail.data(), tail.data(), probe) == 0;
  const Grid grid = fold_workgroups(workgroups, limits.maxComputeWorkgroupsPerDimension);
  json result = {{"bytes", bytes},
                 {"grid", {grid.x, grid.y, grid.z}},
                 {"reps_per_batch", b.options.copy_reps},
                 {"ms_per_copy", total_s / b.options.copy_reps * 1e3},
                 {"gb_per_s_read_plus_write", moved / total_s / 1e9},
                 {"verified", verified}};
  if (!b.options.trace_path.empty())
    if (const double gpu_ns = profile_batch(b, record, trace); gpu_ns > 0) result["gpu_timestamp_gb_per_s"] = moved / gpu_ns;
  return result;
}

json measure_dispatch(Bench& b, std::vector<TraceSlice>& trace) {
  const Kernel& with_params = b.pipelines.get({"count", kCountWgsl, "main", {}, {Access::ReadWrite}, sizeof(uint32_t)});
  const Kernel& plain = b.pipelines.get({"count plain", kCountPlainWgsl, "main", {}, {Access::ReadWrite}, 0});
  PooledBuffer counter = b.pool.acquire(4, BufferKind::Storage, "dispatch counter");
  const BufferRange bindings[] = {counter.range()};
  const uint32_t n = b.options.dispatches;
  const uint32_t one = 1;
  auto batch_with_params = [&](Recorder& r) {
    for (uint32_t i = 0; i < n; ++i) r.dispatch(with_params, bindings, bytes_of(one), 1, "count");
  };
  auto batch_plain = [&](Recorder& r) {
    for (uint32_t i = 0; i < n; ++i) r.dispatch(plain, bindings, {}, 1, "count plain");
  };

  json result = {{"dispatches_per_batch", n}};
  bool verified = true;
  // Each variant starts the counter at 0 and expects (warm-up + runs) * n at the end.
  auto measure = [&](const char* name, RecorderOptions options, const std::function<void(Recorder&)>& batch) {
    Recorder recorder(b.device, b.pool, options);
    recorder.upload(counter.range(), bytes_of(uint32_t{0}), "zero the counter");
    const auto [total_s, record_s] = time_batches(recorder, b.options.runs, [&] { batch(recorder); });
    const auto got = recorder.read(counter.range(), "read the counter");
    uint32_t count;
    std::memcpy(&count, got.data(), 4);
    const bool ok = uint64_t(count) == uint64_t(b.options.runs + 1) * n;
    verified = verified && ok;
    result[name] = {{"us_per_dispatch", total_s / n * 1e6},
                    {"us_recording_per_dispatch", record_s / n * 1e6},
                    {"submissions_per_batch", (recorder.submissions() - 1) / (b.options.runs + 1)},
                    {"verified", ok}};
  };
  measure("one_submit_params_via_uniform_ring", {SubmitPolicy::OncePerRun}, batch_with_params);
  measure("one_submit_no_params", {SubmitPolicy::OncePerRun}, batch_plain);
  measure("submit_every_256", {SubmitPolicy::EveryNDispatches, 256}, batch_with_params);
  result["verified"] = verified;

  if (!b.options.trace_path.empty())
    if (const double gpu_ns = profile_batch(b, batch_with_params, trace); gpu_ns > 0)
      result["gpu_timestamp_us_per_dispatch"] = gpu_ns / n / 1e3;
  return result;
}

json measure_fma(Bench& b) {
  const uint32_t workgroups = std::min(b.options.fma_workgroups, b.device.limits().maxComputeWorkgroupsPerDimension);
  const uint64_t threads = uint64_t(workgroups) * 256;
  const Kernel& kernel =
      b.pipelines.get({"fma", wgml::backend::webgpu::kFmaWgsl, "main", {}, {Access::ReadWrite}, sizeof(uint32_t)});
  PooledBuffer out = b.pool.acquire(threads * 16, BufferKind::Storage, "fma output");
  const BufferRange bindings[] = {out.range()};
  Recorder recorder(b.device, b.pool, {SubmitPolicy::OncePerRun});
  const auto [total_s, record_s] = time_batches(
      recorder, b.options.runs, [&] { recorder.dispatch(kernel, bindings, bytes_of(b.options.fma_iters), workgroups, "fma"); });
  const double flop = double(threads) * b.options.fma_iters * wgml::backend::webgpu::kFmaFlopPerTrip;

  // Thread 0 against the same recurrence on the CPU (single-precision fma).
  const auto got_bytes = recorder.read(out.range(0, 16), "fma check");
  float got[4];
  std::memcpy(got, got_bytes.data(), 16);
  const float m[4] = {0.9999f, 0.9998f, 0.9997f, 0.9996f}, k[4] = {1e-4f, 2e-4f, 3e-4f, 4e-4f};
  bool verified = true;
  for (int lane = 0; lane < 4; ++lane) {
    float chains[4] = {float(lane), float(lane) + 0.5f, float(lane) + 0.25f, float(lane) + 0.125f};
    for (uint32_t i = 0; i < b.options.fma_iters * 4; ++i)
      for (float& x : chains) x = std::fma(x, m[lane], k[lane]);
    const float want = chains[0] + chains[1] + chains[2] + chains[3];
    verified = verified && std::fabs(got[lane] - want) <= 1e-3f * std::max(1.0f, std::fabs(want));
  }
  return {{"workgroups", workgroups}, {"iters", b.options.fma_iters},         {"flop", flop},
          {"ms", total_s * 1e3},      {"tflop_per_s", flop / total_s / 1e12}, {"verified", verified}};
}

json describe(const Device& device) {
  const AdapterDescription& a = device.adapter();
  const WGPULimits& l = device.limits();
  const DeviceFeatures& f = device.features();
  // The file name only: committed results carry no machine paths (implementation_version says which build).
  return {{"library", std::filesystem::path(device.library().path).filename().string()},
          {"implementation_version", device.library().version_string()},
          {"adapter",
           {{"name", a.name},
            {"vendor", a.vendor},
            {"driver", a.driver},
            {"backend", a.backend},
            {"kind", adapter_kind_name(a.kind)}}},
          {"limits",
           {{"maxStorageBufferBindingSize", l.maxStorageBufferBindingSize},
            {"maxBufferSize", l.maxBufferSize},
            {"maxComputeWorkgroupsPerDimension", l.maxComputeWorkgroupsPerDimension},
            {"minStorageBufferOffsetAlignment", l.minStorageBufferOffsetAlignment},
            {"minUniformBufferOffsetAlignment", l.minUniformBufferOffsetAlignment}}},
          {"features",
           {{"timestamp_query", f.timestamp_query},
            {"timestamps_inside_passes", f.timestamps_inside_passes},
            {"shader_f16", f.shader_f16},
            {"subgroups", f.subgroups}}}};
}

uint64_t parse_count(const std::string& flag, const char* text) {
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0' || value == 0 || value > UINT32_MAX)
    throw Error(ErrorCode::InvalidArgument, flag + " needs a positive whole number, got '" + text + "'");
  return value;
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw Error(ErrorCode::InvalidArgument, flag + " needs a value (see gpu_micro.cpp)");
    const char* value = argv[++i];
    if (flag == "--adapter")
      o.adapter = value;
    else if (flag == "--trace")
      o.trace_path = value;
    else if (flag == "--copy-mib")
      o.copy_mib = parse_count(flag, value);
    else if (flag == "--copy-reps")
      o.copy_reps = uint32_t(parse_count(flag, value));
    else if (flag == "--runs")
      o.runs = uint32_t(parse_count(flag, value));
    else if (flag == "--dispatches")
      o.dispatches = uint32_t(parse_count(flag, value));
    else if (flag == "--fma-workgroups")
      o.fma_workgroups = uint32_t(parse_count(flag, value));
    else if (flag == "--fma-iters")
      o.fma_iters = uint32_t(parse_count(flag, value));
    else
      throw Error(ErrorCode::InvalidArgument, "unknown option " + flag + " (see gpu_micro.cpp)");
  }
  return o;
}

int run(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
  DeviceOptions device_options;
  device_options.adapter = options.adapter;
  Device device(device_options);
  BufferPool pool(device);
  PipelineCache pipelines(device);
  Bench bench{device, pool, pipelines, options};
  std::cerr << "gpu_micro: wgpu-native " << device.library().version_string() << " on " << device.adapter().summary() << "\n";

  std::vector<TraceSlice> trace;
  json result = describe(device);
  result["copy"] = measure_copy(bench, trace);
  result["dispatch"] = measure_dispatch(bench, trace);
  result["fma"] = measure_fma(bench);
  if (!options.trace_path.empty()) write_chrome_trace(options.trace_path, trace);
  std::cout << result.dump(2) << std::endl;
  const bool verified = result["copy"]["verified"] && result["dispatch"]["verified"] && result["fma"]["verified"];
  return verified ? 0 : 2;
}

}  // namespace
}  // namespace wgml::gpu

int main(int argc, char** argv) {
  try {
    return wgml::gpu::run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "gpu_micro: " << e.what() << "\n";
    return 1;
  }
}
