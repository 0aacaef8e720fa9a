// Bandwidth of the WebGPU backend's spec-made kernels against a plain vec4 copy measured in the
// same run on the same device: the copy is the memory roofline a memory-bound kernel can reach,
// so each op reports its effective bandwidth and the ratio to it.
//
//   kernel_bench [--adapter SEL] [--mib N] [--reps N] [--runs N] [--json PATH] [--tunable Op.NAME=V ...]
//                [--gpu-timestamps 1] [--only LABEL-PART] [--time-wrong-results 1]
//
// Each op runs its spec's plan on device-resident inputs (uploaded once) `reps` times per batch;
// the time is wall clock from the first recorded dispatch to the end of the GPU work, best of
// `runs` batches after a warm-up. Bytes are the op's compulsory traffic (inputs read once, output
// written once). Each op's result is first checked on a sample of elements against the CPU; a
// result that differs ends the run, unless --time-wrong-results 1 (for experimental kernels that
// leave out part of the work to find what bounds the real one), which reports it and times it.
//
// Each op is also timed two more ways, to tell where time goes: its plan's kernels dispatched
// directly into one output buffer (no planning, no buffer from the pool per run), compiled as
// usual and with wgpu-native's runtime checks off (`KernelSpec::skip_runtime_checks`). For Add f32
// and Multiply f16, hand-written WGSL variants of the same computation run on the same buffers
// (see raw_variants), checked on their first and last elements. An op's ways, and a copy of the
// op's output size, are measured interleaved (batch 1 of each, then batch 2 of each, ...), so that
// a change of the GPU's speed during the run affects them alike, after a second of copies that
// brings the GPU's clocks up (see raise_clocks). With --gpu-timestamps 1 each dispatch is also
// timed on the GPU (timestamp queries around it).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <span>
#include <string>

#include "backend/webgpu/gpu_tensor.h"
#include "backend/webgpu/plan_runner.h"
#include "backend/webgpu/roofline.h"
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
  bool gpu_timestamps = false;
  std::string only;  // run only the ops whose label contains this
  bool time_wrong_results = false;
};

struct OpCase {
  std::string label;
  std::string op;  // mlx spec name
  std::map<std::string, Tensor> inputs;
  std::map<std::string, kernel::Value> attributes;
  double bytes = 0;  // compulsory traffic of one run
  // Element k of the expected output, from the inputs on the CPU.
  std::function<double(int64_t)> expected;
  // The copy it is measured against moves as many bytes (read + write); 0: a copy of the output.
  uint64_t copy_bytes = 0;
  // Compute-bound ops: their flop per run; they are measured against the FMA kernel instead.
  double flops = 0;
  // The largest relative difference from `expected` accepted (a bfloat16 output rounds by up to 2^-8).
  double tolerance = 2e-3;
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

struct Timing {
  double seconds = 1e30;         // per repetition, best batch: recording, submission and GPU work
  double record_seconds = 1e30;  // per repetition, best batch: the CPU recording alone
  double gpu_seconds = 0;        // per repetition, best batch by GPU timestamps (when asked for)
  std::vector<double> batch_us;  // every batch's time per repetition, in order
};

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The GPU time of the dispatches recorded since the last call, from the profiler's timestamps.
double gpu_dispatch_seconds(GpuContext& gpu) {
  if (!gpu.profiler()) return 0;
  double ns = 0;
  for (const gpu::GpuTiming& t : gpu.profiler()->collect())
    if (t.kind == gpu::TimingKind::Op) ns += t.duration_ns;
  return ns * 1e-9;
}

// One way of running an op: `record` records one repetition.
struct Way {
  Way(std::string how_, std::function<void()> record_) : how(std::move(how_)), record(std::move(record_)) {}
  std::string how;
  std::function<void()> record;
  Timing timing;
};

// Keeps the GPU busy with `way` for `seconds`. An idle NVIDIA GPU drops its shader clock (the
// H200 to 345 of 1980 MHz) and raises it only after a good part of a second of sustained work;
// at the low clock a memory-bound kernel reaches well under half the memory bandwidth.
void raise_clocks(GpuContext& gpu, const Options& o, Way& way, double seconds) {
  const auto start = Clock::now();
  while (seconds_since(start) < seconds) {
    for (int k = 0; k < o.reps; ++k) way.record();
    gpu.recorder().finish();
  }
  gpu_dispatch_seconds(gpu);
}

// `runs` batches of `reps` repetitions of every way, interleaved, after one warm-up each and a
// second of the first way to bring the clocks up.
void measure(GpuContext& gpu, const Options& o, std::vector<Way>& ways) {
  raise_clocks(gpu, o, ways.front(), 1.0);
  for (Way& w : ways) {
    w.record();
    gpu.recorder().finish();
    gpu_dispatch_seconds(gpu);
  }
  for (int r = 0; r < o.runs; ++r) {
    for (Way& w : ways) {
      const auto start = Clock::now();
      for (int k = 0; k < o.reps; ++k) w.record();
      const double recorded = seconds_since(start) / o.reps;
      gpu.recorder().finish();
      const double seconds = seconds_since(start) / o.reps;
      const double gpu_seconds = gpu_dispatch_seconds(gpu) / o.reps;
      w.timing.batch_us.push_back(seconds * 1e6);
      w.timing.record_seconds = std::min(w.timing.record_seconds, recorded);
      if (seconds < w.timing.seconds) {
        w.timing.seconds = seconds;
        w.timing.gpu_seconds = gpu_seconds;
      }
    }
  }
}

// A vec4 copy of `bytes` between two buffers of the pool (backend/webgpu/roofline.h).
struct CopyWay {
  CopyWay(GpuContext& gpu, uint64_t bytes) : copy(gpu, bytes) {}
  CopyWay(const CopyWay&) = delete;  // `way` records through this
  CopyWay& operator=(const CopyWay&) = delete;
  backend::webgpu::CopyKernel copy;
  Way way{"vec4 copy of the output's size (read + write)", [this] { copy.record(); }};
};

std::unique_ptr<CopyWay> copy_way(GpuContext& gpu, uint64_t bytes) { return std::make_unique<CopyWay>(gpu, bytes); }

double copy_roofline(GpuContext& gpu, const Options& o, uint64_t bytes) {
  const auto copy = copy_way(gpu, bytes);
  std::vector<Way> ways = {copy->way};  // a copy: the CopyWay keeps the buffers
  measure(gpu, o, ways);
  return 2.0 * static_cast<double>(bytes) / ways[0].timing.seconds;
}

// The expected output computed once, on its first use (a whole reference at a time).
std::function<double(int64_t)> computed_once(std::function<std::vector<double>()> compute) {
  auto values = std::make_shared<std::vector<double>>();
  return [values, compute](int64_t k) {
    if (values->empty()) *values = compute();
    return (*values)[static_cast<size_t>(k)];
  };
}

// MLX's RMSNorm (centered: LayerNorm, without a bias) of the rows of x times w, in double.
std::vector<double> norm_reference(const Tensor& x, const Tensor& w, bool centered, double eps) {
  const int64_t cols = x.dim(x.rank() - 1), rows = x.numel() / cols;
  std::vector<double> out(static_cast<size_t>(x.numel()));
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0, squares = 0;
    for (int64_t i = 0; i < cols; ++i) sum += at(x, r * cols + i);
    const double mean = centered ? sum / cols : 0;
    for (int64_t i = 0; i < cols; ++i) squares += (at(x, r * cols + i) - mean) * (at(x, r * cols + i) - mean);
    const double inv = 1 / std::sqrt(squares / cols + eps);
    for (int64_t i = 0; i < cols; ++i) out[r * cols + i] = (at(x, r * cols + i) - mean) * inv * at(w, i);
  }
  return out;
}

// Attention of q [1, Hq, 1, D] over k, v [1, Hkv, L, D] (one decode step), in double.
std::vector<double> decode_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v, double scale) {
  const int64_t heads = q.dim(1), kv_heads = k.dim(1), length = k.dim(2), dim = q.dim(3);
  std::vector<double> out(static_cast<size_t>(heads * dim)), scores(static_cast<size_t>(length));
  for (int64_t h = 0; h < heads; ++h) {
    const int64_t kv = h / (heads / kv_heads) * length * dim;
    double greatest = -INFINITY, total = 0;
    for (int64_t j = 0; j < length; ++j) {
      double s = 0;
      for (int64_t d = 0; d < dim; ++d) s += at(q, h * dim + d) * at(k, kv + j * dim + d);
      greatest = std::max(greatest, scores[j] = s * scale);
    }
    for (int64_t j = 0; j < length; ++j) total += scores[j] = std::exp(scores[j] - greatest);
    for (int64_t d = 0; d < dim; ++d) {
      double acc = 0;
      for (int64_t j = 0; j < length; ++j) acc += scores[j] * at(v, kv + j * dim + d);
      out[h * dim + d] = acc / total;
    }
  }
  return out;
}

// The transformer block's nodes: norms over rows of 4096, one decode step of attention (32 query
// heads over 8 KV heads of 128, as Llama 3 8B) over KV histories of 1024 and 8192 positions.
void add_attention_cases(std::vector<OpCase>& cases) {
  const int64_t side = 4096;
  const Tensor x = random_floats(DType::Float32, {side, side}, 7), w = random_floats(DType::Float32, {side}, 8);
  for (const bool centered : {false, true})
    cases.push_back({centered ? "LayerNorm f32 [4096, 4096]" : "RMSNorm f32 [4096, 4096]",
                     centered ? "LayerNorm" : "RMSNorm",
                     {{"x", x}, {"weight", w}},
                     {{"eps", kernel::Value(1e-5)}},
                     8.0 * side * side + 4.0 * side,
                     computed_once([=] { return norm_reference(x, w, centered, 1e-5); })});
  const int64_t heads = 32, kv_heads = 8, dim = 128;
  const double scale = 1 / std::sqrt(double(dim));
  const Tensor q = random_floats(DType::Float16, {1, heads, 1, dim}, 9);
  for (const int64_t length : {int64_t(1024), int64_t(8192)}) {
    const Tensor k = random_floats(DType::Float16, {1, kv_heads, length, dim}, 10);
    const Tensor v = random_floats(DType::Float16, {1, kv_heads, length, dim}, 11);
    const double bytes = 2.0 * (2 * heads * dim + 2 * kv_heads * length * dim);
    OpCase c{"Sdpa decode f16 32/8 heads, D 128, KV " + std::to_string(length),
             "Sdpa",
             {{"q", q}, {"k", k}, {"v", v}},
             {{"scale", kernel::Value(scale)}},
             bytes,
             computed_once([=] { return decode_attention_reference(q, k, v, scale); })};
    c.copy_bytes = static_cast<uint64_t>(bytes / 2);
    cases.push_back(std::move(c));
  }
}

// The FMA kernel (backend/webgpu/roofline.h) doing about `flops` of work per run: the compute
// ceiling a compute-bound op is measured against.
struct FmaWay {
  FmaWay(GpuContext& gpu, uint32_t iters) : fma(gpu, backend::webgpu::kFmaWorkgroups, iters) {}
  FmaWay(const FmaWay&) = delete;  // `way` records through this
  FmaWay& operator=(const FmaWay&) = delete;
  backend::webgpu::FmaKernel fma;
  Way way{"f32 FMA chains (the compute ceiling)", [this] { fma.record(); }};
};

std::unique_ptr<FmaWay> fma_way(GpuContext& gpu, double flops) {
  const double threads = backend::webgpu::kFmaWorkgroups * 256.0;
  return std::make_unique<FmaWay>(gpu,
                                  static_cast<uint32_t>(std::max(1.0, flops / (threads * backend::webgpu::kFmaFlopPerTrip))));
}

// Row k of a [rows, depth] @ [depth, cols] product, in double.
double product_element(const Tensor& a, const Tensor& b, int64_t k) {
  const int64_t depth = b.dim(0), cols = b.dim(1), row = k / cols, col = k % cols;
  double sum = 0;
  for (int64_t i = 0; i < depth; ++i) sum += at(a, row * depth + i) * at(b, i * cols + col);
  return sum;
}

// Matmul (Addmm without a bias): decode GEMVs over the weights of Llama-style layers (8B and 1B), read at the
// copy bandwidth (bfloat16 weights packed, two to a word), and a 4096^3 GEMM against the FMA ceiling.
void add_matmul_cases(std::vector<OpCase>& cases) {
  for (const auto& [depth, cols, dtype] :
       {std::tuple{int64_t(4096), int64_t(4096), DType::Float16}, std::tuple{int64_t(4096), int64_t(4096), DType::Float32},
        std::tuple{int64_t(4096), int64_t(14336), DType::Float16}, std::tuple{int64_t(14336), int64_t(4096), DType::Float16},
        std::tuple{int64_t(4096), int64_t(4096), DType::BFloat16}, std::tuple{int64_t(4096), int64_t(14336), DType::BFloat16},
        std::tuple{int64_t(14336), int64_t(4096), DType::BFloat16}, std::tuple{int64_t(4096), int64_t(1024), DType::BFloat16},
        std::tuple{int64_t(2048), int64_t(2048), DType::BFloat16}, std::tuple{int64_t(2048), int64_t(8192), DType::BFloat16},
        std::tuple{int64_t(8192), int64_t(2048), DType::BFloat16}}) {
    const Tensor x = random_floats(dtype, {1, depth}, 12), w = random_floats(dtype, {depth, cols}, 13);
    const double bytes = static_cast<double>(dtype_size(dtype)) * (depth * cols + depth + cols);
    OpCase c{"Matmul GEMV " + std::string(dtype_name(dtype)) + " [1, " + std::to_string(depth) + "] @ [" + std::to_string(depth) +
                 ", " + std::to_string(cols) + "]",
             "Addmm",
             {{"mat1", x}, {"mat2", w}},
             {},
             bytes,
             [=](int64_t k) { return product_element(x, w, k); }};
    c.copy_bytes = static_cast<uint64_t>(bytes / 2);
    if (dtype == DType::BFloat16) c.tolerance = 8e-3;  // the output rounds to bfloat16
    cases.push_back(std::move(c));
  }
  const int64_t side = 4096;
  for (const DType dtype : {DType::Float32, DType::Float16}) {
    const Tensor a = random_floats(dtype, {side, side}, 14), b = random_floats(dtype, {side, side}, 15);
    OpCase c{"Matmul GEMM " + std::string(dtype_name(dtype)) + " 4096^3",
             "Addmm",
             {{"mat1", a}, {"mat2", b}},
             {},
             3.0 * dtype_size(dtype) * side * side,
             [=](int64_t k) { return product_element(a, b, k); }};
    c.flops = 2.0 * side * side * side;
    cases.push_back(std::move(c));
  }
}

// Affine-quantized weights as MLX packs them: [experts..., rows, depth * bits / 32] u32 words
// (values LSB first along each row) with a scale and a bias per `group` values, in `dtype`.
struct QuantizedWeights {
  Tensor w, scales, biases;
  int64_t depth = 0;
  int bits = 4, group = 64;

  // The weight of row `row` (counted over the experts), column `col`: scale * q + bias.
  double at_rc(int64_t row, int64_t col) const {
    const auto* words = w.data_as<uint32_t>() + row * (depth * bits / 32);
    const int64_t bit = col * bits;
    uint64_t v = words[bit / 32] >> (bit % 32);
    if (bit % 32 + bits > 32) v |= uint64_t{words[bit / 32 + 1]} << (32 - bit % 32);
    const int64_t g = row * (depth / group) + col / group;
    return at(scales, g) * static_cast<double>(v & ((1u << bits) - 1)) + at(biases, g);
  }
};

QuantizedWeights random_quantized(Shape rows, int64_t depth, int bits, int group, DType dtype, uint32_t seed) {
  QuantizedWeights q;
  q.depth = depth, q.bits = bits, q.group = group;
  Shape words = rows, groups = rows;
  words.push_back(depth * bits / 32);
  groups.push_back(depth / group);
  q.w = Tensor(DType::UInt32, words);
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < q.w.numel(); ++i) q.w.mutable_data_as<uint32_t>()[i] = rng();
  // Scales that keep each weight about 1 in size, as a quantized layer's are about its range.
  q.scales = random_floats(dtype, groups, seed + 1);
  q.biases = random_floats(dtype, groups, seed + 2);
  for (int64_t i = 0; i < q.scales.numel(); ++i)
    store_double(dtype, q.scales.mutable_data(), i, at(q.scales, i) / double(1 << bits));
  return q;
}

double quantized_bytes(const QuantizedWeights& q, int64_t rows) {
  const int64_t per_row = q.w.dim(q.w.rank() - 1) * 4 + 2 * (q.depth / q.group) * int64_t(dtype_size(q.scales.dtype()));
  return static_cast<double>(rows * per_row);
}

// The [rows, depth] weights a QMV case reads: 8B's q/o and gate/up; with 4 bits also 8B's down and
// the 1B's q/o, gate/up, down and tied lm_head, where K = 2048 gives a workgroup of 128 invocations
// only 64 chunks a row.
std::vector<std::pair<int64_t, int64_t>> qmv_shapes(int bits) {
  std::vector<std::pair<int64_t, int64_t>> shapes = {{4096, 4096}, {14336, 4096}};
  if (bits == 4) shapes.insert(shapes.end(), {{4096, 14336}, {2048, 2048}, {8192, 2048}, {2048, 8192}, {128256, 2048}});
  return shapes;
}

// Quantized matmuls (affine, x @ w.T): decode QMVs over Llama-style layer weights, 4-bit (the
// common case), 8-bit and 2-bit at group 64, read at the copy bandwidth (bytes: packed weights,
// scales, biases, x and y); a 4-bit prefill QMM against the FMA ceiling; and the mixture-of-experts
// decode: one token's top-2 of 8 experts (GatherQmm), the two experts' bytes. Only the cases
// `only` selects are built (the weights are large).
void add_quantized_cases(std::vector<OpCase>& cases, const std::string& only) {
  const auto wanted = [&](const std::string& label) { return label.find(only) != std::string::npos; };
  constexpr int kGroup = 64;
  for (const int bits : {4, 8, 2})
    for (const auto& [rows, depth] : qmv_shapes(bits))
      for (const DType dtype : {DType::Float16, DType::BFloat16}) {
        const std::string label = "QuantizedMatmul QMV " + std::to_string(bits) + "-bit g64 " + std::string(dtype_name(dtype)) +
                                  " [1, " + std::to_string(depth) + "] @ [" + std::to_string(rows) + ", " +
                                  std::to_string(depth) + "].T";
        if (!wanted(label)) continue;
        const QuantizedWeights q = random_quantized({rows}, depth, bits, kGroup, dtype, 21);
        const Tensor x = random_floats(dtype, {1, depth}, 22);
        const double bytes = quantized_bytes(q, rows) + double(dtype_size(dtype)) * (depth + rows);
        OpCase c{label,
                 "QuantizedMatmul",
                 {{"x", x}, {"w", q.w}, {"scales", q.scales}, {"biases", q.biases}},
                 {{"bits", kernel::Value(int64_t{bits})}, {"group_size", kernel::Value(int64_t{kGroup})}},
                 bytes,
                 // clang 14 cannot capture a structured binding implicitly.
                 [=, depth = depth](int64_t k) {
                   double sum = 0;
                   for (int64_t i = 0; i < depth; ++i) sum += at(x, i) * q.at_rc(k, i);
                   return sum;
                 }};
        c.copy_bytes = static_cast<uint64_t>(bytes / 2);
        if (dtype == DType::BFloat16) c.tolerance = 8e-3;
        cases.push_back(std::move(c));
      }
  const int64_t prefill = 512, side = 4096;
  if (const std::string label = "QuantizedMatmul QMM 4-bit g64 f16 [512, 4096] @ [4096, 4096].T"; wanted(label)) {
    const QuantizedWeights q = random_quantized({side}, side, 4, kGroup, DType::Float16, 23);
    const Tensor x = random_floats(DType::Float16, {prefill, side}, 24);
    OpCase c{label,
             "QuantizedMatmul",
             {{"x", x}, {"w", q.w}, {"scales", q.scales}, {"biases", q.biases}},
             {{"bits", kernel::Value(int64_t{4})}, {"group_size", kernel::Value(int64_t{kGroup})}},
             quantized_bytes(q, side) + 2.0 * (prefill * side * 2),
             [=](int64_t k) {
               double sum = 0;
               for (int64_t i = 0; i < side; ++i) sum += at(x, (k / side) * side + i) * q.at_rc(k % side, i);
               return sum;
             }};
    c.flops = 2.0 * prefill * side * side;
    cases.push_back(std::move(c));
  }
  if (const std::string label = "GatherQmm 4-bit g64 f16 top-2 of 8 experts [14336, 4096].T, 1 token"; wanted(label)) {
    const int64_t experts = 8, rows = 14336;
    const QuantizedWeights q = random_quantized({experts, rows}, side, 4, kGroup, DType::Float16, 25);
    const Tensor x = random_floats(DType::Float16, {1, 1, side}, 26);
    Tensor chosen(DType::UInt32, {1, 2});
    chosen.mutable_data_as<uint32_t>()[0] = 5;
    chosen.mutable_data_as<uint32_t>()[1] = 2;
    const double bytes = quantized_bytes(q, 2 * rows) + 2.0 * (side + 2 * rows);
    OpCase c{label,
             "GatherQmm",
             {{"x", x}, {"w", q.w}, {"scales", q.scales}, {"biases", q.biases}, {"rhs_indices", chosen}},
             {{"bits", kernel::Value(int64_t{4})}, {"group_size", kernel::Value(int64_t{kGroup})}},
             bytes,
             [=](int64_t k) {
               const int64_t expert = chosen.data_as<uint32_t>()[k / rows];
               double sum = 0;
               for (int64_t i = 0; i < side; ++i) sum += at(x, i) * q.at_rc(expert * rows + k % rows, i);
               return sum;
             }};
    c.copy_bytes = static_cast<uint64_t>(bytes / 2);
    cases.push_back(std::move(c));
  }
}

// A 3x3 convolution, 64 -> 64 channels on 224 x 224 (padding 1): FLOP-bound, so its rate is
// measured against the FMA kernel.
OpCase conv2d_case() {
  constexpr int64_t side = 224, channels = 64, taps = 3;
  const Tensor x = random_floats(DType::Float32, {1, side, side, channels}, 7);
  const Tensor w = random_floats(DType::Float32, {channels, taps, taps, channels}, 8);
  OpCase c{"Conv2D f32 3x3 64->64 [1, 224, 224, 64] padding 1",
           "Conv2D",
           {{"x", x}, {"w", w}},
           {{"padding_h", kernel::Value(int64_t{1})}, {"padding_w", kernel::Value(int64_t{1})}},
           4.0 * (2 * x.numel() + w.numel()),
           [=](int64_t k) {
             const int64_t co = k % channels, ow = k / channels % side, oh = k / channels / side;
             double sum = 0;
             for (int64_t kh = 0; kh < taps; ++kh)
               for (int64_t kw = 0; kw < taps; ++kw) {
                 const int64_t ih = oh + kh - 1, iw = ow + kw - 1;
                 if (ih < 0 || ih >= side || iw < 0 || iw >= side) continue;
                 for (int64_t ci = 0; ci < channels; ++ci)
                   sum += at(x, (ih * side + iw) * channels + ci) * at(w, ((co * taps + kh) * taps + kw) * channels + ci);
               }
             return sum;
           }};
  c.flops = 2.0 * side * side * channels * taps * taps * channels;
  return c;
}

// Reductions of the rows and columns of x and a softmax of 4096 rows of 4096: the traffic is the
// input read once and the output written once (the softmax's reading its row twice is its cost).
void add_reduction_cases(std::vector<OpCase>& cases, const Tensor& x) {
  const int64_t rows = x.dim(0), cols = x.dim(1);
  for (const int64_t axis : {int64_t(-1), int64_t(0)}) {
    const int64_t outputs = axis == 0 ? cols : rows;
    const double bytes = 4.0 * (x.numel() + outputs);
    OpCase c{"Sum f32 [n/4096, 4096] over " + std::string(axis == 0 ? "axis 0" : "the last axis"),
             "Sum",
             {{"x", x}},
             {{"axes", kernel::Value::int_list({axis})}, {"keepdims", kernel::Value(false)}},
             bytes,
             computed_once([=] {
               std::vector<double> sums(static_cast<size_t>(outputs));
               for (int64_t k = 0; k < x.numel(); ++k) sums[axis == 0 ? k % cols : k / cols] += at(x, k);
               return sums;
             })};
    c.copy_bytes = static_cast<uint64_t>(bytes / 2);
    cases.push_back(std::move(c));
  }
  const int64_t side = 4096;
  const Tensor logits = random_floats(DType::Float32, {side, side}, 12);
  cases.push_back({"Softmax f32 [4096, 4096] over the last axis",
                   "Softmax",
                   {{"x", logits}},
                   {{"axis", kernel::Value(int64_t{-1})}, {"precise", kernel::Value(false)}},
                   8.0 * side * side,
                   computed_once([=] {
                     std::vector<double> out(static_cast<size_t>(logits.numel()));
                     for (int64_t r = 0; r < side; ++r) {
                       double greatest = -INFINITY, total = 0;
                       for (int64_t i = 0; i < side; ++i) greatest = std::max(greatest, at(logits, r * side + i));
                       for (int64_t i = 0; i < side; ++i)
                         total += out[r * side + i] = std::exp(at(logits, r * side + i) - greatest);
                       for (int64_t i = 0; i < side; ++i) out[r * side + i] /= total;
                     }
                     return out;
                   })});
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
  cases.push_back({"Add f32 [n] + [n]", "Add", {{"a", a}, {"b", b}}, {}, 12.0 * n, [=](int64_t k) {
                     return double(float(at(a, k) + at(b, k)));
                   }});
  cases.push_back(
      {"Add f32 [n/4096, 4096] + [4096]", "Add", {{"a", a.reshaped({rows, cols})}, {"b", row}}, {}, 8.0 * n, [=](int64_t k) {
         return double(float(at(a, k) + at(row, k % cols)));
       }});
  cases.push_back({"Exp f32 [n]", "Exp", {{"x", a}}, {}, 8.0 * n, [=](int64_t k) { return std::exp(at(a, k)); }});
  cases.push_back(
      {"Multiply f16 [n] * [n]", "Multiply", {{"a", h}, {"b", g}}, {}, 6.0 * n, [=](int64_t k) { return at(h, k) * at(g, k); }});
  add_reduction_cases(cases, a.reshaped({rows, cols}));
  cases.push_back({"Transpose f32 [s, s]",
                   "Transpose",
                   {{"x", square}},
                   {{"perm", kernel::Value::int_list({1, 0})}},
                   8.0 * side * side,
                   [=](int64_t k) { return at(square, (k % side) * side + k / side); }});
  add_attention_cases(cases);
  add_matmul_cases(cases);
  add_quantized_cases(cases, o.only);
  cases.push_back(conv2d_case());
  return cases;
}

kernel::KernelPlan plan_for(GpuContext& gpu, const OpCase& c) {
  kernel::KernelRequest r;
  for (const auto& [name, t] : c.inputs) r.inputs[name] = {t.dtype(), t.shape()};
  r.attributes = c.attributes;
  return gpu.engine().plan(*gpu.engine().find("mlx", c.op), r, gpu.caps(), gpu.tunables());
}

using Ranges = std::map<std::string, gpu::BufferRange>;

// Records the plan's passes as the backend does (plan_runner.cpp), but into the buffers of
// `ranges` (by tensor name), compiled with or without wgpu-native's runtime checks.
std::function<void()> direct_dispatches(GpuContext& gpu, const kernel::KernelPlan& plan, const Ranges& ranges,
                                        bool skip_runtime_checks) {
  struct Dispatch {
    const gpu::Kernel* kernel;
    std::vector<gpu::BufferRange> buffers;
    const kernel::PlanPass* pass;
  };
  std::vector<Dispatch> dispatches;
  for (const kernel::PlanPass& pass : plan.passes) {
    gpu::KernelSource k = backend::webgpu::kernel_source_of(plan, pass);
    k.skip_runtime_checks = skip_runtime_checks;
    Dispatch d{nullptr, {}, &pass};
    for (const kernel::PlanBinding& b : pass.bindings)
      if (b.role != kernel::BindingRole::Params) d.buffers.push_back(ranges.at(b.tensor));
    d.kernel = &gpu.pipelines().get(k);
    dispatches.push_back(std::move(d));
  }
  return [&gpu, dispatches] {
    for (const Dispatch& d : dispatches) {
      const auto params = std::span(reinterpret_cast<const std::byte*>(d.pass->params.data()), d.pass->params.size());
      gpu.recorder().dispatch(*d.kernel, d.buffers, params,
                              gpu::Grid{d.pass->dispatch[0], d.pass->dispatch[1], d.pass->dispatch[2]}, d.pass->name);
    }
  };
}

// Hand-written WGSL for one op case: bindings `a`, `b` (read), `out`, then `params` ({count: u32},
// the output's element count) when uses_params; a vec4 of each per step.
struct RawVariant {
  std::string label;
  std::string body;  // the WGSL after the binding declarations
  bool uses_params = false;
  uint64_t workgroups = 0;  // 0: one invocation per vec4 of the output, 256 per workgroup
  // Fold a workgroup count above the per-dimension limit into rows of equal length (at most
  // rows - 1 extra workgroups) instead of rows of the limit (up to a whole row extra).
  bool balanced_fold = false;
};

gpu::Grid balanced_fold(uint64_t count, uint64_t limit) {
  const uint64_t rows = (count + limit - 1) / limit;
  return {static_cast<uint32_t>((count + rows - 1) / rows), static_cast<uint32_t>(rows), 1};
}

constexpr uint64_t kGridStrideWorkgroups = 132 * 8;  // H200: 132 SMs, 8 workgroups of 256 fill one

std::vector<RawVariant> raw_variants(const std::string& label) {
  const std::string global_id =
      "@compute @workgroup_size(256)\n"
      "fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {\n"
      "  let i = id.x + id.y * n.x * 256u;\n";
  if (label == "Add f32 [n] + [n]") {
    // The template's shape: workgroup ids linearised, the count from params.
    const std::string spec_style =
        "@compute @workgroup_size(256)\n"
        "fn main(@builtin(workgroup_id) w: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>,\n"
        "        @builtin(local_invocation_index) l: u32) {\n"
        "  let i = ((w.z * n.y + w.y) * n.x + w.x) * 256u + l;\n"
        "  if (i >= params.count / 4u) { return; }\n"
        "  out[i] = a[i] + b[i];\n}\n";
    return {
        {"copy-style: global id, arrayLength guard", global_id + "  if (i < arrayLength(&out)) { out[i] = a[i] + b[i]; }\n}\n"},
        {"spec-style: workgroup ids linearised, params.count guard", spec_style, true},
        {"spec-style, balanced fold", spec_style, true, 0, true},
        {"grid-stride loop, 1056 workgroups",
         "@compute @workgroup_size(256)\n"
         "fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {\n"
         "  for (var i = id.x; i < arrayLength(&out); i += n.x * 256u) { out[i] = a[i] + b[i]; }\n}\n",
         false, kGridStrideWorkgroups},
        {"grid-stride loop, 4224 workgroups",
         "@compute @workgroup_size(256)\n"
         "fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {\n"
         "  for (var i = id.x; i < arrayLength(&out); i += n.x * 256u) { out[i] = a[i] + b[i]; }\n}\n",
         false, 4 * kGridStrideWorkgroups},
    };
  }
  if (label == "Multiply f16 [n] * [n]") {
    return {
        {"f16 arithmetic", global_id + "  if (i < arrayLength(&out)) { out[i] = a[i] * b[i]; }\n}\n"},
        {"f32 arithmetic, rounded to f16",
         global_id + "  if (i < arrayLength(&out)) { out[i] = vec4<f16>(vec4<f32>(a[i]) * vec4<f32>(b[i])); }\n}\n"},
    };
  }
  return {};
}

std::string raw_wgsl(const RawVariant& v, DType dtype) {
  const std::string vec = dtype == DType::Float16 ? "vec4<f16>" : "vec4<f32>";
  std::string wgsl = dtype == DType::Float16 ? "enable f16;\n" : "";
  wgsl += "@group(0) @binding(0) var<storage, read> a: array<" + vec + ">;\n";
  wgsl += "@group(0) @binding(1) var<storage, read> b: array<" + vec + ">;\n";
  wgsl += "@group(0) @binding(2) var<storage, read_write> out: array<" + vec + ">;\n";
  if (v.uses_params) wgsl += "struct Params { count: u32, };\n@group(0) @binding(3) var<uniform> params: Params;\n";
  return wgsl + v.body;
}

// The largest relative difference from the expected output over the first and last 1024
// elements of the output buffer (which the grid-stride variants reach last).
double check_ends(GpuContext& gpu, const OpCase& c, DType dtype, const gpu::BufferRange& out, int64_t numel) {
  const int64_t size = static_cast<int64_t>(dtype_size(dtype)), count = 1024;
  double worst = 0;
  for (const int64_t first : {int64_t(0), numel - count}) {
    const std::vector<std::byte> bytes = gpu.recorder().read(
        {out.buffer, out.id, out.offset + static_cast<uint64_t>(first * size), static_cast<uint64_t>(count * size)}, "raw check");
    for (int64_t k = 0; k < count; ++k) {
      const double want = c.expected(first + k);
      worst = std::max(worst, std::fabs(load_as_double(dtype, reinterpret_cast<const uint8_t*>(bytes.data()), k) - want) /
                                  std::max(1.0, std::fabs(want)));
    }
  }
  return worst;
}

// A compute-bound op's ways as TFLOP/s and their ratio to the FMA kernel of ways[0].
void report_flops(const OpCase& c, const FmaWay& fma, const std::vector<Way>& ways, nlohmann::json& op) {
  const double ceiling = fma.fma.flop() / ways[0].timing.seconds;
  std::printf("%s (f32 FMA ceiling, interleaved: %.1f TFLOP/s)\n", c.label.c_str(), ceiling / 1e12);
  op["fma_tflops"] = ceiling / 1e12;
  for (size_t w = 1; w < ways.size(); ++w) {
    const Timing& t = ways[w].timing;
    const double rate = c.flops / t.seconds;
    std::printf("  %-74s %8.1f us (recording %5.1f us) %5.1f TFLOP/s %5.1f%% of FMA\n", ways[w].how.c_str(), t.seconds * 1e6,
                t.record_seconds * 1e6, rate / 1e12, 100.0 * rate / ceiling);
    op["ways"].push_back(
        {{"how", ways[w].how}, {"us", t.seconds * 1e6}, {"tflops", rate / 1e12}, {"ratio_to_fma", rate / ceiling}});
    if (w == 1) {
      op["us"] = t.seconds * 1e6;
      op["tflops"] = rate / 1e12;
      op["ratio_to_fma"] = rate / ceiling;
    }
  }
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--adapter")
      o.adapter = value;
    else if (flag == "--mib")
      o.mib = std::stoull(value);
    else if (flag == "--reps")
      o.reps = std::stoi(value);
    else if (flag == "--runs")
      o.runs = std::stoi(value);
    else if (flag == "--json")
      o.json_path = value;
    else if (flag == "--tunable")
      o.tunables.push_back(value);
    else if (flag == "--only")
      o.only = value;
    else if (flag == "--gpu-timestamps")
      o.gpu_timestamps = value == "1";
    else if (flag == "--time-wrong-results")
      o.time_wrong_results = value == "1";
    else
      throw Error(ErrorCode::InvalidArgument, "unknown option " + flag);
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
    go.profile = o.gpu_timestamps;
    auto gpu = std::make_shared<GpuContext>(go);
    const double roofline = copy_roofline(*gpu, o, o.mib << 20);
    std::printf("%s\ncopy roofline (vec4, %llu MiB): %.0f GB/s\n", gpu->device().adapter().summary().c_str(),
                static_cast<unsigned long long>(o.mib), roofline / 1e9);
    nlohmann::json results = {{"adapter", gpu->device().adapter().summary()}, {"copy_gbps", roofline / 1e9}};
    for (const OpCase& c : op_cases(o)) {
      if (c.label.find(o.only) == std::string::npos) continue;
      const kernel::KernelPlan plan = plan_for(*gpu, c);
      const auto placed = backend::webgpu::place_inputs(gpu, plan, c.inputs);
      const double error = check(c, backend::webgpu::run_plan(gpu, plan, placed).at("out"));
      if (error > c.tolerance) {
        const std::string message = c.label + ": result differs from the CPU by " + std::to_string(error);
        if (!o.time_wrong_results) throw Error(ErrorCode::Runtime, message);
        std::printf("%s (timed anyway)\n", message.c_str());
      }
      nlohmann::json op = {{"op", c.label}};
      std::vector<Way> ways;
      const uint64_t out_bytes = c.copy_bytes ? c.copy_bytes : plan.tensor("out")->gpu_bytes;
      const auto copy = copy_way(*gpu, out_bytes);
      const auto fma = c.flops > 0 ? fma_way(*gpu, c.flops) : nullptr;
      ways.push_back(fma ? fma->way : copy->way);
      ways.emplace_back("run_plan (as the backend runs it)", [&] { backend::webgpu::run_plan(gpu, plan, placed); });

      Ranges ranges;
      for (size_t i = 0; i < placed.size(); ++i)
        if (placed[i]) ranges[plan.tensors[i].name] = placed[i]->range();
      std::vector<std::shared_ptr<gpu::PooledBuffer>> outputs;
      for (const kernel::PlanTensor& t : plan.tensors)
        if (t.is_output || t.is_scratch)
          ranges[t.name] = outputs.emplace_back(backend::webgpu::new_buffer(*gpu, t.gpu_bytes, plan.op))->range();
      for (const bool skip : {false, true})
        ways.emplace_back(skip ? "plan's kernels, direct, runtime checks off" : "plan's kernels, direct",
                          direct_dispatches(*gpu, plan, ranges, skip));

      const DType dtype = c.inputs.begin()->second.dtype();
      const int64_t numel = c.inputs.begin()->second.numel();
      const uint32_t count = static_cast<uint32_t>(numel);
      for (const RawVariant& v : raw_variants(c.label)) {
        for (const bool skip : {false, true}) {
          gpu::KernelSource k;
          k.label = v.label;
          k.wgsl = raw_wgsl(v, dtype);
          k.bindings = {gpu::Access::Read, gpu::Access::Read, gpu::Access::ReadWrite};
          k.params_size = v.uses_params ? 4 : 0;
          k.skip_runtime_checks = skip;
          const gpu::Kernel& kernel = gpu->pipelines().get(k);
          const std::vector<gpu::BufferRange> buffers = {ranges.at("a"), ranges.at("b"), ranges.at("out")};
          const auto params = v.uses_params ? std::as_bytes(std::span(&count, 1)) : std::span<const std::byte>();
          const uint64_t workgroups = v.workgroups ? v.workgroups : (numel / 4 + 255) / 256;
          const std::string how = "raw: " + v.label + (skip ? ", runtime checks off" : "");
          const gpu::Grid grid = v.balanced_fold
                                     ? balanced_fold(workgroups, gpu->device().limits().maxComputeWorkgroupsPerDimension)
                                     : gpu::fold_workgroups(workgroups, gpu->device().limits().maxComputeWorkgroupsPerDimension);
          ways.emplace_back(
              how, [&gpu, &kernel, buffers, params, grid, how] { gpu->recorder().dispatch(kernel, buffers, params, grid, how); });
          ways.back().record();
          const double raw_error = check_ends(*gpu, c, dtype, ranges.at("out"), numel);
          if (raw_error > 2e-3 && !o.time_wrong_results)
            throw Error(ErrorCode::Runtime, how + ": result differs from the CPU by " + std::to_string(raw_error));
        }
      }

      measure(*gpu, o, ways);
      if (fma) {
        report_flops(c, *fma, ways, op);
        results["ops"].push_back(op);
        continue;
      }
      const double copy_bps = 2.0 * static_cast<double>(out_bytes) / ways[0].timing.seconds;
      std::printf("%s (copy of %s, interleaved: %.0f GB/s)\n", c.label.c_str(),
                  c.copy_bytes ? "half its traffic" : "the output's size", copy_bps / 1e9);
      op["copy_gbps"] = copy_bps / 1e9;
      for (size_t w = 1; w < ways.size(); ++w) {
        const Timing& t = ways[w].timing;
        const double gbps = c.bytes / t.seconds / 1e9;
        std::printf("  %-74s %8.1f us (recording %5.1f us) %5.0f GB/s %5.1f%% of copy", ways[w].how.c_str(), t.seconds * 1e6,
                    t.record_seconds * 1e6, gbps, 100.0 * gbps * 1e9 / copy_bps);
        nlohmann::json j = {{"how", ways[w].how},
                            {"us", t.seconds * 1e6},
                            {"record_us", t.record_seconds * 1e6},
                            {"gbps", gbps},
                            {"ratio_to_copy", gbps * 1e9 / copy_bps},
                            {"batch_us", t.batch_us}};
        if (o.gpu_timestamps) {
          std::printf("; GPU timestamps %8.1f us %5.0f GB/s", t.gpu_seconds * 1e6, c.bytes / t.gpu_seconds / 1e9);
          j["gpu_us"] = t.gpu_seconds * 1e6;
        }
        std::printf("\n");
        op["ways"].push_back(j);
        if (w == 1) {
          op["us"] = t.seconds * 1e6;
          op["gbps"] = gbps;
          op["ratio_to_copy"] = gbps * 1e9 / copy_bps;
        }
      }
      results["ops"].push_back(op);
    }
    if (!o.json_path.empty()) std::ofstream(o.json_path) << results.dump(2) << "\n";
  } catch (const Error& e) {
    std::fprintf(stderr, "kernel_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
