#include "llm/llm_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <string>

#include "wgml/error.h"

namespace wgml::llm {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); }

std::vector<int64_t> random_tokens(std::mt19937_64& random, int64_t count, int64_t vocab) {
  std::uniform_int_distribution<int64_t> token(0, vocab - 1);
  std::vector<int64_t> tokens(static_cast<size_t>(count));
  for (int64_t& t : tokens) t = token(random);
  return tokens;
}

// The prompt in chunks of `chunk` tokens from an empty cache, then `generate` tokens of greedy
// generation after it as Generator::generate makes them (on a GPU one step ahead: a step's time
// runs from one token to the next). The last chunk is generate()'s prompt, so the prompt's time
// ends when the first token is picked.
BenchPass run_pass(Generator& generator, const std::vector<int64_t>& prompt, int64_t generate, int64_t chunk) {
  generator.reset();
  BenchPass pass;
  const std::span<const int64_t> all(prompt);
  const size_t last_chunk = (prompt.size() - 1) / static_cast<size_t>(chunk) * static_cast<size_t>(chunk);
  const Clock::time_point start = Clock::now();
  for (size_t done = 0; done < last_chunk; done += static_cast<size_t>(chunk))
    generator.forward(all.subspan(done, static_cast<size_t>(chunk)));
  Clock::time_point last = start;
  bool first = true;
  const auto on_token = [&](int64_t) {
    const double ms = ms_since(last);
    (first ? pass.prompt_ms : pass.step_ms.emplace_back()) = ms;
    first = false;
    last = Clock::now();
    return true;
  };
  generator.generate(all.subspan(last_chunk), {.max_new_tokens = generate + 1}, on_token);
  return pass;
}

}  // namespace

double BenchPass::generate_ms() const { return std::accumulate(step_ms.begin(), step_ms.end(), 0.0); }

BenchSizes fit_to_context(const BenchSizes& requested, int64_t context) {
  if (requested.prompt < 1 || requested.generate < 1)
    throw Error(ErrorCode::InvalidArgument, "bench: a prompt of " + std::to_string(requested.prompt) + " tokens and " +
                                                std::to_string(requested.generate) +
                                                " decode steps (expected at least 1 of each)");
  if (context == 0 || requested.prompt + requested.generate <= context) return requested;
  if (context < 2)
    throw Error(ErrorCode::InvalidArgument, "bench: the program's context of " + std::to_string(context) +
                                                " positions holds no prompt token and decode step (expected at least 2)");
  return {std::min(requested.prompt, std::max<int64_t>(1, context / 2)),
          std::min(requested.generate, std::max<int64_t>(1, context / 4))};
}

BenchResult run_bench(Generator& generator, const BenchOptions& options) {
  const BenchSizes& sizes = options.sizes;
  const int64_t context = generator.max_context();
  if (context > 0 && sizes.prompt + sizes.generate > context)
    throw Error(ErrorCode::InvalidArgument, "bench: a prompt of " + std::to_string(sizes.prompt) + " tokens and " +
                                                std::to_string(sizes.generate) + " decode steps do not fit the context of " +
                                                std::to_string(context) + " positions");
  if (options.prompt_chunk < 0 || options.prompt_chunk > generator.max_tokens_per_call())
    throw Error(ErrorCode::InvalidArgument, "bench: a prompt chunk of " + std::to_string(options.prompt_chunk) +
                                                " tokens (expected 1 to the program's largest call, " +
                                                std::to_string(generator.max_tokens_per_call()) + " tokens, or 0 for it)");
  if (options.repetitions < 1)
    throw Error(ErrorCode::InvalidArgument,
                "bench: " + std::to_string(options.repetitions) + " repetitions (expected at least 1)");
  BenchResult result;
  result.prompt_chunk = std::min(options.prompt_chunk ? options.prompt_chunk : generator.max_tokens_per_call(), sizes.prompt);
  result.prefill_calls = (sizes.prompt + result.prompt_chunk - 1) / result.prompt_chunk;
  // The same tokens in every pass, so that passes differ only in time.
  std::mt19937_64 random(options.seed);
  const std::vector<int64_t> prompt = random_tokens(random, sizes.prompt, generator.vocab_size());
  result.warmup = run_pass(generator, prompt, sizes.generate, result.prompt_chunk);
  for (int r = 0; r < options.repetitions; ++r)
    result.passes.push_back(run_pass(generator, prompt, sizes.generate, result.prompt_chunk));
  return result;
}

Spread spread_of(std::vector<double> values) {
  Spread s;
  if (values.empty()) return s;
  const size_t n = values.size();
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(n);
  std::sort(values.begin(), values.end());
  s.median = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  if (n > 1) {
    double squares = 0;
    for (double v : values) squares += (v - s.mean) * (v - s.mean);
    s.stdev = std::sqrt(squares / static_cast<double>(n - 1));
  }
  return s;
}

}  // namespace wgml::llm
