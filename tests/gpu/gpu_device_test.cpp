// The GPU layer on a real device (lavapipe in CI): device creation, kernels, buffer reuse, grid
// folding, error capture, large readbacks, submit policies and timestamps. Each expectation is
// derived by hand from the kernel's formula.
#include <gmock/gmock.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gpu/grid.h"
#include "gpu/profiler.h"
#include "gpu/trace_writer.h"
#include "gpu_test_support.h"

namespace wgml::gpu::testing {
namespace {

using ::testing::HasSubstr;

// y[i] = x[i] * scale + shift for i < count, over a folded grid of 64-thread workgroups.
const std::string kAxpbWgsl = std::string(kLinearWorkgroupIdWgsl) + R"(
struct Params { scale : f32, shift : f32, count : u32, pad : u32 }
@group(0) @binding(0) var<storage, read> x : array<f32>;
@group(0) @binding(1) var<storage, read_write> y : array<f32>;
@group(0) @binding(2) var<uniform> params : Params;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid : vec3<u32>, @builtin(num_workgroups) nwg : vec3<u32>,
        @builtin(local_invocation_index) lid : u32) {
  let i = wgml_linear_workgroup_id(wid, nwg) * 64u + lid;
  if (i < params.count) {
    y[i] = x[i] * params.scale + params.shift;
  }
}
)";

struct AxpbParams {
  float scale, shift;
  uint32_t count, pad = 0;
};

// out[i] = i * multiplier (wrapping) for i < count.
const std::string kFillWgsl = std::string(kLinearWorkgroupIdWgsl) + R"(
struct Params { count : u32, multiplier : u32 }
@group(0) @binding(0) var<storage, read_write> out : array<u32>;
@group(0) @binding(1) var<uniform> params : Params;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid : vec3<u32>, @builtin(num_workgroups) nwg : vec3<u32>,
        @builtin(local_invocation_index) lid : u32) {
  let i = wgml_linear_workgroup_id(wid, nwg) * 64u + lid;
  if (i < params.count) {
    out[i] = i * params.multiplier;
  }
}
)";

struct FillParams {
  uint32_t count, multiplier;
};

// counter[0] += 1 per dispatch: counts the dispatches that really ran.
const std::string kCountWgsl = R"(
@group(0) @binding(0) var<storage, read_write> counter : array<u32>;
@compute @workgroup_size(1)
fn main() {
  counter[0] = counter[0] + 1u;
}
)";

uint64_t workgroups_for(uint64_t elements) { return (elements + 63) / 64; }

// The first index where values[i] != expected(i), or values.size(): one check for millions of
// elements (an assertion per element would dominate the test's time).
template <class Expected>
size_t first_mismatch(const std::vector<uint32_t>& values, size_t count, Expected expected) {
  for (size_t i = 0; i < count; ++i)
    if (values[i] != expected(i)) return i;
  return count;
}

class GpuDeviceTest : public GpuTest {
 protected:
  const Kernel& axpb() {
    return pipelines().get({"axpb", kAxpbWgsl, "main", {}, {Access::Read, Access::ReadWrite}, sizeof(AxpbParams)});
  }
  const Kernel& fill() { return pipelines().get({"fill", kFillWgsl, "main", {}, {Access::ReadWrite}, sizeof(FillParams)}); }
  const Kernel& count() { return pipelines().get({"count", kCountWgsl, "main", {}, {Access::ReadWrite}, 0}); }

  PooledBuffer upload_floats(Recorder& recorder, const std::vector<float>& values) {
    PooledBuffer buffer = pool().acquire(values.size() * sizeof(float), BufferKind::Storage, "test");
    recorder.upload(buffer.range(), bytes_of(values), "upload x");
    return buffer;
  }

  void run_axpb(Recorder& recorder, const PooledBuffer& x, const PooledBuffer& y, AxpbParams p) {
    const BufferRange bindings[] = {x.range(), y.range()};
    recorder.dispatch(axpb(), bindings, bytes_of(p), workgroups_for(p.count), "axpb");
  }
};

TEST_F(GpuDeviceTest, DeviceHasARealAdapterWithItsLimits) {
  const AdapterDescription& a = device().adapter();
  EXPECT_TRUE(a.real_device);
  EXPECT_FALSE(a.name.empty());
  EXPECT_NE(a.backend, "Null");
  const WGPULimits& limits = device().limits();
  EXPECT_GE(limits.maxComputeWorkgroupsPerDimension, 65535u);
  EXPECT_GE(limits.maxStorageBufferBindingSize, 128u << 20);  // the adapter's, not the default
  EXPECT_GE(limits.maxBufferSize, limits.maxStorageBufferBindingSize);
  EXPECT_GT(limits.minStorageBufferOffsetAlignment, 0u);
  // lavapipe and NVIDIA both offer timestamps (also inside passes) and f16.
  EXPECT_TRUE(device().features().timestamp_query);
  EXPECT_TRUE(device().features().shader_f16);
  EXPECT_FALSE(device().library().version_string().empty());
}

TEST_F(GpuDeviceTest, KernelRoundTripThroughTheUniformRing) {
  Recorder recorder(device(), pool());
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i) - 500.0f;
  PooledBuffer xb = upload_floats(recorder, x);
  PooledBuffer y1 = pool().acquire(x.size() * 4, BufferKind::Storage, "test");
  PooledBuffer y2 = pool().acquire(x.size() * 4, BufferKind::Storage, "test");
  // Two dispatches in one pass with different parameters: two uniform slots, one bind group each.
  run_axpb(recorder, xb, y1, {2.0f, 1.0f, 1000});
  run_axpb(recorder, xb, y2, {-0.5f, 3.0f, 1000});
  const auto r1 = values_of<float>(recorder.read(y1.range(), "read y1"));
  const auto r2 = values_of<float>(recorder.read(y2.range(), "read y2"));
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(r1[i], x[i] * 2.0f + 1.0f) << i;
    ASSERT_EQ(r2[i], x[i] * -0.5f + 3.0f) << i;
  }
}

TEST_F(GpuDeviceTest, PipelinesCompileOncePerSource) {
  const Kernel& first = axpb();
  const uint64_t compiles = pipelines().compiles();
  EXPECT_EQ(&axpb(), &first);
  EXPECT_EQ(pipelines().compiles(), compiles);
  KernelSource other = first.spec;
  other.wgsl += "\n// a different source text\n";
  EXPECT_NE(&pipelines().get(other), &first);
  EXPECT_EQ(pipelines().compiles(), compiles + 1);
}

// Each compile's host time is kept by label; on a CPU adapter it includes the warm-up dispatch
// that makes the driver compile to machine code (the kernel then runs as usual: counter = 1).
TEST_F(GpuDeviceTest, CompileTimeIsKeptPerKernelLabel) {
  EXPECT_EQ(pipelines().warms_up_driver(), device().adapter().kind == AdapterKind::Cpu);
  const double total_before = pipelines().compile_ms();
  const KernelSource source{
      "counted compile", kCountWgsl + "// compiled by this test only\n", "main", {}, {Access::ReadWrite}, 0};
  const Kernel& kernel = pipelines().get(source);
  pipelines().get(source);
  const CompileTime& time = pipelines().compile_times().at("counted compile");
  EXPECT_EQ(time.compiles, 1u);
  EXPECT_GT(time.ms, 0.0);
  // The total is a running sum: after earlier tests' compiles the difference keeps only the
  // total's precision, not time.ms's.
  EXPECT_NEAR(pipelines().compile_ms() - total_before, time.ms, 1e-9 * pipelines().compile_ms());

  Recorder recorder(device(), pool());
  PooledBuffer counter = pool().acquire(4, BufferKind::Storage, "test");
  recorder.upload(counter.range(), bytes_of(std::vector<uint32_t>{0}), "zero the counter");
  const BufferRange bindings[] = {counter.range()};
  recorder.dispatch(kernel, bindings, {}, 1, "count");
  EXPECT_EQ(values_of<uint32_t>(recorder.read(counter.range(), "read the counter")), std::vector<uint32_t>{1});
}

// A storage buffer freed while its dispatch is still unsubmitted serves the next request at once:
// the queue runs the uses in the order they were recorded, so the first dispatch reads the old
// contents and the second the new ones (y1 = 3 * 1, y2 = 3 * 7).
TEST_F(GpuDeviceTest, AFreedStorageBufferIsReusedAtOnceInQueueOrder) {
  // 1500 floats: a size class (6144 bytes) no other test uses, so the pool's choice is known.
  constexpr uint32_t n = 1500;
  Recorder recorder(device(), pool(), {SubmitPolicy::OncePerRun});
  PooledBuffer y1 = pool().acquire(n * 4, BufferKind::Storage, "test");
  PooledBuffer y2 = pool().acquire(n * 4, BufferKind::Storage, "test");

  PooledBuffer x = upload_floats(recorder, std::vector<float>(n, 1.0f));
  const uint64_t released_id = x.id();
  run_axpb(recorder, x, y1, {3.0f, 0.0f, n});
  x.reset();
  PooledBuffer again = upload_floats(recorder, std::vector<float>(n, 7.0f));
  EXPECT_EQ(again.id(), released_id);
  run_axpb(recorder, again, y2, {3.0f, 0.0f, n});
  recorder.finish();
  EXPECT_EQ(values_of<float>(recorder.read(y1.range(), "read")), std::vector<float>(n, 3.0f));
  EXPECT_EQ(values_of<float>(recorder.read(y2.range(), "read")), std::vector<float>(n, 21.0f));
}

// A readback started ahead (Recorder::start_read) is finished while later work is recorded, not yet
// submitted: the result is the bytes as they were when it started, and its staging buffer, free once
// its own submission is, serves the next readback at once (a decode step's token read each step
// takes the same few buffers however far the host runs ahead).
TEST_F(GpuDeviceTest, AReadStartedAheadReadsItsMomentAndFreesItsStagingAtOnce) {
  BufferPool local(device());
  Recorder recorder(device(), local, {SubmitPolicy::OncePerRun});
  PooledBuffer x = local.acquire(16, BufferKind::Storage, "test");
  recorder.upload(x.range(), bytes_of(std::vector<uint32_t>{1, 2, 3, 4}), "fill");
  Recorder::PendingRead first = recorder.start_read(x.range(), "read ahead");
  recorder.upload(x.range(), bytes_of(std::vector<uint32_t>{5, 6, 7, 8}), "overwrite");
  const BufferRange bindings[] = {x.range()};
  recorder.dispatch(count(), bindings, {}, 1, "count");  // recorded, not submitted
  EXPECT_EQ(values_of<uint32_t>(recorder.finish_read(first, "finish")), (std::vector<uint32_t>{1, 2, 3, 4}));
  const uint64_t created = local.stats().created;
  Recorder::PendingRead second = recorder.start_read(x.range(), "read again");
  EXPECT_EQ(local.stats().created, created) << "the first read's staging buffer was not lent again";
  recorder.finish();
  EXPECT_EQ(values_of<uint32_t>(recorder.finish_read(second, "finish")).size(), 4u);
}

TEST_F(GpuDeviceTest, TrimDestroysOnlyFreeBuffersTheGpuFinishedWith) {
  BufferPool local(device());
  Recorder recorder(device(), local, {SubmitPolicy::OncePerRun});
  PooledBuffer kept = local.acquire(1000, BufferKind::Storage, "test");    // class 1024
  PooledBuffer in_use = local.acquire(4000, BufferKind::Storage, "test");  // class 4096
  EXPECT_EQ(local.stats().created, 2u);
  EXPECT_EQ(local.stats().bytes_allocated, 1024u + 4096u);
  const BufferRange bindings[] = {in_use.range()};
  recorder.dispatch(count(), bindings, {}, 1, "count");
  in_use.reset();  // released while its dispatch is still unsubmitted
  local.trim();
  EXPECT_EQ(local.stats().free_buffers, 1u);  // not destroyed: the GPU has not run it yet
  recorder.finish();
  local.trim();
  EXPECT_EQ(local.stats().free_buffers, 0u);
  EXPECT_EQ(local.stats().bytes_allocated, 1024u);
  kept.reset();
  PooledBuffer again = local.acquire(1000, BufferKind::Storage, "test");
  EXPECT_EQ(local.stats().reused, 1u);
  EXPECT_EQ(local.stats().created, 2u);
}

TEST_F(GpuDeviceTest, ARunWhoseOutputOutlivesTheNextRunAlternatesBetweenTwoBuffersAtEachPlace) {
  // Each run asks for an output, kept until the next run has asked for its own (a decode step one
  // token ahead), and a temp of the same class, freed last. Every place then gets the buffer it got
  // two runs before: the bind groups of a run are those of the run before the last.
  BufferPool local(device());
  PooledBuffer previous;
  std::vector<std::pair<uint64_t, uint64_t>> ids;  // (output, temp) of each run
  for (int run = 0; run < 8; ++run) {
    local.restart_sequence();
    PooledBuffer output = local.acquire(256, BufferKind::Storage, "output");
    PooledBuffer temp = local.acquire(256, BufferKind::Storage, "temp");
    ids.emplace_back(output.id(), temp.id());
    previous = std::move(output);
    temp.reset();
  }
  for (size_t run = 3; run < ids.size(); ++run) EXPECT_EQ(ids[run], ids[run - 2]) << "run " << run;
  EXPECT_EQ(local.stats().created, 3u);
}

TEST_F(GpuDeviceTest, BuffersCycledThroughManySubmitsKeepTheirData) {
  // Every step takes an input from the pool, writes it, runs a kernel and gives it back while
  // the GPU may still be working; each step's output must still come from its own input.
  Recorder recorder(device(), pool(), {SubmitPolicy::EveryNDispatches, 1});
  std::vector<PooledBuffer> outputs;
  for (int step = 0; step < 24; ++step) {
    PooledBuffer x = upload_floats(recorder, std::vector<float>(512, float(step)));
    outputs.push_back(pool().acquire(2048, BufferKind::Storage, "test"));
    run_axpb(recorder, x, outputs.back(), {2.0f, 0.5f, 512});
  }
  EXPECT_EQ(recorder.submissions(), 24u);
  for (int step = 0; step < 24; ++step)
    ASSERT_EQ(values_of<float>(recorder.read(outputs[step].range(), "read")), std::vector<float>(512, float(step) * 2.0f + 0.5f))
        << "step " << step;
}

TEST_F(GpuDeviceTest, UploadWhileRecordingIsOrderedWithTheRecordedWork) {
  Recorder recorder(device(), pool(), {SubmitPolicy::OncePerRun});
  PooledBuffer x = upload_floats(recorder, std::vector<float>(64, 1.0f));
  PooledBuffer y1 = pool().acquire(256, BufferKind::Storage, "test");
  PooledBuffer y2 = pool().acquire(256, BufferKind::Storage, "test");
  run_axpb(recorder, x, y1, {1.0f, 0.0f, 64});
  recorder.upload(x.range(), bytes_of(std::vector<float>(64, 5.0f)), "overwrite x");
  run_axpb(recorder, x, y2, {1.0f, 0.0f, 64});
  recorder.finish();
  EXPECT_EQ(recorder.submissions(), 1u);
  EXPECT_EQ(values_of<float>(recorder.read(y1.range(), "read")), std::vector<float>(64, 1.0f));
  EXPECT_EQ(values_of<float>(recorder.read(y2.range(), "read")), std::vector<float>(64, 5.0f));
}

TEST_F(GpuDeviceTest, UnalignedUploadLengthIsZeroPadded) {
  Recorder recorder(device(), pool());
  PooledBuffer b = pool().acquire(8, BufferKind::Storage, "test");
  recorder.upload(b.range(), bytes_of(std::vector<uint32_t>{0xFFFFFFFFu, 0xFFFFFFFFu}), "fill");
  const std::vector<uint8_t> five = {1, 2, 3, 4, 5};
  recorder.upload(b.range(), bytes_of(five), "five bytes");
  const auto back = recorder.read(b.range(), "read");
  const std::vector<std::byte> expected = {std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4},
                                           std::byte{5}, std::byte{0}, std::byte{0}, std::byte{0}};
  EXPECT_EQ(back, expected);
}

TEST_F(GpuDeviceTest, WorkgroupCountsAboveTheLimitAreFolded) {
  const uint32_t max = device().limits().maxComputeWorkgroupsPerDimension;
  const uint32_t count = (max + 100) * 64 + 5;  // a partial last workgroup too
  const uint32_t sentinel_words = 64;
  Recorder recorder(device(), pool());
  PooledBuffer out = pool().acquire((uint64_t(count) + sentinel_words) * 4, BufferKind::Storage, "t");
  // Fill the tail past `count` with a sentinel the kernel must not touch.
  recorder.upload(out.range(uint64_t(count) * 4, sentinel_words * 4),
                  bytes_of(std::vector<uint32_t>(sentinel_words, 0xDEADBEEFu)), "sentinel");
  const BufferRange bindings[] = {out.range(0, uint64_t(count) * 4)};
  recorder.dispatch(fill(), bindings, bytes_of(FillParams{count, 1}), workgroups_for(count), "fill");
  const auto values = values_of<uint32_t>(recorder.read(out.range(), "read"));
  EXPECT_EQ(first_mismatch(values, count, [](size_t i) { return uint32_t(i); }), count);
  const std::vector<uint32_t> tail(values.begin() + count, values.end());
  EXPECT_EQ(tail, std::vector<uint32_t>(sentinel_words, 0xDEADBEEFu));
}

TEST_F(GpuDeviceTest, LargeBufferReadsBackInChunks) {
  // 24 MiB through the whole path: upload, a copy on the GPU, a readback in several steps. (The
  // data is uploaded rather than computed: lavapipe runs each workgroup slowly under ASan, and
  // the folding test above already reads back 17 MB that a kernel wrote.)
  const uint32_t count = 6 << 20;
  std::vector<uint32_t> pattern(count);
  for (uint32_t i = 0; i < count; ++i) pattern[i] = i * 2654435761u;
  RecorderOptions options;
  options.readback_chunk_bytes = 5 << 20;  // 4 full steps and a shorter last one
  Recorder recorder(device(), pool(), options);
  PooledBuffer source = pool().acquire(uint64_t(count) * 4, BufferKind::Storage, "test");
  PooledBuffer copy = pool().acquire(uint64_t(count) * 4, BufferKind::Storage, "test");
  recorder.upload(source.range(), bytes_of(pattern), "upload pattern");
  recorder.copy(source.range(), copy.range(), "copy on the GPU");
  const auto values = values_of<uint32_t>(recorder.read(copy.range(), "read"));
  ASSERT_EQ(values.size(), count);
  EXPECT_EQ(first_mismatch(values, count, [&](size_t i) { return pattern[i]; }), count);
}

TEST_F(GpuDeviceTest, InvalidShaderIsATypedErrorAndTheDeviceKeepsWorking) {
  try {
    pipelines().get({"broken", "@compute @workgroup_size(1) fn main( {", "main", {}, {}, 0});
    FAIL() << "expected a GpuError";
  } catch (const GpuError& e) {
    EXPECT_EQ(e.kind(), GpuErrorKind::Validation);
    EXPECT_EQ(e.code(), ErrorCode::Runtime);
    EXPECT_THAT(e.op(), HasSubstr("'broken'"));
    EXPECT_FALSE(e.detail().empty());
  }
  // Bindings that do not match the shader fail at pipeline creation, also as a typed error.
  try {
    pipelines().get({"wrong bindings", kCountWgsl, "main", {}, {Access::Read}, 0});
    FAIL() << "expected a GpuError";
  } catch (const GpuError& e) {
    EXPECT_EQ(e.kind(), GpuErrorKind::Validation);
  }
  Recorder recorder(device(), pool());
  PooledBuffer y = pool().acquire(16, BufferKind::Storage, "test");
  run_axpb(recorder, upload_floats(recorder, {1, 2, 3, 4}), y, {1.0f, 1.0f, 4});
  EXPECT_EQ(values_of<float>(recorder.read(y.range(), "read")), (std::vector<float>{2, 3, 4, 5}));
}

TEST_F(GpuDeviceTest, BindingMistakesAreCaughtBeforeRecording) {
  Recorder recorder(device(), pool());
  PooledBuffer x = pool().acquire(1024, BufferKind::Storage, "test");
  const AxpbParams p{1.0f, 0.0f, 256};
  auto error_of = [&](std::vector<BufferRange> bindings, std::span<const std::byte> params) {
    try {
      recorder.dispatch(axpb(), bindings, params, 4, "bad op");
    } catch (const GpuError& e) {
      EXPECT_EQ(e.op(), "bad op");
      return e.kind();
    }
    ADD_FAILURE() << "expected a GpuError";
    return GpuErrorKind::Internal;
  };
  EXPECT_EQ(error_of({x.range()}, bytes_of(p)), GpuErrorKind::Validation);             // one buffer short
  EXPECT_EQ(error_of({x.range(), x.range()}, bytes_of(p)), GpuErrorKind::Validation);  // aliasing
  EXPECT_EQ(error_of({x.range(4, 512), x.range()}, bytes_of(p)), GpuErrorKind::Validation);
  EXPECT_EQ(error_of({x.range(), x.range()}, bytes_of(1.0f)), GpuErrorKind::Validation);
  recorder.finish();  // nothing was recorded, nothing is submitted
  EXPECT_EQ(recorder.submissions(), 0u);
}

TEST_F(GpuDeviceTest, TensorAboveTheBindingLimitIsAClearError) {
  const uint64_t limit = device().limits().maxStorageBufferBindingSize;
  try {
    pool().acquire(limit + 4, BufferKind::Storage, "load weight 'big'");
    FAIL() << "expected a GpuError";
  } catch (const GpuError& e) {
    EXPECT_EQ(e.kind(), GpuErrorKind::TooLarge);
    EXPECT_EQ(e.op(), "load weight 'big'");
    EXPECT_THAT(e.detail(), HasSubstr("maxStorageBufferBindingSize (" + std::to_string(limit)));
  }
}

TEST_F(GpuDeviceTest, SubmitPolicyDecidesHowOftenWorkIsSubmitted) {
  PooledBuffer counter = pool().acquire(4, BufferKind::Storage, "test");
  const BufferRange bindings[] = {counter.range()};
  auto run = [&](RecorderOptions options, int dispatches) {
    Recorder recorder(device(), pool(), options);
    recorder.upload(counter.range(), bytes_of(uint32_t{0}), "zero");
    for (int i = 0; i < dispatches; ++i) recorder.dispatch(count(), bindings, {}, 1, "count");
    recorder.finish();
    EXPECT_EQ(values_of<uint32_t>(recorder.read(counter.range(), "read"))[0], uint32_t(dispatches));
    return recorder.submissions() - 1;  // the readback is a submission of its own
  };
  EXPECT_EQ(run({SubmitPolicy::EveryNDispatches, 2}, 5), 3u);
  EXPECT_EQ(run({SubmitPolicy::OncePerRun}, 50), 1u);
}

TEST_F(GpuDeviceTest, ProfilerTimesEveryDispatchAndPass) {
  Profiler profiler(device(), pool());
  Recorder recorder(device(), pool(), {SubmitPolicy::OncePerRun}, &profiler);
  PooledBuffer out = pool().acquire(1 << 20, BufferKind::Storage, "test");
  const BufferRange bindings[] = {out.range()};
  const char* names[] = {"fill a", "fill b", "fill c"};
  for (const char* name : names) recorder.dispatch(fill(), bindings, bytes_of(FillParams{1 << 18, 3}), 4096, name);
  recorder.finish();
  const std::vector<GpuTiming> timings = profiler.collect();

  std::vector<GpuTiming> ops, passes;
  for (const GpuTiming& t : timings) (t.kind == TimingKind::Op ? ops : passes).push_back(t);
  ASSERT_EQ(ops.size(), 3u);
  for (size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(ops[i].name, names[i]);
    EXPECT_GT(ops[i].duration_ns, 0.0) << names[i];
  }
  EXPECT_LE(ops[0].start_ns, ops[1].start_ns);
  EXPECT_LE(ops[1].start_ns, ops[2].start_ns);
  if (profiler.timestamps_inside_passes()) {
    ASSERT_EQ(passes.size(), 1u);
    EXPECT_LE(passes[0].start_ns, ops[0].start_ns);
    EXPECT_GE(passes[0].start_ns + passes[0].duration_ns, ops[2].start_ns + ops[2].duration_ns);
  }

  const std::string path = ::testing::TempDir() + "/wgml_gpu_trace.json";
  write_chrome_trace(path, trace_slices(timings));
  std::ifstream in(path);
  const auto trace = nlohmann::json::parse(in);
  size_t slices = 0;
  for (const auto& e : trace["traceEvents"]) slices += e["ph"] == "X";
  EXPECT_EQ(slices, timings.size());
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace wgml::gpu::testing
