// What a steady decode step costs the host on WebGPU (issue 24): every GPU call is launched from
// the binding its first call made (backend/webgpu/bound_call.h), so after warm-up a step makes no
// kernel plan and builds no plan-cache key, while the cache position and the keys attention covers
// change every step (kernel/dynamic_plan.h); and it makes no heap allocation: shapes keep their
// dims in place (wgml::Shape), the small objects every step makes again come from recycled blocks
// (core/recycled.h), and the lists a step fills are kept from one step to the next. Heap
// allocations are counted by replacing the global operator new in this binary alone, exported so
// that allocations inside the C++ library come here too (under ASan as well, whose own operator
// new would otherwise pair with our delete); aligned forms stay the library's, new and delete
// alike. wgpu-native's own (Rust) allocations are not counted.
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

TEST(SteadyDecodeStep, GreedyGenerationMakesNoPlanNoPlanKeyAndNoAllocation) {
  wgml::SessionOptions options;
  options.device = "webgpu";
  std::optional<wgml::Session> session;
  try {
    session.emplace(kModel.string(), options);
  } catch (const std::exception& e) {
    GTEST_SKIP() << "no WebGPU device: " << e.what();
  }
  wgml::Generator generator(*session);
  // Each token's callback closes the interval since the previous one: one decode step, as greedy
  // generation runs it (the step fed the token ahead, its pick, the read of the token before).
  // The first few include the prompt and the steps whose buffers and bind groups are new; the
  // last runs no step (nothing is fed after the last token).
  constexpr size_t kTokens = 28, kWarmUp = 6;
  std::vector<uint64_t> allocations;
  std::vector<wgml::RunStats> stats;
  allocations.reserve(kTokens);
  stats.reserve(kTokens);
  uint64_t since = g_allocations.load();
  const std::vector<int64_t> prompt = {1, 2, 3, 4};
  wgml::GenerationOptions greedy;
  greedy.max_new_tokens = kTokens;
  generator.generate(prompt, greedy, [&](int64_t) {
    allocations.push_back(g_allocations.load() - since);
    stats.push_back(session->last_run_stats());
    since = g_allocations.load();
    return true;
  });
  ASSERT_EQ(allocations.size(), kTokens);
  for (size_t step = kWarmUp; step + 1 < kTokens; ++step) {
    EXPECT_EQ(stats[step].plans_made, 0u) << "step " << step;
    EXPECT_EQ(stats[step].plan_keys_built, 0u) << "step " << step;
    EXPECT_GT(stats[step].dispatches, 0u) << "step " << step;
    EXPECT_EQ(allocations[step], 0u) << "heap allocations in step " << step;
  }
}

}  // namespace
