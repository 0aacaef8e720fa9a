// Memory at run time: temps are released after their last use (runtime/release_plan.h), so a run's
// peak is a few of its tensors rather than all of them; profiles report that peak, what was live
// at it, and every op a WebGPU run ran on the CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include "core/device_data.h"
#include "core/host_memory.h"
#include "frontend/onnx/onnx_builder.h"
#include "runtime/copy_drops.h"
#include "runtime/release_plan.h"
#include "wgml/generator.h"
#include "wgml/session.h"

namespace wgml::testing {
namespace {

using ir::Tid;

ir::Instruction add(uint32_t a, uint32_t b, uint32_t out) { return ir::Node(ir::AddNode{Tid{a}, Tid{b}, Tid{out}}); }

// Slots: 0 a constant, 1 the input, 2 the output, 3.. temps.
ir::Program program_with_temps(uint32_t temps) {
  ir::Program p;
  p.num_constant_tensors = 1;
  p.num_input_tensors = 1;
  p.num_output_tensors = 1;
  p.num_temp_tensors = temps;
  p.inputs = {ir::Slot{1, ir::SlotType::Tensor}};
  p.outputs = {ir::Slot{2, ir::SlotType::Tensor}};
  return p;
}

TEST(ReleasePlan, TempsDieAfterTheirLastReader) {
  ir::Program p = program_with_temps(2);
  // t3 = x + c; t4 = t3 + c; out = t3 + t4: t3 is read last by instruction 2, t4 too.
  p.chains = {ir::Chain{{add(1, 0, 3), add(3, 0, 4), add(3, 4, 2)}, {}}};
  const runtime::ReleasePlan plan = runtime::plan_releases(p);
  ASSERT_EQ(plan.after.size(), 1u);
  EXPECT_TRUE(plan.after[0][0].empty());
  EXPECT_TRUE(plan.after[0][1].empty());
  std::vector<uint32_t> released;
  for (Tid t : plan.after[0][2]) released.push_back(t.idx);
  std::sort(released.begin(), released.end());
  EXPECT_EQ(released, (std::vector<uint32_t>{3, 4}));
}

// A temp only one body of an If touches dies inside that body; one the parent reads after the If
// dies in the parent; the output is never released.
TEST(ReleasePlan, ABodysOwnTempsDieInTheBody) {
  ir::Program p = program_with_temps(3);
  ir::IfNode branch;
  branch.cond = ir::IntOrVid{1, {}, false};
  branch.then_chain_idx = 1;
  branch.else_chain_idx = 2;
  p.chains = {ir::Chain{{add(1, 0, 3), ir::Node(branch), add(3, 2, 2)}, {}}, ir::Chain{{add(3, 0, 4), add(4, 0, 2)}, {}},
              ir::Chain{{add(3, 0, 5), add(5, 5, 2)}, {}}};
  const runtime::ReleasePlan plan = runtime::plan_releases(p);
  auto released_after = [&](size_t chain, size_t index) {
    std::vector<uint32_t> out;
    for (Tid t : plan.after[chain][index]) out.push_back(t.idx);
    return out;
  };
  EXPECT_EQ(released_after(0, 1), std::vector<uint32_t>{});
  EXPECT_EQ(released_after(0, 2), std::vector<uint32_t>{3});
  EXPECT_EQ(released_after(1, 0), std::vector<uint32_t>{});
  EXPECT_EQ(released_after(1, 1), std::vector<uint32_t>{4});
  EXPECT_EQ(released_after(2, 1), std::vector<uint32_t>{5});
}

// Adds read on the device, Subtracts on the host: enough to plan which copies die.
class SidedBackend final : public runtime::Backend {
 public:
  std::string_view name() const override { return "sided"; }
  const runtime::KernelTable& kernels() const override { return table_; }
  runtime::ReadSide read_side(const ir::Instruction& instruction) const override {
    const ir::Node* node = ir::as_node(instruction);
    return node && std::holds_alternative<ir::AddNode>(*node) ? runtime::ReadSide::Device : runtime::ReadSide::Host;
  }

 private:
  runtime::KernelTable table_;
};

ir::Instruction subtract(uint32_t a, uint32_t b, uint32_t out) { return ir::Node(ir::SubtractNode{Tid{a}, Tid{b}, Tid{out}}); }

// t3 = x + c on the device; t4 = t3 - c on the host (t3 read back: two copies); out = t3 + t4 on
// the device: once the host read t3, only the device reads it, so its host copy dies there.
TEST(CopyDrops, AHostReadFollowedOnlyByDeviceReadsDropsTheHostCopy) {
  ir::Program p = program_with_temps(2);
  p.chains = {ir::Chain{{add(1, 0, 3), subtract(3, 0, 4), add(3, 4, 2)}, {}}};
  const auto drops = runtime::plan_copy_drops(p, SidedBackend());
  EXPECT_TRUE(drops[0][0].empty());
  ASSERT_EQ(drops[0][1].size(), 1u);
  EXPECT_EQ(drops[0][1][0].tensor.idx, 3u);
  EXPECT_EQ(drops[0][1][0].keep, runtime::ReadSide::Device);
  EXPECT_TRUE(drops[0][2].empty());  // nothing reads t3 or t4 after the last Add
}

// A device copy of four floats that counts its downloads.
class CountingDeviceData final : public DeviceData {
 public:
  void download(uint8_t* out, size_t nbytes) const override {
    ++downloads;
    std::fill(out, out + nbytes, uint8_t{0});
  }
  void download_elements(int64_t, int64_t, uint8_t*) const override {}
  uint64_t device_bytes() const override { return 16; }
  mutable int downloads = 0;
};

TEST(CopyDrops, ADeadCopyGoesUnlessAViewSharesTheStorage) {
  auto device = std::make_shared<CountingDeviceData>();
  Tensor t = TensorDeviceAccess::on_device(DType::Float32, {4}, device);
  t.data();  // read back: host bytes and the device copy
  runtime::drop_dead_copy(t, runtime::ReadSide::Device, 0);
  EXPECT_FALSE(TensorDeviceAccess::has_host_bytes(t));
  t.data();  // read back again from the device copy it kept
  EXPECT_EQ(device->downloads, 2);
  runtime::drop_dead_copy(t, runtime::ReadSide::Host, 0);
  EXPECT_EQ(TensorDeviceAccess::device_data(t), nullptr);
  EXPECT_TRUE(TensorDeviceAccess::has_host_bytes(t));

  Tensor shared = TensorDeviceAccess::on_device(DType::Float32, {4}, device);
  shared.data();
  const Tensor view = shared.reshaped({2, 2});
  runtime::drop_dead_copy(shared, runtime::ReadSide::Device, 0);
  EXPECT_TRUE(TensorDeviceAccess::has_host_bytes(view));  // the view's readers were not planned with it

  const Tensor small = TensorDeviceAccess::on_device(DType::Float32, {4}, device);
  small.data();
  runtime::drop_dead_copy(small, runtime::ReadSide::Device, 1024);  // 16 bytes: below the threshold
  EXPECT_TRUE(TensorDeviceAccess::has_host_bytes(small));
}

constexpr int64_t kSide = 512;
constexpr uint64_t kTensorBytes = kSide * kSide * sizeof(float);  // 1 MiB
constexpr int kChain = 24;

// y = x + 1 + 1 + ... (kChain Adds) over a [512, 512] float32 input: every temp is 1 MiB, and each
// is dead once the next Add has read it.
std::string add_chain_model() {
  OnnxModel m;
  m.input("x", kFloat, {kSide, kSide}).output("y", kFloat, {kSide, kSide});
  m.initializer("one", std::vector<float>{1}, {1});
  std::string previous = "x";
  for (int i = 0; i < kChain; ++i) {
    const std::string next = i + 1 == kChain ? "y" : "t" + std::to_string(i);
    m.node("Add", {previous, "one"}, {next});
    previous = next;
  }
  return m.write(fresh_directory("add_chain"));
}

std::optional<Session> open(const std::string& path, const std::string& device, std::string& why_not) {
  SessionOptions options;
  options.device = device;
  options.profile = true;
  try {
    return Session(path, options);
  } catch (const std::exception& e) {
    if (device == "cpu") throw;
    why_not = e.what();
    return std::nullopt;
  }
}

float first_element(const Value& v) { return std::get<Tensor>(v).data_as<float>()[0]; }

// Held until the run ends, the 23 temps alone would be 23 MiB. Released at last use, the run holds
// at most the Add's input temp, its output, and the output slot: the input (the caller's) plus
// 3 MiB, and 256 KiB for the CPU kernel's own scratch and the small bookkeeping tensors.
TEST(MemoryPeak, AChainOfAddsHoldsTwoTempsOnCpu) {
  std::string why_not;
  auto session = open(add_chain_model(), "cpu", why_not);
  const Tensor x(DType::Float32, {kSide, kSide});
  const uint64_t before = host_tensor_memory().live();
  const std::vector<Value> out = session->run({x});
  EXPECT_EQ(first_element(out[0]), static_cast<float>(kChain));
  const RunStats& stats = session->last_run_stats();
  EXPECT_LE(stats.peak_host_bytes, before + 3 * kTensorBytes + (256 << 10));
  EXPECT_GE(stats.peak_host_bytes, before + kTensorBytes);  // the output at least
  EXPECT_EQ(stats.peak_device_bytes, 0u);

  const MemoryProfile memory = session->memory_profile();
  ASSERT_FALSE(memory.largest.empty());
  EXPECT_EQ(memory.largest[0].tensor, "float32 [512, 512]");
  EXPECT_EQ(memory.largest[0].host_bytes, kTensorBytes);
  EXPECT_LE(memory.host_bytes, before + 3 * kTensorBytes);
}

// On the GPU the temps' buffers go back to the pool at last use and the next Add takes one: the
// pool's buffers are the input's upload, two temps and the output at most (1 MiB is its own size
// class), however long the chain.
TEST(MemoryPeak, AChainOfAddsReusesBuffersOnWebGpu) {
  std::string why_not;
  auto session = open(add_chain_model(), "webgpu", why_not);
  if (!session) GTEST_SKIP() << "no WebGPU device: " << why_not;
  const Tensor x(DType::Float32, {kSide, kSide});
  const std::vector<Value> out = session->run({x});
  EXPECT_EQ(first_element(out[0]), static_cast<float>(kChain));
  const RunStats& stats = session->last_run_stats();
  EXPECT_LE(stats.peak_device_bytes, 4 * kTensorBytes + (64 << 10));
  EXPECT_LE(stats.buffers_created, 6u);
  for (const OpProfile& p : session->profile()) EXPECT_NE(p.device, "cpu") << p.op << ": " << p.note;
}

// A bfloat16 Llama export's linear weights reach its products through transposes folded at load
// (runtime/constant_folding.h). Each is held on the GPU once, packed two values a word, not also
// widened as the transpose wrote it, and the weights it came from are let go: a 4-token prompt's
// run holds at most twice the file's 214 KB of weights (the products' once, the embedding widened
// for its row lookups) and 128 KiB of KV caches and activations. Kept widened beside their packed
// copies, the folded weights alone were twice that (863 KiB at the highest point).
TEST(MemoryPeak, FoldedBfloat16WeightsAreHeldPackedOnce) {
  std::string why_not;
  const std::string model = std::string(WGML_SOURCE_DIR) + "/tests/fixtures/llm/tiny-llama-bf16/model.pte";
  auto session = open(model, "webgpu", why_not);
  if (!session) GTEST_SKIP() << "no WebGPU device: " << why_not;
  constexpr uint64_t kWeightBytes = 213672;  // the .pte's constants (bfloat16)
  Generator generator(*session);
  const std::vector<int64_t> prompt = {5, 17, 42, 9};
  generator.forward(prompt);
  EXPECT_LE(session->memory_profile().device_bytes, 2 * kWeightBytes + (128 << 10));
}

// A kept ONNX op without a GPU kernel (TopK) runs on the CPU during a WebGPU run: the profile
// lists it with its time and why, and the parts of the wall time measured apart fit in it.
TEST(Profile, AKeptCpuOnlyOnnxOpIsListedOnWebGpu) {
  OnnxModel m(13);
  m.input("x", kFloat, {1, 1, 2, 2}).output("y", kFloat, {1, 1, 2, 1});
  m.initializer("k", std::vector<int64_t>{1}, {1});
  m.node("Relu", {"x"}, {"r"});
  m.node("TopK", {"r", "k"}, {"y", ""});
  std::string why_not;
  auto session = open(m.write(fresh_directory("topk_profile")), "webgpu", why_not);
  if (!session) GTEST_SKIP() << "no WebGPU device: " << why_not;
  const auto out = session->run({float_tensor_of({1, 1, 2, 2}, {-1, 2, 3, 4})});
  EXPECT_EQ(floats_of(std::get<Tensor>(out[0])), (std::vector<float>{2, 4}));
  const std::vector<OpProfile> ops = session->profile();
  const auto top_k = std::find_if(ops.begin(), ops.end(), [](const OpProfile& p) { return p.op == "ai.onnx.TopK"; });
  ASSERT_NE(top_k, ops.end());
  EXPECT_EQ(top_k->device, "cpu");
  EXPECT_EQ(top_k->calls, 1u);
  EXPECT_GT(top_k->total_ms, 0.0);
  EXPECT_EQ(top_k->note, "no GPU kernel yet");
  const ProfileTotals& totals = session->profile_totals();
  EXPECT_EQ(totals.runs, 1u);
  EXPECT_GE(totals.cpu_ops_ms, top_k->total_ms);
  // The parts measured apart fit in the wall time: other_ms is what is left of it.
  EXPECT_GE(totals.gpu_recording_ms, 0.0);
  EXPECT_GE(totals.other_ms, 0.0);
}

}  // namespace
}  // namespace wgml::testing
