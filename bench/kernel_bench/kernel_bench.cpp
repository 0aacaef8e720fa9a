// Bandwidth of the WebGPU backend's spec-made kernels against a plain vec4 copy measured in the
// same run on the same device: the copy is the memory roofline a memory-bound kernel can reach,
// so each op reports its effective bandwidth and the ratio to it.
//
//   kernel_bench [--adapter SEL] [--mib N] [--reps N] [--runs N] [--json PATH] [--tunable Op.NAME=V ...]
//
// Each op runs its spec's plan on device-resident inputs (uploaded once) `reps` times per batch;
// the time is wall clock from the first recorded dispatch to the end of the GPU work, best of
// `runs` batches after a warm-up. Bytes are the op's compulsory traffic (inputs read once, output
// written once). Each op's result is first checked on a sample of elements against the CPU.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "backend/webgpu/gpu_tensor.h"
#include "backend/webgpu/plan_runner.h"
#include "core/elements.h"
#include "wgml/error.h"

namespace {

using namespace wgml;
using backend::webgpu::GpuContext;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string adapter;
  uint64_t mib = 256;  // per input tensor
  int reps = 10;
  int runs = 5;
  std::string json_path;
  std::vector<std::string> tunables;
};

struct OpCase {
  std::string label;
  std::string op;  // mlx spec name
  std::map<std::string, Tensor> inputs;
  std::map<std::string, kernel::Value> attributes;
  double bytes = 0;  // compulsory traffic of one run
  // Element k of the expected output, from the inputs on the CPU.
  std::function<double(int64_t)> expected;
};

double at(const Tensor& t, int64_t i) { return load_as_double(t.dtype(), t.data(), i); }

// The largest difference from the expected output, relative to max(1, |expected|), over a sample.
double check(const OpCase& c, const Tensor& out) {
  double worst = 0;
  const int64_t step = std::max<int64_t>(1, out.numel() / 100003);
  for (int64_t k = 0; k < out.numel(); k += step) {
    const double want = c.expected(k);
    worst = std::max(worst, std::fabs(at(out, k) - want) / std::max(1.0, std::fabs(want)));
  }
  return worst;
}

Tensor random_floats(DType dtype, Shape shape, uint32_t seed) {
  Tensor t(dtype, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2, 2);
  for (int64_t i = 0; i < t.numel(); ++i) store_double(dtype, t.mutable_data(), i, u(rng));
  return t;
}

// Best batch time in seconds of `record` (which records one repetition) run `reps` times.
double best_batch(GpuContext& gpu, const Options& o, const std::function<void()>& record) {
  record();
  gpu.recorder().finish();
  double best = 1e30;
  for (int r = 0; r < o.runs; ++r) {
    const auto start = Clock::now();
    for (int k = 0; k < o.reps; ++k) record();
    gpu.recorder().finish();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  return best / o.reps;
}

double copy_roofline(GpuContext& gpu, const Options& o, uint64_t bytes) {
  gpu::KernelSpec k;
  k.label = "roofline copy";
  k.wgsl = R"(@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let i = id.x + id.y * n.x * 256u;
  if (i < arrayLength(&dst)) { dst[i] = src[i]; }
})";
  k.bindings = {gpu::Access::Read, gpu::Access::ReadWrite};
  const gpu::Kernel& kernel = gpu.pipelines().get(k);
  auto src = gpu.pool().acquire(bytes, gpu::BufferKind::Storage, "roofline src");
  auto dst = gpu.pool().acquire(bytes, gpu::BufferKind::Storage, "roofline dst");
  const gpu::BufferRange ranges[] = {src.range(), dst.range()};
  const double seconds = best_batch(gpu, o, [&] {
    gpu.recorder().dispatch(kernel, ranges, {}, (bytes / 16 + 255) / 256, "roofline copy");
  });
  return 2.0 * static_cast<double>(bytes) / seconds;
}

std::vector<OpCase> op_cases(const Options& o) {
  const int64_t n = static_cast<int64_t>(o.mib << 20) / 4;  // float32 elements per input
  const int64_t side = static_cast<int64_t>(std::sqrt(static_cast<double>(n)));
  const int64_t cols = 4096, rows = n / cols;
  std::vector<OpCase> cases;
  const Tensor a = random_floats(DType::Float32, {n}, 1), b = random_floats(DType::Float32, {n}, 2);
  const Tensor row = random_floats(DType::Float32, {cols}, 3);
  const Tensor h = random_floats(DType::Float16, {n}, 4), g = random_floats(DType::Float16, {n}, 5);
  const Tensor square = random_floats(DType::Float32, {side, side}, 6);
  cases.push_back({"Add f32 [n] + [n]", "Add", {{"a", a}, {"b", b}}, {}, 12.0 * n,
                   [=](int64_t k) { return double(float(at(a, k) + at(b, k))); }});
  cases.push_back({"Add f32 [n/4096, 4096] + [4096]", "Add", {{"a", a.reshaped({rows, cols})}, {"b", row}}, {}, 8.0 * n,
                   [=](int64_t k) { return double(float(at(a, k) + at(row, k % cols))); }});
  cases.push_back({"Exp f32 [n]", "Exp", {{"x", a}}, {}, 8.0 * n, [=](int64_t k) { return std::exp(at(a, k)); }});
  cases.push_back({"Multiply f16 [n] * [n]", "Multiply", {{"a", h}, {"b", g}}, {}, 6.0 * n,
                   [=](int64_t k) { return at(h, k) * at(g, k); }});
  cases.push_back({"Transpose f32 [s, s]", "Transpose", {{"x", square}}, {{"perm", kernel::Value::int_list({1, 0})}},
                   8.0 * side * side, [=](int64_t k) { return at(square, (k % side) * side + k / side); }});
  return cases;
}

kernel::KernelPlan plan_for(GpuContext& gpu, const OpCase& c) {
  kernel::KernelRequest r;
  for (const auto& [name, t] : c.inputs) r.inputs[name] = {t.dtype(), t.shape()};
  r.attributes = c.attributes;
  return gpu.engine().plan(*gpu.engine().find("mlx", c.op), r, gpu.caps(), gpu.tunables());
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--adapter") o.adapter = value;
    else if (flag == "--mib") o.mib = std::stoull(value);
    else if (flag == "--reps") o.reps = std::stoi(value);
    else if (flag == "--runs") o.runs = std::stoi(value);
    else if (flag == "--json") o.json_path = value;
    else if (flag == "--tunable") o.tunables.push_back(value);
    else throw Error(ErrorCode::InvalidArgument, "unknown option " + flag);
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    backend::webgpu::GpuOptions go;
    go.adapter = o.adapter;
    go.tunables = o.tunables;
    auto gpu = std::make_shared<GpuContext>(go);
    const double roofline = copy_roofline(*gpu, o, o.mib << 20);
    std::printf("%s\ncopy roofline (vec4, %llu MiB): %.0f GB/s\n", gpu->device().adapter().summary().c_str(),
                static_cast<unsigned long long>(o.mib), roofline / 1e9);
    nlohmann::json results = {{"adapter", gpu->device().adapter().summary()}, {"copy_gbps", roofline / 1e9}};
    for (const OpCase& c : op_cases(o)) {
      const kernel::KernelPlan plan = plan_for(*gpu, c);
      const auto placed = backend::webgpu::place_inputs(gpu, plan, c.inputs);
      const double error = check(c, backend::webgpu::run_plan(gpu, plan, placed).at("out"));
      if (error > 2e-3) throw Error(ErrorCode::Runtime, c.label + ": result differs from the CPU by " + std::to_string(error));
      const double seconds = best_batch(*gpu, o, [&] { backend::webgpu::run_plan(gpu, plan, placed); });
      const double gbps = c.bytes / seconds / 1e9;
      std::printf("%-36s %8.1f us %8.0f GB/s  %5.1f%% of copy\n", c.label.c_str(), seconds * 1e6, gbps,
                  100.0 * gbps * 1e9 / roofline);
      results["ops"].push_back({{"op", c.label}, {"us", seconds * 1e6}, {"gbps", gbps}, {"ratio_to_copy", gbps * 1e9 / roofline}});
    }
    if (!o.json_path.empty()) std::ofstream(o.json_path) << results.dump(2) << "\n";
  } catch (const Error& e) {
    std::fprintf(stderr, "kernel_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
