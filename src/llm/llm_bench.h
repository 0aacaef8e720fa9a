#pragma once
// What `wgml bench` measures, as llama-bench does: prompt processing (pp, a prompt of random token
// ids fed from an empty cache in chunks) and token generation (tg, single-token decode steps after
// that prompt, each fed the greedy token of the step before as Generator::generate makes them: on
// a GPU one step ahead), in tokens per second, through wgml::Generator's public calls.
#include <cstdint>
#include <vector>

#include "wgml/generator.h"

namespace wgml::llm {

// The sizes of one benchmark pass: the prompt, then the decode steps after it.
struct BenchSizes {
  int64_t prompt = 512;    // pp: prompt tokens
  int64_t generate = 128;  // tg: single-token decode steps
};

// The sizes a program with a context of `context` positions can run (the decode steps write at
// positions prompt .. prompt + generate - 1). `requested` where they fit or the context is unknown
// (0); else the prompt takes at most half the context and the decode steps at most a quarter, so
// both stay far from a single token (512 + 128 in a context of 128: 64 + 32). Throws
// wgml::Error(InvalidArgument) for a size below 1, or a context too small for one of each.
BenchSizes fit_to_context(const BenchSizes& requested, int64_t context);

struct BenchOptions {
  BenchSizes sizes;          // fit to the context (fit_to_context)
  int64_t prompt_chunk = 0;  // tokens per prefill call; 0: Generator::max_tokens_per_call()
  int repetitions = 3;       // measured passes after the warm-up pass
  uint64_t seed = 0;         // draws the token ids
};

// One pass from an empty cache. The prompt's time ends when the first token is picked; each decode
// step's time runs from one token's read to the next.
struct BenchPass {
  double prompt_ms = 0;
  std::vector<double> step_ms;  // each decode step
  double generate_ms() const;
};

struct BenchResult {
  int64_t prompt_chunk = 0;   // tokens per prefill call, as used
  int64_t prefill_calls = 0;  // calls per prompt
  BenchPass warmup;           // the first pass: pipeline compiles and first uploads land here
  std::vector<BenchPass> passes;
};

// A warm-up pass, then options.repetitions measured passes, each after Generator::reset(). Throws
// wgml::Error(InvalidArgument) for a prompt chunk above what the program takes per call, or sizes
// beyond its context, and what Generator throws.
BenchResult run_bench(Generator& generator, const BenchOptions& options);

// Mean, median and sample standard deviation (0 for one value) of some measurements.
struct Spread {
  double mean = 0;
  double median = 0;
  double stdev = 0;
};
Spread spread_of(std::vector<double> values);

}  // namespace wgml::llm
