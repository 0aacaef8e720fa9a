// What a steady decode step costs the host on WebGPU (issue 24): every GPU call is launched from
// the binding its first call made (backend/webgpu/bound_call.h), so after warm-up a step makes no
// kernel plan and builds no plan-cache key, while the cache position and the keys attention covers
// change every step (kernel/dynamic_plan.h). Heap allocations are counted by replacing the global
// operator new in this binary alone, exported so that allocations inside the C++ library come
// here too (under ASan as well, whose own operator new would otherwise pair with our delete);
// aligned forms stay the library's, new and delete alike. A step still makes a few allocations a
// dispatch (docs/performance.md).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <optional>

#include "wgml/generator.h"

namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept { return operator new(size, tag); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

const std::filesystem::path kModel = std::filesystem::path(WGML_SOURCE_DIR) / "tests/fixtures/llm/tiny-llama-fp32/model.pte";

TEST(SteadyDecodeStep, MakesNoPlanBuildsNoPlanKeyAndFewAllocations) {
  wgml::SessionOptions options;
  options.device = "webgpu";
  std::optional<wgml::Session> session;
  try {
    session.emplace(kModel.string(), options);
  } catch (const std::exception& e) {
    GTEST_SKIP() << "no WebGPU device: " << e.what();
  }
  wgml::Generator generator(*session);
  std::vector<int64_t> token = {1, 2, 3, 4};
  generator.forward(token);
  uint64_t fewest = UINT64_MAX, most = 0, dispatches = 0;
  for (int step = 0; step < 24; ++step) {
    const uint64_t before = g_allocations.load();
    generator.forward(std::span<const int64_t>(token.data(), 1));
    const uint64_t allocations = g_allocations.load() - before;
    const wgml::RunStats& stats = session->last_run_stats();
    if (step < 4) continue;
    EXPECT_EQ(stats.plans_made, 0u) << "step " << step;
    EXPECT_EQ(stats.plan_keys_built, 0u) << "step " << step;
    dispatches = stats.dispatches;
    fewest = std::min(fewest, allocations);
    most = std::max(most, allocations);
  }
  std::printf("a steady step: %llu dispatches, %llu to %llu heap allocations\n", static_cast<unsigned long long>(dispatches),
              static_cast<unsigned long long>(fewest), static_cast<unsigned long long>(most));
  // Not none yet (about 440 for 21 dispatches here): each GPU call still makes its output tensors
  // (a Tensor, its shape, its device data; the fused RoPE and cache writes four of them in one
  // dispatch), the host runs the step's views, its position arithmetic and RoPE's cos and sin rows
  // with tensors of their own (CPU kernels), and the executor does its bookkeeping. The bound
  // catches GPU calls falling back to the unbound path, which made some 30 more per call (a
  // request's maps and key strings: over 600 more here), and host nodes deciding their place
  // through a request (some 100 more).
  EXPECT_GT(dispatches, 0u);
  EXPECT_LE(most, 480u);
}

}  // namespace
