// Parts of the GPU layer that need no device: grid folding, size classes, kernel keys, adapter
// choice, library lookup and the trace format.
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "gpu/buffer_pool.h"
#include "gpu/device.h"
#include "gpu/gpu_error.h"
#include "gpu/grid.h"
#include "gpu/pipeline_cache.h"
#include "gpu/trace_writer.h"
#include "gpu/webgpu_library.h"

namespace wgml::gpu {
namespace {

using ::testing::HasSubstr;

template <class F>
GpuError expect_gpu_error(F&& f) {
  try {
    f();
  } catch (const GpuError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a GpuError";
  return GpuError(GpuErrorKind::Internal, "-", "-");
}

TEST(FoldWorkgroups, CountsThatFitOneDimensionStayOneDimensional) {
  EXPECT_EQ(fold_workgroups(0, 65535), (Grid{0, 1, 1}));
  EXPECT_EQ(fold_workgroups(1, 65535), (Grid{1, 1, 1}));
  EXPECT_EQ(fold_workgroups(65535, 65535), (Grid{65535, 1, 1}));
}

TEST(FoldWorkgroups, LargerCountsFoldIntoTheFewestRowsOfEqualLength) {
  EXPECT_EQ(fold_workgroups(65536, 65535), (Grid{32768, 2, 1}));
  EXPECT_EQ(fold_workgroups(262144, 65535), (Grid{52429, 5, 1}));  // a 1 GiB vec4 copy
  EXPECT_EQ(fold_workgroups(65535ull * 65535, 65535), (Grid{65535, 65535, 1}));
}

TEST(FoldWorkgroups, CountsAboveASquareUseThreeDimensions) {
  // 10 per dimension: 101 workgroups need 11 rows of 10 -> 2 planes of 6 rows of 9.
  EXPECT_EQ(fold_workgroups(101, 10), (Grid{9, 6, 2}));
  EXPECT_EQ(fold_workgroups(1000, 10), (Grid{10, 10, 10}));
  for (uint64_t count : {101ull, 555ull, 901ull, 999ull, 1000ull}) {
    const Grid g = fold_workgroups(count, 10);
    EXPECT_GE(g.workgroups(), count);
    EXPECT_LT(g.workgroups() - count, uint64_t(g.y) * g.z) << count;
    EXPECT_LE(g.x, 10u);
    EXPECT_LE(g.y, 10u);
    EXPECT_LE(g.z, 10u);
  }
}

TEST(FoldWorkgroups, RefusesCountsNoGridHolds) {
  const GpuError too_many = expect_gpu_error([] { fold_workgroups(1001, 10); });
  EXPECT_EQ(too_many.kind(), GpuErrorKind::TooLarge);
  EXPECT_THAT(too_many.what(), HasSubstr("1001 workgroups"));
  EXPECT_EQ(expect_gpu_error([] { fold_workgroups(1, 0); }).kind(), GpuErrorKind::TooLarge);
}

TEST(SizeClass, RoundsUpByAtMostAQuarter) {
  EXPECT_EQ(size_class(1), 256u);
  EXPECT_EQ(size_class(256), 256u);
  EXPECT_EQ(size_class(257), 320u);  // 256 < n <= 512: steps of 64
  EXPECT_EQ(size_class(600), 640u);
  EXPECT_EQ(size_class(1024), 1024u);
  EXPECT_EQ(size_class(1025), 1280u);
  EXPECT_EQ(size_class((1ull << 30) + 1), (1ull << 30) + (1ull << 28));
  for (uint64_t n = 257; n < 70000; n += 97) {
    EXPECT_GE(size_class(n), n);
    EXPECT_LE(size_class(n), n + n / 4);
  }
}

TEST(KernelHash, CoversSourceEntryOverridesAndBindingsButNotTheLabel) {
  KernelSource base{"a", "@compute @workgroup_size(1) fn main() {}", "main", {{"n", 4}}, {Access::Read, Access::ReadWrite}, 16};
  KernelSource relabelled = base;
  relabelled.label = "b";
  EXPECT_EQ(kernel_hash(base), kernel_hash(relabelled));
  EXPECT_TRUE(base.same_code(relabelled));

  auto differs = [&](auto change) {
    KernelSource other = base;
    change(other);
    return kernel_hash(other) != kernel_hash(base) && !other.same_code(base);
  };
  EXPECT_TRUE(differs([](KernelSource& k) { k.wgsl += " "; }));
  EXPECT_TRUE(differs([](KernelSource& k) { k.entry_point = "other"; }));
  EXPECT_TRUE(differs([](KernelSource& k) { k.overrides[0].second = 8; }));
  EXPECT_TRUE(differs([](KernelSource& k) { k.bindings[0] = Access::ReadWrite; }));
  EXPECT_TRUE(differs([](KernelSource& k) { k.params_size = 32; }));
}

AdapterDescription adapter(size_t index, std::string name, AdapterKind kind, bool real = true) {
  AdapterDescription a;
  a.index = index;
  a.name = std::move(name);
  a.kind = kind;
  a.backend = real ? "Vulkan" : "Null";
  a.real_device = real;
  return a;
}

TEST(ChooseAdapter, PrefersDiscreteThenIntegratedThenCpu) {
  const std::vector<AdapterDescription> all = {
      adapter(0, "llvmpipe", AdapterKind::Cpu), adapter(1, "Iris", AdapterKind::IntegratedGpu),
      adapter(2, "NVIDIA H200", AdapterKind::DiscreteGpu), adapter(3, "Null", AdapterKind::Other, false)};
  EXPECT_EQ(choose_adapter(all, ""), 2u);
  EXPECT_EQ(choose_adapter({all[0], all[1]}, ""), 1u);
  EXPECT_EQ(choose_adapter({all[3], all[0]}, ""), 1u);
}

TEST(ChooseAdapter, SelectsByIndexOrByPartOfTheName) {
  const std::vector<AdapterDescription> all = {adapter(0, "llvmpipe (LLVM 15)", AdapterKind::Cpu),
                                               adapter(1, "NVIDIA H200", AdapterKind::DiscreteGpu)};
  EXPECT_EQ(choose_adapter(all, "0"), 0u);
  EXPECT_EQ(choose_adapter(all, "1"), 1u);
  EXPECT_EQ(choose_adapter(all, "LLVMpipe"), 0u);
  EXPECT_EQ(choose_adapter(all, "h200"), 1u);
}

TEST(ChooseAdapter, RefusesUnknownSelectionsAndNullBackends) {
  const std::vector<AdapterDescription> all = {adapter(0, "llvmpipe", AdapterKind::Cpu),
                                               adapter(1, "Null", AdapterKind::Other, false)};
  const GpuError out_of_range = expect_gpu_error([&] { choose_adapter(all, "7"); });
  EXPECT_EQ(out_of_range.kind(), GpuErrorKind::BadSelection);
  EXPECT_EQ(out_of_range.code(), ErrorCode::InvalidArgument);
  EXPECT_THAT(out_of_range.what(), HasSubstr("#0 llvmpipe (CPU, Vulkan)"));
  const GpuError null_backend = expect_gpu_error([&] { choose_adapter(all, "1"); });
  EXPECT_THAT(null_backend.what(), HasSubstr("Null backend"));
  EXPECT_EQ(expect_gpu_error([&] { choose_adapter(all, "null"); }).kind(), GpuErrorKind::BadSelection);
  EXPECT_EQ(expect_gpu_error([&] { choose_adapter(all, "radeon"); }).kind(), GpuErrorKind::BadSelection);
}

TEST(ChooseAdapter, NoRealDeviceIsNoAdapter) {
  const GpuError none = expect_gpu_error([] { choose_adapter({}, ""); });
  EXPECT_EQ(none.kind(), GpuErrorKind::NoAdapter);
  EXPECT_EQ(none.code(), ErrorCode::Unsupported);
  EXPECT_THAT(none.what(), HasSubstr("Vulkan driver"));
  EXPECT_EQ(expect_gpu_error([] { choose_adapter({adapter(0, "Null", AdapterKind::Other, false)}, ""); }).kind(),
            GpuErrorKind::NoAdapter);
}

TEST(WebGpuLibrary, NamesEveryPlaceItLookedIn) {
  const GpuError e = expect_gpu_error([] { open_webgpu_library({"/nonexistent/libwgpu_native.so", "/etc/hostname"}); });
  EXPECT_EQ(e.kind(), GpuErrorKind::LibraryNotFound);
  EXPECT_THAT(e.what(), HasSubstr("/nonexistent/libwgpu_native.so: no such file"));
  EXPECT_THAT(e.what(), HasSubstr("/etc/hostname: "));
  EXPECT_THAT(e.what(), HasSubstr("WGML_WEBGPU_LIBRARY"));
}

TEST(WebGpuLibrary, RefusesALibraryWithoutTheApi) {
  // The C library loads, but exports no wgpu* functions.
  Dl_info libc{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&printf), &libc), 0);
  const std::string path = libc.dli_fname;
  const GpuError e = expect_gpu_error([&] { open_webgpu_library({path}); });
  EXPECT_EQ(e.kind(), GpuErrorKind::LibraryNotFound);
  EXPECT_THAT(e.what(), HasSubstr(path + ": not wgpu-native's WebGPU API (missing wgpuCreateInstance"));
}

TEST(WebGpuLibrary, EnvironmentVariableIsTheOnlyCandidateWhenSet) {
  const char* saved = std::getenv("WGML_WEBGPU_LIBRARY");
  const std::string previous = saved ? saved : "";
  setenv("WGML_WEBGPU_LIBRARY", "/opt/other/libwgpu_native.so", 1);
  EXPECT_EQ(webgpu_library_candidates(), std::vector<std::string>{"/opt/other/libwgpu_native.so"});
  if (saved)
    setenv("WGML_WEBGPU_LIBRARY", previous.c_str(), 1);
  else
    unsetenv("WGML_WEBGPU_LIBRARY");
  const auto defaults = webgpu_library_candidates();
  ASSERT_GE(defaults.size(), 2u);
  EXPECT_THAT(defaults.back(), HasSubstr("libwgpu_native-release.so"));
}

TEST(ChromeTrace, OneCompleteSlicePerTimingOnNamedTracks) {
  const std::vector<GpuTiming> timings = {
      {"pass 1", TimingKind::Pass, 0, 5000}, {"matmul", TimingKind::Op, 1000, 2500}, {"softmax", TimingKind::Op, 3500, 1000}};
  const auto trace = nlohmann::json::parse(chrome_trace_json(trace_slices(timings)));
  std::vector<nlohmann::json> slices, thread_names;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X") slices.push_back(e);
    if (e["ph"] == "M" && e["name"] == "thread_name") thread_names.push_back(e);
  }
  ASSERT_EQ(slices.size(), 3u);
  EXPECT_EQ(slices[1]["name"], "matmul");
  EXPECT_DOUBLE_EQ(slices[1]["ts"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(slices[1]["dur"].get<double>(), 2.5);
  EXPECT_EQ(slices[1]["tid"], slices[2]["tid"]);
  EXPECT_NE(slices[0]["tid"], slices[1]["tid"]);
  ASSERT_EQ(thread_names.size(), 2u);
  EXPECT_EQ(thread_names[0]["args"]["name"], "GPU passes");
  EXPECT_EQ(thread_names[1]["args"]["name"], "GPU ops");
}

TEST(ChromeTrace, UnwritablePathIsAnIoError) {
  try {
    write_chrome_trace("/nonexistent/dir/trace.json", {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Io);
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/dir/trace.json"));
  }
}

}  // namespace
}  // namespace wgml::gpu
