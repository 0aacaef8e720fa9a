// A decode step's rotary embedding and KV-cache writes fused at load (runtime/fusion.h) into one
// kernel, wgml.RotaryKvWrite: to the bit what the RotateHalf and SliceUpdate kernels it replaces
// give, copied caches or written in place, and a region that does not fit the cache is refused
// (the fused instructions then run and decide). Then the same with the attention that reads them,
// wgml.RotarySdpa: to the bit what RotaryKvWrite and Sdpa give.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backend/webgpu/plan_runner.h"
#include "core/elements.h"
#include "webgpu_test_support.h"

namespace wgml::backend::webgpu {
namespace {

using Operands = std::map<std::string, Tensor>;
using Attributes = std::map<std::string, kernel::Value>;

Tensor random_floats(DType t, const Shape& shape, std::mt19937& rng) {
  Tensor f(DType::Float32, shape);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  for (int64_t i = 0; i < f.numel(); ++i) f.mutable_data_as<float>()[i] = value(rng);
  return cast(f, t);
}

kernel::KernelRequest request_of(const Operands& operands, Attributes attributes) {
  kernel::KernelRequest r;
  for (const auto& [name, tensor] : operands) r.inputs[name] = {tensor.dtype(), tensor.shape()};
  r.attributes = std::move(attributes);
  return r;
}

// Attention heads of `dim` values: q with 4 heads, k and v with 2, `tokens` new ones, caches of
// `length` positions, cos and sin one row per token.
struct Layer {
  int64_t tokens, dim, length, start;
};

Operands layer_operands(DType t, const Layer& l, std::mt19937& rng) {
  return {{"q", random_floats(t, {1, 4, l.tokens, l.dim}, rng)},      {"k", random_floats(t, {1, 2, l.tokens, l.dim}, rng)},
          {"v", random_floats(t, {1, 2, l.tokens, l.dim}, rng)},      {"cos", random_floats(t, {1, 1, l.tokens, l.dim}, rng)},
          {"sin", random_floats(t, {1, 1, l.tokens, l.dim}, rng)},    {"k_cache", random_floats(t, {1, 2, l.length, l.dim}, rng)},
          {"v_cache", random_floats(t, {1, 2, l.length, l.dim}, rng)}};
}

// The RotateHalf attributes of a last axis of `dim` (as the fusion copies them) and the writes'.
Attributes rotary_attributes(const Layer& l) {
  return {{"axis", kernel::Value(int64_t{-1})},
          {"half", kernel::Value(l.dim / 2)},
          {"stop", kernel::Value(int64_t{INT64_MAX})},
          {"concat_axis", kernel::Value(int64_t{-1})},
          {"k_axis", kernel::Value(int64_t{2})},
          {"v_axis", kernel::Value(int64_t{2})},
          {"start", kernel::Value(l.start)}};
}

class FusedRotaryTest : public testing::WebGpuTest {
 protected:
  Tensor run(const std::string& domain, const std::string& op, const Operands& operands, const Attributes& attributes) {
    return run_plan(gpu(), plan(domain, op, request_of(operands, attributes)), operands).at("out");
  }
  Tensor rotated(const Tensor& x, const Operands& o, const Layer& l) {
    const Attributes rotation = {{"axis", kernel::Value(int64_t{-1})},
                                 {"half", kernel::Value(l.dim / 2)},
                                 {"stop", kernel::Value(int64_t{INT64_MAX})},
                                 {"concat_axis", kernel::Value(int64_t{-1})}};
    return run("wgml", "RotateHalf", {{"x", x}, {"cos", o.at("cos")}, {"sin", o.at("sin")}}, rotation);
  }
  Tensor written(const Tensor& cache, const Tensor& update, const Layer& l) {
    return run("mlx", "SliceUpdate", {{"dst", cache}, {"update", update}},
               {{"axis", kernel::Value(int64_t{2})},
                {"start", kernel::Value(l.start)},
                {"stop", kernel::Value(l.start + l.tokens)},
                {"step", kernel::Value(int64_t{1})}});
  }
};

TEST_F(FusedRotaryTest, RotaryKvWriteEqualsTheRotationsAndCacheWritesToTheBit) {
  std::mt19937 rng(31);
  // A decode step in the middle of the cache, a prefill from 0, a write that ends at the cache's end.
  for (DType t : device_float_dtypes())
    for (const Layer& l : {Layer{1, 8, 16, 5}, Layer{3, 16, 8, 0}, Layer{2, 4, 6, 4}}) {
      const Operands o = layer_operands(t, l, rng);
      const std::string what = std::string(dtype_name(t)) + " start " + std::to_string(l.start);
      const kernel::KernelPlan& fused = plan("wgml", "RotaryKvWrite", request_of(o, rotary_attributes(l)));
      EXPECT_EQ(fused.passes.size(), 3u) << what << ": the caches are copied when not written in place";
      const std::map<std::string, Tensor> out = run_plan(gpu(), fused, o);
      const Tensor q = rotated(o.at("q"), o, l), k = rotated(o.at("k"), o, l);
      testing::expect_same_tensor(out.at("q_out"), q, what + " q_out");
      testing::expect_same_tensor(out.at("k_out"), k, what + " k_out");
      testing::expect_same_tensor(out.at("k_cache_out"), written(o.at("k_cache"), k, l), what + " k_cache_out");
      testing::expect_same_tensor(out.at("v_cache_out"), written(o.at("v_cache"), o.at("v"), l), what + " v_cache_out");
    }
}

TEST_F(FusedRotaryTest, CachesWrittenInPlaceTakeOneDispatch) {
  std::mt19937 rng(32);
  const Layer l{1, 8, 16, 9};
  const Operands o = layer_operands(DType::BFloat16, l, rng);
  kernel::KernelRequest r = request_of(o, rotary_attributes(l));
  r.may_alias = {{"k_cache", "k_cache_out"}, {"v_cache", "v_cache_out"}};
  const kernel::KernelPlan& in_place = plan("wgml", "RotaryKvWrite", r);
  ASSERT_EQ(in_place.passes.size(), 1u);
  const Tensor k_cache = written(o.at("k_cache"), rotated(o.at("k"), o, l), l);
  const Tensor v_cache = written(o.at("v_cache"), o.at("v"), l);
  const std::map<std::string, Tensor> out = run_plan(gpu(), in_place, o);
  testing::expect_same_tensor(out.at("k_cache_out"), k_cache, "k_cache_out");
  testing::expect_same_tensor(out.at("v_cache_out"), v_cache, "v_cache_out");
}

// The attention of a decode step at `start` over the caches up to the new key.
Attributes attention_attributes(const Layer& l) {
  Attributes a = rotary_attributes(l);
  a["scale"] = kernel::Value(1.0 / std::sqrt(static_cast<double>(l.dim)));
  a["kvStop"] = kernel::Value(l.start + 1);
  a["kvAxis"] = kernel::Value(int64_t{2});
  return a;
}

class FusedAttentionTest : public FusedRotaryTest {
 protected:
  // RotaryKvWrite, then Sdpa over its q' and caches: what wgml.RotarySdpa replaces.
  std::map<std::string, Tensor> unfused(const Operands& o, const Layer& l) {
    std::map<std::string, Tensor> written =
        run_plan(gpu(), plan("wgml", "RotaryKvWrite", request_of(o, rotary_attributes(l))), o);
    const Operands attention = {{"q", written.at("q_out")}, {"k", written.at("k_cache_out")}, {"v", written.at("v_cache_out")}};
    const Attributes a = attention_attributes(l);
    written["out"] =
        run("mlx", "Sdpa", attention, {{"scale", a.at("scale")}, {"kvStop", a.at("kvStop")}, {"kvAxis", a.at("kvAxis")}});
    return written;
  }
};

TEST_F(FusedAttentionTest, RotarySdpaEqualsTheRotaryWriteAndTheAttentionToTheBit) {
  std::mt19937 rng(34);
  // The first position; a key in the second of two chunks of 32 keys; the last of four chunks,
  // ending at the cache's end; rows of 6 (one value a load: half is not a multiple of 4).
  for (DType t : device_float_dtypes())
    for (const Layer& l : {Layer{1, 8, 16, 0}, Layer{1, 64, 96, 40}, Layer{1, 16, 100, 99}, Layer{1, 6, 12, 7}}) {
      const Operands o = layer_operands(t, l, rng);
      const std::string what = std::string(dtype_name(t)) + " dim " + std::to_string(l.dim) + " start " + std::to_string(l.start);
      const std::map<std::string, Tensor> want = unfused(o, l);
      const std::map<std::string, Tensor> got =
          run_plan(gpu(), plan("wgml", "RotarySdpa", request_of(o, attention_attributes(l))), o);
      testing::expect_same_tensor(got.at("out"), want.at("out"), what + " out");
      testing::expect_same_tensor(got.at("k_cache_out"), want.at("k_cache_out"), what + " k_cache_out");
      testing::expect_same_tensor(got.at("v_cache_out"), want.at("v_cache_out"), what + " v_cache_out");
    }
}

TEST_F(FusedAttentionTest, CachesWrittenInPlaceLeaveTheAttentionsTwoDispatches) {
  std::mt19937 rng(35);
  const Layer l{1, 64, 80, 70};
  const Operands o = layer_operands(DType::BFloat16, l, rng);
  const std::map<std::string, Tensor> want = unfused(o, l);
  kernel::KernelRequest r = request_of(o, attention_attributes(l));
  r.may_alias = {{"k_cache", "k_cache_out"}, {"v_cache", "v_cache_out"}};
  const kernel::KernelPlan& in_place = plan("wgml", "RotarySdpa", r);
  ASSERT_EQ(in_place.passes.size(), 2u);
  const std::map<std::string, Tensor> got = run_plan(gpu(), in_place, o);
  testing::expect_same_tensor(got.at("out"), want.at("out"), "out");
  testing::expect_same_tensor(got.at("k_cache_out"), want.at("k_cache_out"), "k_cache_out");
  testing::expect_same_tensor(got.at("v_cache_out"), want.at("v_cache_out"), "v_cache_out");
}

TEST_F(FusedAttentionTest, MoreThanOneQueryOrANewKeyPastTheBoundDoesNotFit) {
  std::mt19937 rng(36);
  const Layer prefill{2, 8, 16, 3};
  EXPECT_NE(testing::testing_error([&] {
              plan("wgml", "RotarySdpa", request_of(layer_operands(DType::Float32, prefill, rng), attention_attributes(prefill)));
            }).find("queryLength == 1"),
            std::string::npos);
  const Layer l{1, 8, 16, 3};
  Attributes unread = attention_attributes(l);
  unread["kvStop"] = kernel::Value(int64_t{3});
  EXPECT_NE(testing::testing_error([&] {
              plan("wgml", "RotarySdpa", request_of(layer_operands(DType::Float32, l, rng), unread));
            }).find("attrs.start < keyLength"),
            std::string::npos);
}

TEST_F(FusedRotaryTest, ARegionOutsideTheCacheDoesNotFit) {
  std::mt19937 rng(33);
  const Layer past_the_end{2, 8, 8, 7};
  const Operands o = layer_operands(DType::Float32, past_the_end, rng);
  EXPECT_NE(testing::testing_error([&] {
              plan("wgml", "RotaryKvWrite", request_of(o, rotary_attributes(past_the_end)));
            }).find("attrs.start + shapes.k[kAxis] <= shapes.k_cache[kAxis]"),
            std::string::npos);
  Layer negative = past_the_end;
  negative.start = -1;
  EXPECT_NE(testing::testing_error([&] {
              plan("wgml", "RotaryKvWrite", request_of(o, rotary_attributes(negative)));
            }).find("attrs.start >= 0"),
            std::string::npos);
}

}  // namespace
}  // namespace wgml::backend::webgpu
