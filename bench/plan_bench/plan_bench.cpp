// The host cost of planning one kernel call on the WebGPU backend, per cache level: time and heap
// allocations per call (operator new is counted in this program), for requests a decode step makes.
//
//   plan_bench [--adapter SEL] [--calls N]
//
// Levels: "plan hit" (the same request again: a static-shape program run again), "render hit" (a
// request not seen before whose shape class was: a KV-cache write at a new position, a longer
// slice of the cache; its WGSL and pipeline come from the render cache), "render" (the engine
// rendering the template, as the first call of a shape class does).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <new>
#include <string>

#include "backend/webgpu/gpu_context.h"
#include "wgml/error.h"

namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace

// The replacement pair below allocates with malloc and frees with free; gcc sees the inlined
// free() after a `new` expression and warns of a mismatch that is not there.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

void* operator new(std::size_t size) {
  ++g_allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

using namespace wgml;
using backend::webgpu::GpuContext;
using Clock = std::chrono::steady_clock;

// A KV-cache write: `tokens` rows at `position` of a [1, 8, 1024, 128] f32 cache.
kernel::KernelRequest cache_write(int64_t position, int64_t tokens) {
  kernel::KernelRequest r;
  r.inputs["dst"] = {DType::Float32, {1, 8, 1024, 128}};
  r.inputs["update"] = {DType::Float32, {1, 8, tokens, 128}};
  r.attributes = {{"axis", kernel::Value(int64_t{2})},
                  {"start", kernel::Value(position)},
                  {"stop", kernel::Value(position + tokens)},
                  {"step", kernel::Value(int64_t{1})}};
  r.may_alias = {{"dst", "out"}};
  return r;
}

// The valid part of the cache: rows [0, length).
kernel::KernelRequest cache_read(int64_t length) {
  kernel::KernelRequest r;
  r.inputs["x"] = {DType::Float32, {1, 8, 1024, 128}};
  r.attributes = {{"axis", kernel::Value(int64_t{2})},
                  {"start", kernel::Value(int64_t{0})},
                  {"stop", kernel::Value(length)},
                  {"step", kernel::Value(int64_t{1})}};
  return r;
}

struct Level {
  double us_per_call;
  double allocations_per_call;
};

Level measure(int calls, const std::function<void(int)>& call) {
  call(0);
  const uint64_t allocations = g_allocations;
  const auto start = Clock::now();
  for (int i = 1; i <= calls; ++i) call(i);
  const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  return {us / calls, static_cast<double>(g_allocations - allocations) / calls};
}

void report(const char* op, const char* level, const Level& l) {
  std::printf("%-12s %-11s %9.2f us %9.1f allocations per call\n", op, level, l.us_per_call, l.allocations_per_call);
}

void bench_op(GpuContext& gpu, const char* name, int calls, const std::function<kernel::KernelRequest(int)>& request) {
  const kernel::KernelSpec& spec = *gpu.engine().find("mlx", name);
  const kernel::KernelRequest same = request(1);
  report(name, "plan hit", measure(calls, [&](int) { gpu.plan(spec, same); }));
  // Distinct requests of one shape class: every call a plan miss, every render a cache hit.
  report(name, "render hit", measure(calls, [&](int i) { gpu.plan(spec, request(i)); }));
  report(name, "render", measure(calls / 10, [&](int i) { gpu.engine().plan(spec, request(i), gpu.caps(), gpu.tunables()); }));
}

}  // namespace

int main(int argc, char** argv) {
  backend::webgpu::GpuOptions options;
  int calls = 2000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--adapter")
      options.adapter = argv[i + 1];
    else if (flag == "--calls")
      calls = std::atoi(argv[i + 1]);
    else
      return std::fprintf(stderr, "usage: plan_bench [--adapter SEL] [--calls N]\n"), 2;
  }
  try {
    GpuContext gpu(options);
    std::printf("plan_bench on %s, %d calls per level\n", gpu.device().adapter().summary().c_str(), calls);
    // Every call a request not seen before: positions and token counts of a decode loop.
    bench_op(gpu, "SliceUpdate", calls, [](int i) { return cache_write(i % 1000, 1 + i / 1000 % 8); });
    bench_op(gpu, "Slice", calls, [](int i) { return cache_read(1 + i % 1023); });
    const GpuContext::Counters c = gpu.counters();
    std::printf("in all: %llu plans made, %llu kernels rendered, %llu pipelines compiled\n",
                static_cast<unsigned long long>(c.plans_made), static_cast<unsigned long long>(c.kernels_rendered),
                static_cast<unsigned long long>(c.pipelines_compiled));
  } catch (const Error& e) {
    std::fprintf(stderr, "plan_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
