#include "bench_command.h"

#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "backend/webgpu/roofline.h"
#include "core/printable.h"
#include "frontend/load_model.h"
#include "llm/model_work.h"
#include "llm/random_constants.h"
#include "wgml/error.h"
#include "wgml/generator.h"

namespace wgml::cli {
namespace {

// A folder of its own under the system's temporary folder, removed with everything in it.
class TemporaryFolder {
 public:
  TemporaryFolder() {
    std::string pattern = (std::filesystem::temp_directory_path() / "wgml-bench-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw Error(ErrorCode::Io, pattern + ": cannot create a temporary folder for random weights");
    path_ = pattern;
  }
  ~TemporaryFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// Where the constants come from: the model file (or its --constants), or drawn at random.
struct Weights {
  SessionArgs session;  // what to open: the model, or its payload with the drawn constants
  bool random = false;
  double draw_ms = 0;
};

Weights prepare_weights(const SessionArgs& args, bool random_weights, uint64_t seed, std::optional<TemporaryFolder>& folder) {
  Weights weights{args};
  if (!random_weights && !llm::payload_without_constants(args.path, args.constants)) return weights;
  const auto start = std::chrono::steady_clock::now();
  folder.emplace();
  const llm::RandomWeightsModel drawn =
      llm::write_random_weights_model(args.path, folder->path(), seed, std::max(1u, std::thread::hardware_concurrency()));
  weights.draw_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  weights.session.path = drawn.payload_path;
  weights.session.constants = drawn.constants_path;
  weights.random = true;
  return weights;
}

std::vector<double> tokens_per_s(int64_t tokens, const std::vector<double>& ms) {
  std::vector<double> out;
  for (double m : ms) out.push_back(m > 0 ? static_cast<double>(tokens) * 1e3 / m : 0);
  return out;
}

// What a test's rate is counted in: the prompt's matrix-product flop (against the FMA roofline), a
// decode step's weight bytes (against the copy).
struct Rate {
  enum class Roofline { Fma, Copy };
  const char* unit;  // "TFLOP/s", "GB/s"
  Roofline roofline;
  double per_pass = 0;  // flop or bytes of a pass
  double scale = 0;     // units per (flop or byte) per second

  const char* roofline_name() const { return roofline == Roofline::Fma ? "FMA" : "copy"; }
  double ceiling(const backend::webgpu::DeviceCeilings& c) const {
    return roofline == Roofline::Fma ? c.fma_flop_per_s : c.copy_bytes_per_s;
  }
};

// One row of the table: a test's tokens/s over the measured passes, and its rate at the median.
struct TestResult {
  std::string name;  // "pp64", "tg32"
  int64_t tokens = 0;
  std::vector<double> pass_ms;
  std::vector<double> pass_tokens_per_s;
  llm::Spread spread;
  Rate rate;
  double median_rate = 0;  // in rate.unit
  double of_roofline = 0;  // of the roofline measured in the same run; 0: not measured
};

TestResult test_result(const char* kind, int64_t tokens, const std::vector<double>& pass_ms, const Rate& rate) {
  TestResult test;
  test.name = kind + std::to_string(tokens);
  test.tokens = tokens;
  test.pass_ms = pass_ms;
  test.pass_tokens_per_s = tokens_per_s(tokens, pass_ms);
  test.spread = llm::spread_of(test.pass_tokens_per_s);
  test.rate = rate;
  test.median_rate = rate.per_pass * test.spread.median / static_cast<double>(tokens) * rate.scale;
  return test;
}

std::vector<TestResult> test_results(const llm::BenchSizes& sizes, const llm::BenchResult& result, const llm::ModelWork& work) {
  std::vector<double> prompt_ms, generate_ms;
  for (const llm::BenchPass& pass : result.passes) {
    prompt_ms.push_back(pass.prompt_ms);
    generate_ms.push_back(pass.generate_ms());
  }
  const Rate flop{"TFLOP/s", Rate::Roofline::Fma, work.product_flop(sizes.prompt, result.prefill_calls), 1e-12};
  const Rate bytes{"GB/s", Rate::Roofline::Copy,
                   static_cast<double>(work.weight_bytes_per_step) * static_cast<double>(sizes.generate), 1e-9};
  return {test_result("pp", sizes.prompt, prompt_ms, flop), test_result("tg", sizes.generate, generate_ms, bytes)};
}

// The rooflines of the session's WebGPU adapter, measured on a context of their own after the passes.
std::optional<backend::webgpu::DeviceCeilings> measure_ceilings(const SessionArgs& args, const Session& session) {
  if (session.device_description().rfind("webgpu", 0) != 0) return std::nullopt;
  backend::webgpu::GpuOptions options;
  options.adapter = args.adapter;
  backend::webgpu::GpuContext gpu(options);
  return backend::webgpu::measure_ceilings(gpu);
}

void set_roofline_ratios(std::vector<TestResult>& tests, const backend::webgpu::DeviceCeilings& c) {
  for (TestResult& test : tests) {
    const double ceiling = test.rate.ceiling(c);
    test.of_roofline = ceiling > 0 ? test.median_rate / test.rate.scale / ceiling : 0;
  }
}

// Everything a run decided and measured, for the table and the JSON alike.
struct Report {
  std::string model;
  const Weights* weights = nullptr;
  uint64_t seed = 0;
  std::string device;  // Session::device_description(): "cpu", "webgpu: <adapter>"
  int64_t context = 0;
  llm::BenchSizes requested, used;
  int repetitions = 0;
  double load_ms = 0;
  llm::BenchResult result;
  llm::ModelWork work;
  std::vector<TestResult> tests;
  std::optional<backend::webgpu::DeviceCeilings> ceilings;  // --roofline on a WebGPU device
};

std::string weights_label(const Report& r) {
  return r.weights->random ? "random (seed " + std::to_string(r.seed) + ")" : "from the file";
}

void print_table(const Report& r) {
  const bool clamped = r.used.prompt != r.requested.prompt || r.used.generate != r.requested.generate;
  std::printf("model: %s, weights %s", printable(r.model).c_str(), weights_label(r).c_str());
  if (r.weights->random) std::printf(" drawn in %.1f ms", r.weights->draw_ms);
  std::printf("\ndevice: %s\n", printable(r.device).c_str());
  if (r.context == 0)
    std::printf("context: not declared by the program; sizes as asked\n");
  else if (clamped)
    std::printf("context: %lld positions: pp%lld + tg%lld do not fit, clamped to pp%lld + tg%lld\n",
                static_cast<long long>(r.context), static_cast<long long>(r.requested.prompt),
                static_cast<long long>(r.requested.generate), static_cast<long long>(r.used.prompt),
                static_cast<long long>(r.used.generate));
  else
    std::printf("context: %lld positions\n", static_cast<long long>(r.context));
  std::printf("load: %.1f ms; warm-up pass (pipeline compiles, first uploads): prompt %.1f ms, %lld decode steps %.1f ms\n",
              r.load_ms, r.result.warmup.prompt_ms, static_cast<long long>(r.used.generate), r.result.warmup.generate_ms());
  std::printf("prompt: %lld tokens in %lld call(s) of up to %lld; %d measured passes after the warm-up\n\n",
              static_cast<long long>(r.used.prompt), static_cast<long long>(r.result.prefill_calls),
              static_cast<long long>(r.result.prompt_chunk), r.repetitions);
  if (r.ceilings)
    std::printf("rooflines measured after the passes: copy %.1f GB/s (vec4, %llu MiB, read + write), FMA %.2f TFLOP/s (f32)\n",
                r.ceilings->copy_bytes_per_s * 1e-9, static_cast<unsigned long long>(r.ceilings->copy_bytes >> 20),
                r.ceilings->fma_flop_per_s * 1e-12);
  std::printf(
      "rate at the median: pp, the prompt's matrix products (%.3g weight elements a token, %.3g once a call; "
      "attention not counted); tg, the weights a step reads (%.1f MB)\n\n",
      static_cast<double>(r.work.product_elements_per_token), static_cast<double>(r.work.product_elements_per_call),
      static_cast<double>(r.work.weight_bytes_per_step) * 1e-6);
  std::printf("| model | weights | device | test | t/s | median t/s | rate | of roofline |\n");
  std::printf("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |\n");
  for (const TestResult& test : r.tests) {
    // A rate the program's products or weights cannot give (none found) reads "-".
    char rate[64] = "-", of[64] = "-";
    if (test.median_rate > 0) std::snprintf(rate, sizeof rate, "%.4g %s", test.median_rate, test.rate.unit);
    if (test.of_roofline > 0) std::snprintf(of, sizeof of, "%.1f%% of %s", 100 * test.of_roofline, test.rate.roofline_name());
    std::printf("| %s | %s | %s | %s | %.2f ± %.2f | %.2f | %s | %s |\n", printable(r.model).c_str(),
                r.weights->random ? "random" : "file", r.device.substr(0, r.device.find(':')).c_str(), test.name.c_str(),
                test.spread.mean, test.spread.stdev, test.spread.median, rate, of);
  }
}

nlohmann::json pass_json(const llm::BenchPass& pass) {
  return {{"prompt_ms", pass.prompt_ms}, {"generate_ms", pass.generate_ms()}, {"step_ms", pass.step_ms}};
}

nlohmann::json report_json(const Report& r) {
  const size_t colon = r.device.find(": ");
  nlohmann::json json = {
      {"wgml_version", WGML_VERSION},
      {"model", r.model},
      {"weights", r.weights->random ? "random" : "file"},
      {"device", r.device.substr(0, colon)},
      {"adapter", colon == std::string::npos ? nlohmann::json() : nlohmann::json(r.device.substr(colon + 2))},
      {"context", r.context},
      {"requested", {{"prompt", r.requested.prompt}, {"generate", r.requested.generate}}},
      {"clamped", r.used.prompt != r.requested.prompt || r.used.generate != r.requested.generate},
      {"prompt_tokens", r.used.prompt},
      {"generate_tokens", r.used.generate},
      {"prompt_chunk", r.result.prompt_chunk},
      {"prefill_calls", r.result.prefill_calls},
      {"repetitions", r.repetitions},
      {"seed", r.seed},
      {"load_ms", r.load_ms},
      {"warmup", pass_json(r.result.warmup)},
  };
  if (r.weights->random) json["weights_draw_ms"] = r.weights->draw_ms;
  nlohmann::json passes = nlohmann::json::array();
  for (const llm::BenchPass& pass : r.result.passes) passes.push_back(pass_json(pass));
  json["passes"] = passes;
  nlohmann::json tests = nlohmann::json::array();
  for (const TestResult& test : r.tests)
    tests.push_back(
        {{"test", test.name},
         {"tokens", test.tokens},
         {"tokens_per_s", {{"mean", test.spread.mean}, {"median", test.spread.median}, {"stdev", test.spread.stdev}}},
         {"pass_ms", test.pass_ms},
         {"pass_tokens_per_s", test.pass_tokens_per_s},
         {"median_rate",
          test.median_rate > 0 ? nlohmann::json({{"value", test.median_rate}, {"unit", test.rate.unit}}) : nlohmann::json()},
         {"of_roofline", test.of_roofline > 0 ? nlohmann::json(test.of_roofline) : nlohmann::json()},
         {"roofline", test.rate.roofline_name()}});
  json["tests"] = tests;
  json["work"] = {{"weight_bytes_per_step", r.work.weight_bytes_per_step},
                  {"product_elements_per_token", r.work.product_elements_per_token},
                  {"product_elements_per_call", r.work.product_elements_per_call}};
  if (r.ceilings)
    json["rooflines"] = {{"copy_gbps", r.ceilings->copy_bytes_per_s * 1e-9},
                         {"copy_bytes", r.ceilings->copy_bytes},
                         {"fma_tflops", r.ceilings->fma_flop_per_s * 1e-12}};
  return json;
}

}  // namespace

BenchCommand::BenchCommand(CLI::App& app) {
  command_ = app.add_subcommand(
      "bench",
      "Measure an LLM program as llama-bench does: prompt processing (ppP) and token generation (tgN) in tokens/s "
      "(docs/performance.md)");
  session_.add_to(*command_);
  command_->add_option("-p,--prompt", sizes_.prompt, "Prompt tokens (random ids), fed in chunks")->capture_default_str();
  command_->add_option("-n,--generate", sizes_.generate, "Single-token decode steps after the prompt (greedy generation)")
      ->capture_default_str();
  command_
      ->add_option("--prompt-chunk", prompt_chunk_,
                   "Tokens per prefill call (0: the program's largest, as wgml generate feeds a prompt)")
      ->capture_default_str();
  command_->add_option("-r,--repetitions", repetitions_, "Measured passes after the warm-up pass")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  command_->add_option("--seed", seed_, "Seed of the prompt's token ids and of random weights")->capture_default_str();
  command_
      ->add_flag("--random-weights", random_weights_,
                 "Draw the constants from the program's metadata (.pte or .mlxg; automatic for a .mlxg without its "
                 ".safetensors)")
      ->excludes(command_->get_option("--constants"));
  command_->add_flag("--json", json_, "Print every measurement, the device and the wgml version as JSON");
  command_->add_flag("--roofline", roofline_,
                     "webgpu: after the passes, measure the adapter's copy bandwidth and f32 FMA rate, and give each "
                     "test's rate as a share of them (pp against FMA, tg against the copy)");
}

int BenchCommand::run() const {
  std::optional<TemporaryFolder> folder;
  const Weights weights = prepare_weights(session_, random_weights_, seed_, folder);
  Session session = weights.session.open();
  // An ONNX decoder is driven as `wgml generate` drives it: by the genai_config.json beside it.
  std::optional<DecoderConfig> decoder;
  if (std::filesystem::path(session_.path).extension() == ".onnx") decoder = read_genai_config(session_.path);
  Generator generator = decoder ? Generator(session, *decoder) : Generator(session);

  Report report;
  report.model = session_.path;
  report.weights = &weights;
  report.seed = seed_;
  report.device = session.device_description();
  report.context = generator.max_context();
  report.requested = sizes_;
  report.used = llm::fit_to_context(sizes_, report.context);
  report.repetitions = repetitions_;
  report.load_ms = session.load_ms();
  report.result = llm::run_bench(generator, {report.used, prompt_chunk_, repetitions_, seed_});
  report.work = llm::model_work(frontend::load_model(weights.session.path, {weights.session.constants}).program);
  report.tests = test_results(report.used, report.result, report.work);
  if (roofline_) report.ceilings = measure_ceilings(session_, session);
  if (report.ceilings) set_roofline_ratios(report.tests, *report.ceilings);

  if (json_)
    std::cout << report_json(report).dump(2, ' ', true, nlohmann::json::error_handler_t::replace) << "\n";
  else
    print_table(report);
  std::cout << std::flush;
  if (session_.profile()) print_profile(session, session_.trace_path);
  return 0;
}

}  // namespace wgml::cli
