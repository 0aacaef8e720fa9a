// Recycled blocks (core/recycled.h): a block given back is the next one taken of its size class,
// objects made with make_recycled live and die as with make_shared, and threads that take and give
// back at once never share a block.
#include "core/recycled.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

namespace wgml {
namespace {

TEST(RecycledTest, AGivenBackBlockIsTakenNextInItsSizeClass) {
  void* first = take_recycled_block(100);
  give_back_recycled_block(first, 100);
  void* again = take_recycled_block(120);  // the same class of 64-byte steps (65-128)
  EXPECT_EQ(again, first);
  give_back_recycled_block(again, 120);
  void* other = take_recycled_block(200);  // another class
  EXPECT_NE(other, first);
  give_back_recycled_block(other, 200);
}

struct Counted {
  explicit Counted(std::atomic<int>& live) : live(live) { ++live; }
  ~Counted() { --live; }
  std::atomic<int>& live;
  char payload[40] = {};
};

TEST(RecycledTest, MakeRecycledObjectsLiveAsLongAsTheirLastReference) {
  std::atomic<int> live{0};
  {
    std::shared_ptr<Counted> a = make_recycled<Counted>(live);
    std::shared_ptr<const Counted> b = a;
    a.reset();
    EXPECT_EQ(live.load(), 1);
  }
  EXPECT_EQ(live.load(), 0);
}

TEST(RecycledTest, ThreadsNeverHoldTheSameBlockAtOnce) {
  constexpr int kThreads = 4, kRounds = 2000, kHeld = 16;
  std::atomic<bool> shared_block{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        std::vector<int64_t*> held;
        for (int k = 0; k < kHeld; ++k) {
          auto* block = static_cast<int64_t*>(take_recycled_block(64));
          *block = t;  // each thread marks its blocks, and finds its mark while it holds them
          held.push_back(block);
        }
        for (int64_t* block : held) {
          if (*block != t) shared_block = true;
          give_back_recycled_block(block, 64);
        }
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_FALSE(shared_block.load());
}

}  // namespace
}  // namespace wgml
