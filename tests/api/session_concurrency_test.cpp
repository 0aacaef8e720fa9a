// What include/wgml/session.h promises about threads, on the CPU reference and on WebGPU (skipped
// where the machine has no WebGPU device): two sessions run at once from two threads, and one
// session is used from two threads in turn (its KV cache carries over), each giving the outputs of
// the same steps run on one thread; and a session's tensors are freed on other threads while it
// runs. Built under ThreadSanitizer by `tools/build.sh tsan`, which reports any data race these
// runs contain (docs/reliability.md, "Threads").
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "io/npy.h"
#include "support/webgpu_session.h"
#include "wgml/session.h"

namespace wgml {
namespace {

const std::string kFixture = std::string(WGML_SOURCE_DIR) + "/tests/fixtures/pte/kv_cache/";
const std::string kModel = kFixture + "model.pte";
constexpr int kSteps = 3;

// Step k's inputs: q, k, v (float32) and input_pos (int64), as exported.
std::vector<Value> step_inputs(int step) {
  std::vector<Value> inputs;
  for (int i = 0; i < 4; ++i)
    inputs.push_back(io::read_npy(kFixture + "step" + std::to_string(step) + "_input_" + std::to_string(i) + ".npy"));
  return inputs;
}

using StepOutputs = std::vector<std::vector<Value>>;

void run_steps(Session& session, int first, int last, StepOutputs& outputs) {
  for (int step = first; step < last; ++step) outputs.push_back(session.run(step_inputs(step)));
}

// Bitwise equality: both backends are deterministic whatever thread runs them (the same kernels on
// the same device for WebGPU).
void expect_same_outputs(const StepOutputs& got, const StepOutputs& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t s = 0; s < got.size(); ++s) {
    ASSERT_EQ(got[s].size(), want[s].size());
    for (size_t o = 0; o < got[s].size(); ++o) {
      const Tensor& a = std::get<Tensor>(got[s][o]);
      const Tensor& b = std::get<Tensor>(want[s][o]);
      ASSERT_EQ(a.shape(), b.shape()) << "step " << s << " output " << o;
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.nbytes()), 0) << "step " << s << " output " << o;
    }
  }
}

// The parameter is the device.
class SessionThreads : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "webgpu") {
      std::string why_not;
      if (!testing::open_webgpu_session(kModel, why_not)) GTEST_SKIP() << "no WebGPU device: " << why_not;
    }
  }

  Session open_session() const {
    SessionOptions options;
    options.device = GetParam();
    return Session(kModel, options);
  }

  StepOutputs one_thread_outputs() const {
    Session session = open_session();
    StepOutputs outputs;
    run_steps(session, 0, kSteps, outputs);
    return outputs;
  }
};

TEST_P(SessionThreads, TwoSessionsRunAtOnceFromTwoThreads) {
  const StepOutputs want = one_thread_outputs();
  StepOutputs got[2];
  std::vector<std::thread> threads;
  for (StepOutputs& outputs : got)
    threads.emplace_back([this, &outputs] {
      Session session = open_session();
      run_steps(session, 0, kSteps, outputs);
    });
  for (std::thread& t : threads) t.join();
  expect_same_outputs(got[0], want);
  expect_same_outputs(got[1], want);
}

TEST_P(SessionThreads, OneSessionUsedFromTwoThreadsInTurnKeepsItsState) {
  const StepOutputs want = one_thread_outputs();
  Session session = open_session();
  StepOutputs got;
  std::thread first([&] { run_steps(session, 0, 1, got); });
  first.join();  // the handover: run() calls on one session must not overlap
  std::thread second([&] { run_steps(session, 1, kSteps, got); });
  second.join();
  expect_same_outputs(got, want);
}

// Inputs and outputs of earlier runs, freed by other threads while the session runs on: their GPU
// buffers go back to the session's pool from there (the Python binding frees a run's inputs after
// releasing the session's lock).
TEST_P(SessionThreads, TensorsFreedOnOtherThreadsWhileTheSessionRuns) {
  const StepOutputs want = one_thread_outputs();
  Session session = open_session();
  std::vector<std::thread> freers;
  for (int round = 0; round < 6; ++round) {
    session.reset();
    StepOutputs got;
    std::vector<std::vector<Value>> fed;
    for (int step = 0; step < kSteps; ++step) {
      fed.push_back(step_inputs(step));
      got.push_back(session.run(fed.back()));
    }
    expect_same_outputs(got, want);  // downloads on this thread; the GPU buffers stay attached
    freers.emplace_back([tensors = std::make_pair(std::move(fed), std::move(got))]() mutable {
      tensors.first.clear();
      tensors.second.clear();
    });
  }
  for (std::thread& t : freers) t.join();
}

INSTANTIATE_TEST_SUITE_P(Devices, SessionThreads, ::testing::Values("cpu", "webgpu"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace wgml
