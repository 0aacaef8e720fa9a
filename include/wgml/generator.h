#pragma once
// wgml::Generator: the token loop of an exported causal language model over a Session.
//
//   wgml::Session session("llama.pte", {.device = "webgpu"});
//   wgml::Generator generator(session);
//   auto tokens = generator.generate(prompt_ids, {.max_new_tokens = 64},
//                                    [](int64_t token) { std::cout << token << "\n"; return true; });
//
// The program is called as ExecuTorch's LLM runner calls it: input 0 holds token ids [1, T]
// (int64), input 1 their positions (`cache_position` [T], or a start position [1]); output 0 holds
// logits ([1, T, vocab], [T, vocab] or [1, vocab]). The KV cache lives in the program's mutable
// buffers, which the Session keeps between calls. A prompt is fed in chunks of the program's
// largest token count, then one token per call; only the logits row a step samples from is read.
//
// An ONNX decoder as onnxruntime-genai's model builder exports it takes its KV cache as inputs
// and returns it as outputs (DecoderConfig names them). Each step's present outputs are fed back
// as the next step's past inputs as the Session returned them: on WebGPU they stay in GPU buffers,
// so a decode step uploads only its token id and attention mask and reads back one logits row.
#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "wgml/session.h"

namespace wgml {

struct SamplingOptions {
  float temperature = 0;  // 0: greedy (argmax)
  int64_t top_k = 0;      // 0: all tokens
  float top_p = 1;        // nucleus: the smallest set of tokens whose probability reaches top_p
  uint64_t seed = 0;
};

struct GenerationOptions {
  int64_t max_new_tokens = 128;
  SamplingOptions sampling;
  std::vector<int64_t> stop_tokens;  // generation ends after emitting one of these
  // The most positions the sequence may take, prompt included; 0: the program's own context
  // (Generator::max_context()). More than the program's context is an error.
  int64_t max_sequence = 0;
};

// Why generate() returned.
enum class StopReason {
  MaxNewTokens,  // max_new_tokens were made
  StopToken,     // a stop token was made
  Callback,      // the token callback returned false
  ContextFull,   // the sequence filled the context (max_sequence, or the program's context)
};

// Where the time of one generate() call went. Counters are zero on the CPU.
struct GenerationStats {
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  int64_t prefill_calls = 0;
  double prefill_ms = 0;      // the prompt's calls
  double first_token_ms = 0;  // from the start until the first new token was sampled
  double decode_ms = 0;       // every later token: its call, and its logits row read and sampled (greedy: its pick read)
  RunStats decode_totals;     // GPU work of the decode steps together
  int64_t decode_steps = 0;   // tokens made by a 1-token call
  StopReason stop_reason = StopReason::MaxNewTokens;
  double prompt_tokens_per_s() const { return prefill_ms > 0 ? prompt_tokens * 1e3 / prefill_ms : 0; }
  double decode_tokens_per_s() const { return decode_ms > 0 ? decode_steps * 1e3 / decode_ms : 0; }
};

// How an ONNX decoder names its inputs and outputs, as onnxruntime-genai's genai_config.json
// (model.decoder.inputs / outputs) does; "%d" stands for the layer. The defaults are the builder's.
struct DecoderConfig {
  std::string input_ids = "input_ids";
  std::string attention_mask = "attention_mask";  // ones [1, positions so far]
  std::string position_ids = "position_ids";      // [1, T]; optional
  std::string past_key_names = "past_key_values.%d.key";
  std::string past_value_names = "past_key_values.%d.value";
  std::string logits = "logits";
  std::string present_key_names = "present.%d.key";
  std::string present_value_names = "present.%d.value";
  // model.context_length, or search.max_length where smaller (onnxruntime-genai stops there); 0: unknown.
  int64_t context_length = 0;
  std::vector<int64_t> eos_token_ids;  // model.eos_token_id (one id or a list)
};

// The genai_config.json in the directory of `model_path`, or the defaults where there is none.
// Throws wgml::Error(InvalidFormat) naming the file and the field that is malformed.
DecoderConfig read_genai_config(const std::string& model_path);

// Called with each new token as it is made; returning false stops generation.
using TokenCallback = std::function<bool(int64_t token)>;

class Generator {
 public:
  // Checks that the session's program has the signature above; throws wgml::Error(InvalidArgument)
  // naming the input or output that does not fit.
  // An ONNX decoder whose inputs include DecoderConfig{}'s past key names is driven as by
  // Generator(session, DecoderConfig{}).
  explicit Generator(Session& session);
  // An ONNX decoder with its KV cache as inputs and outputs named by `config`; throws
  // wgml::Error(InvalidArgument) naming an input it cannot feed or an output it does not find.
  Generator(Session& session, const DecoderConfig& config);

  // The most tokens one call takes (the token input's upper bound; 1 for a decode-only export).
  int64_t max_tokens_per_call() const { return max_tokens_per_call_; }
  int64_t vocab_size() const { return vocab_size_; }
  // The most positions the program's KV cache holds: its metadata get_max_ctx_len (ExecuTorch's
  // LLM export writes it), else the sequence dim of its KV caches (rank-4 mutable buffers
  // [batch, kv_heads, positions, head_dim]); for an ONNX decoder DecoderConfig::context_length;
  // 0 when none is known.
  int64_t max_context() const { return max_context_; }
  // Tokens in the cache so far: the next call writes at this position.
  int64_t position() const { return position_; }

  // Feeds `prompt` (at least one token) after what the cache holds, then samples up to max_new_tokens; returns the new
  // tokens (a stop token included). Ends when the sequence fills the context (stats().stop_reason
  // says so). Throws wgml::Error(InvalidArgument) when the prompt does not fit the context, or
  // when options.max_sequence exceeds max_context().
  std::vector<int64_t> generate(std::span<const int64_t> prompt, const GenerationOptions& options,
                                const TokenCallback& on_token = {});
  // Forgets the sequence: the next generate() starts at position 0 (the stale cache entries are
  // overwritten before any attention reads them; an ONNX decoder's cache inputs start empty again).
  void reset();

  // The logits row after feeding `tokens` (at least one): one row of vocab_size floats.
  std::vector<float> forward(std::span<const int64_t> tokens);

  const GenerationStats& stats() const { return stats_; }

 private:
  // What the program takes as each input.
  enum class Feed {
    TokenIds,        // [1, T]
    CachePositions,  // [T]
    StartPosition,   // [1]
    PositionIds,     // [1, T]
    AttentionMask,   // ones [1, positions so far]
    Cache,           // the KV cache entry `cache` (an ONNX decoder's past input)
  };
  struct InputFeed {
    Feed feed;
    size_t cache = 0;
  };

  void bind_executorch_program();
  void bind_onnx_decoder(const DecoderConfig& config);
  // The program's inputs for token ids into call_inputs_.
  void fill_inputs(const Tensor& ids);
  // One call of the program on token ids [1, T]; returns its logits output.
  Tensor call(const Tensor& ids);
  template <class MayFeed, class Emit>
  void decode_greedy(const MayFeed& may_feed, const Emit& emit, const std::vector<int64_t>& made);
  // The positions this generation may fill: options.max_sequence, or the program's context.
  int64_t sequence_limit(const GenerationOptions& options) const;

  Session& session_;
  std::vector<InputFeed> feeds_;  // one per program input
  size_t logits_output_ = 0;
  // An ONNX decoder's KV cache: what the last call returned (device tensors on WebGPU), the empty
  // entries a sequence starts from, and the output each entry is read from.
  std::vector<Tensor> cache_;
  std::vector<Tensor> empty_cache_;
  std::vector<size_t> cache_outputs_;
  // A call's inputs and outputs, kept (emptied after each call) so that a decode step allocates none.
  std::vector<Value> call_inputs_, call_outputs_;
  int64_t max_tokens_per_call_ = 1;
  int64_t vocab_size_ = 0;
  int64_t max_context_ = 0;
  int64_t position_ = 0;
  // Whether a step can be undone (its position stepped back, an ONNX decoder's cache put back), so
  // that greedy decoding may run one step ahead.
  bool undoable_ = false;
  GenerationStats stats_;
};

// Picks the next token from one logits row: argmax when temperature is 0 (the first of equal
// maxima), else a draw from the tempered, top-k and top-p filtered distribution.
class Sampler {
 public:
  explicit Sampler(const SamplingOptions& options);
  int64_t next(std::span<const float> logits);

 private:
  SamplingOptions options_;
  std::mt19937_64 random_;  // specified by the standard: a seed gives the same tokens everywhere
};

}  // namespace wgml
