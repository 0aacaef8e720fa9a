#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

#include "core/elements.h"
#include "wgml/error.h"
#include "wgml/generator.h"

namespace wgml {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); }

[[noreturn]] void unfit(const std::string& what) {
  throw Error(ErrorCode::InvalidArgument,
              "generate: " + what +
                  " (expected an LLM program as ExecuTorch exports it: input 0 token ids int64 [1, T], input 1 their "
                  "positions int64 [T] or [1], output 0 logits)");
}

[[noreturn]] void unfit_decoder(const std::string& what) {
  throw Error(ErrorCode::InvalidArgument,
              "generate: " + what +
                  " (expected an ONNX decoder as onnxruntime-genai's builder exports it: int64 input_ids [1, T] and "
                  "attention_mask, past_key_values.%d.key/value in, logits and present.%d.key/value out, under the "
                  "names genai_config.json gives)");
}

bool is_int64_tensor(const IoInfo& io) { return io.kind == "tensor" && io.dtype == DType::Int64; }

// Where the program's context ends (Generator::max_context()). A cache read past it would attend
// to positions it never wrote, or write outside it: ExecuTorch's programs do not check.
int64_t program_context(const Session& session) {
  const auto declared = session.metadata().find("get_max_ctx_len");
  if (declared != session.metadata().end()) return declared->second;
  int64_t smallest = 0;
  for (const IoInfo& buffer : session.mutable_buffers()) {
    if (buffer.shape.size() != 4 || buffer.shape[2] <= 0) continue;
    smallest = smallest ? std::min(smallest, buffer.shape[2]) : buffer.shape[2];
  }
  return smallest;
}

// Whether every mutable buffer of the program is a KV cache by its shape ([batch, heads, positions,
// head_dim], positions spanning the context): then a step is undone by stepping the position back,
// as the next step fed there overwrites its entries. A state a step changes by other rules (a
// recurrent or convolution state) could not be.
bool state_is_positional(const Session& session, int64_t context) {
  return context > 0 && std::all_of(session.mutable_buffers().begin(), session.mutable_buffers().end(),
                                    [&](const IoInfo& b) { return b.shape.size() == 4 && b.shape[2] >= context; });
}

// The layer `name` stands for in a name pattern with "%d" ("past_key_values.%d.key"), if it fits.
std::optional<size_t> layer_in(const std::string& name, const std::string& pattern) {
  const size_t hole = pattern.find("%d");
  if (hole == std::string::npos) return std::nullopt;
  const std::string prefix = pattern.substr(0, hole), suffix = pattern.substr(hole + 2);
  if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) || !name.ends_with(suffix)) return std::nullopt;
  const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.size() > 6 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoul(digits);
}

std::string layer_name(const std::string& pattern, size_t layer) {
  std::string name = pattern;
  return name.replace(name.find("%d"), 2, std::to_string(layer));
}

const IoInfo* find_io(const std::vector<IoInfo>& ios, const std::string& name, size_t* index = nullptr) {
  for (size_t i = 0; i < ios.size(); ++i) {
    if (ios[i].name != name) continue;
    if (index) *index = i;
    return &ios[i];
  }
  return nullptr;
}

// A cache dim the past input leaves dynamic is read from its present output ([batch, kv_heads, positions, head_size]).
int64_t cache_dim(const IoInfo& past, const IoInfo& present, size_t dim) {
  if (past.shape[dim] > 0) return past.shape[dim];
  if (present.shape.size() == 4 && present.shape[dim] > 0) return present.shape[dim];
  unfit_decoder("neither '" + past.name + "' nor '" + present.name + "' gives dim " + std::to_string(dim) + " a size");
}

template <typename ValueAt>
Tensor int64_tensor(Shape shape, ValueAt value_at) {
  Tensor t(DType::Int64, std::move(shape));
  int64_t* values = t.mutable_data_as<int64_t>();
  for (int64_t i = 0; i < t.numel(); ++i) values[i] = value_at(i);
  return t;
}

}  // namespace

Generator::Generator(Session& session) : session_(session) {
  if (find_io(session.inputs(), layer_name(DecoderConfig{}.past_key_names, 0)))
    bind_onnx_decoder(DecoderConfig{});
  else
    bind_executorch_program();
}

Generator::Generator(Session& session, const DecoderConfig& config) : session_(session) { bind_onnx_decoder(config); }

void Generator::bind_executorch_program() {
  const std::vector<IoInfo>& in = session_.inputs();
  const std::vector<IoInfo>& out = session_.outputs();
  if (in.size() != 2) unfit("the program has " + std::to_string(in.size()) + " inputs");
  if (!is_int64_tensor(in[0]) || in[0].shape.size() != 2 || in[0].shape[0] != 1)
    unfit("input 0 ('" + in[0].name + "') is not int64 [1, T]");
  if (!is_int64_tensor(in[1]) || in[1].shape.size() != 1) unfit("input 1 ('" + in[1].name + "') is not an int64 vector");
  if (out.empty() || out[0].kind != "tensor" || !is_floating(out[0].dtype) || out[0].shape.empty() || out[0].shape.back() <= 0)
    unfit("output 0 is not a float tensor with a static vocabulary dim");
  max_tokens_per_call_ = in[0].max_shape[1];
  if (max_tokens_per_call_ < 0) max_tokens_per_call_ = 1 << 20;
  if (max_tokens_per_call_ == 0) unfit("input 0 takes no tokens");
  // A static [1] position input is a start position; a dynamic one (or one as long as the tokens)
  // holds one position per token.
  const bool positions_per_token = in[1].shape[0] != 1 || in[0].shape[1] == 1;
  feeds_ = {{Feed::TokenIds}, {positions_per_token ? Feed::CachePositions : Feed::StartPosition}};
  vocab_size_ = out[0].shape.back();
  max_context_ = program_context(session_);
  undoable_ = state_is_positional(session_, max_context_);
}

void Generator::bind_onnx_decoder(const DecoderConfig& config) {
  const std::vector<IoInfo>& in = session_.inputs();
  const std::vector<IoInfo>& out = session_.outputs();
  std::vector<const IoInfo*> past;  // cache entry 2 * layer: its key, 2 * layer + 1: its value
  for (const IoInfo& input : in) {
    const bool int64_matrix = is_int64_tensor(input) && input.shape.size() == 2;
    const std::optional<size_t> key = layer_in(input.name, config.past_key_names);
    const std::optional<size_t> value = layer_in(input.name, config.past_value_names);
    if (key || value) {
      const size_t entry = key ? 2 * *key : 2 * *value + 1;
      if (input.kind != "tensor" || !is_floating(input.dtype) || input.shape.size() != 4)
        unfit_decoder("cache input '" + input.name + "' is not a float tensor [batch, kv_heads, positions, head_size]");
      past.resize(std::max(past.size(), entry / 2 * 2 + 2));
      past[entry] = &input;
      feeds_.push_back({Feed::Cache, entry});
    } else if (input.name == config.input_ids && int64_matrix) {
      feeds_.push_back({Feed::TokenIds});
      max_tokens_per_call_ = input.max_shape[1] < 0 ? 1 << 20 : input.max_shape[1];
    } else if (input.name == config.attention_mask && int64_matrix) {
      feeds_.push_back({Feed::AttentionMask});
    } else if (input.name == config.position_ids && int64_matrix) {
      feeds_.push_back({Feed::PositionIds});
    } else {
      unfit_decoder("input '" + input.name + "' is none this generator can feed");
    }
  }
  if (std::none_of(feeds_.begin(), feeds_.end(), [](const InputFeed& f) { return f.feed == Feed::TokenIds; }))
    unfit_decoder("no int64 [1, T] input named '" + config.input_ids + "'");
  if (max_tokens_per_call_ == 0) unfit_decoder("input '" + config.input_ids + "' takes no tokens");
  if (past.empty()) unfit_decoder("no cache input named like '" + config.past_key_names + "'");
  for (size_t entry = 0; entry < past.size(); ++entry) {
    const std::string& pattern = entry % 2 ? config.past_value_names : config.past_key_names;
    const std::string& present_pattern = entry % 2 ? config.present_value_names : config.present_key_names;
    if (!past[entry]) unfit_decoder("no cache input '" + layer_name(pattern, entry / 2) + "'");
    size_t index = 0;
    const IoInfo* present = find_io(out, layer_name(present_pattern, entry / 2), &index);
    if (!present) unfit_decoder("no output '" + layer_name(present_pattern, entry / 2) + "' for '" + past[entry]->name + "'");
    cache_outputs_.push_back(index);
    // A sequence starts from an empty cache: no past positions.
    empty_cache_.emplace_back(past[entry]->dtype,
                              Shape{1, cache_dim(*past[entry], *present, 1), 0, cache_dim(*past[entry], *present, 3)});
  }
  const IoInfo* logits = find_io(out, config.logits, &logits_output_);
  if (!logits || logits->kind != "tensor" || !is_floating(logits->dtype) || logits->shape.empty() || logits->shape.back() <= 0)
    unfit_decoder("no float output '" + config.logits + "' with a static vocabulary dim");
  vocab_size_ = logits->shape.back();
  max_context_ = config.context_length;
  cache_ = empty_cache_;
  undoable_ = true;  // its state is the cache it is fed, which a step does not change
}

void Generator::reset() {
  position_ = 0;
  cache_ = empty_cache_;
}

void Generator::fill_inputs(const Tensor& ids) {
  const int64_t n = ids.numel();
  const auto at_position = [&](int64_t i) { return position_ + i; };
  std::vector<Value>& inputs = call_inputs_;
  inputs.clear();
  for (const InputFeed& input : feeds_) {
    switch (input.feed) {
      case Feed::TokenIds:
        inputs.emplace_back(ids);
        break;
      case Feed::CachePositions:
        inputs.emplace_back(int64_tensor({n}, at_position));
        break;
      case Feed::StartPosition:
        inputs.emplace_back(int64_tensor({1}, at_position));
        break;
      case Feed::PositionIds:
        inputs.emplace_back(int64_tensor({1, n}, at_position));
        break;
      case Feed::AttentionMask:
        inputs.emplace_back(int64_tensor({1, position_ + n}, [](int64_t) { return 1; }));
        break;
      case Feed::Cache:
        inputs.emplace_back(cache_[input.cache]);
        break;
    }
  }
}

Tensor Generator::call(const Tensor& ids) {
  const int64_t n = ids.numel();
  if (n < 1 || n > max_tokens_per_call_)
    throw Error(ErrorCode::InvalidArgument,
                "generate: a call takes 1 to " + std::to_string(max_tokens_per_call_) + " tokens, found " + std::to_string(n));
  fill_inputs(ids);
  session_.run(call_inputs_, call_outputs_);
  call_inputs_.clear();
  const std::vector<Value>& outputs = call_outputs_;
  position_ += n;
  // The presents go back in as they came out: on WebGPU their bytes stay in GPU buffers.
  for (size_t entry = 0; entry < cache_outputs_.size(); ++entry) {
    const Tensor* present = std::get_if<Tensor>(&outputs[cache_outputs_[entry]]);
    if (!present)
      throw Error(ErrorCode::Runtime, "generate: cache output " + std::to_string(cache_outputs_[entry]) + " is not a tensor");
    cache_[entry] = *present;
  }
  const Tensor* logits = std::get_if<Tensor>(&outputs[logits_output_]);
  if (!logits || logits->numel() < vocab_size_ || logits->numel() % vocab_size_ != 0)
    throw Error(ErrorCode::Runtime, "generate: output " + std::to_string(logits_output_) +
                                        " is not a whole number of logits rows of " + std::to_string(vocab_size_));
  Tensor out = *logits;
  call_outputs_.clear();  // the outputs' buffers go back to the pool as the caller drops them
  return out;
}

std::vector<float> Generator::forward(std::span<const int64_t> tokens) {
  const Tensor logits = call(int64_tensor({1, static_cast<int64_t>(tokens.size())}, [&](int64_t i) { return tokens[i]; }));
  return to_floats(logits.flat_range(logits.numel() - vocab_size_, vocab_size_));
}

int64_t Generator::sequence_limit(const GenerationOptions& options) const {
  if (options.max_sequence < 0)
    throw Error(ErrorCode::InvalidArgument, "generate: max_sequence " + std::to_string(options.max_sequence) +
                                                " is negative (expected 0 for the program's context, or a position count)");
  if (options.max_sequence == 0) return max_context_;
  if (max_context_ > 0 && options.max_sequence > max_context_)
    throw Error(ErrorCode::InvalidArgument, "generate: a maximum sequence of " + std::to_string(options.max_sequence) +
                                                " positions (max_sequence, --max-seq-len) is beyond the program's context of " +
                                                std::to_string(max_context_) + " positions");
  return options.max_sequence;
}

// Greedy decoding one step ahead: each step's token is picked where its logits are
// (Session::greedy_token) and fed to the next step before the host reads it, so on a GPU the host
// records step k + 1 while the GPU runs step k. The step fed a token that ends generation (a stop
// token, the callback's false) is undone: the position steps back (a program's cache entry there is
// overwritten by the next token fed before attention reads it), and an ONNX decoder's cache goes
// back to the presents it had before that step (kept until the token is read: the two sets a step
// holds anyway).
template <class MayFeed, class Emit>
void Generator::decode_greedy(const MayFeed& may_feed, const Emit& emit, const std::vector<int64_t>& made) {
  const auto step = [&](const Tensor& ids) {
    ++stats_.decode_steps;
    return session_.greedy_token(call(ids));
  };
  Tensor picked;  // the token after made.back(), picked and not read yet; undefined when none is
  for (;;) {
    if (!picked.defined()) {
      if (!may_feed(made.size())) return;
      picked = step(int64_tensor({1, 1}, [&](int64_t) { return made.back(); }));
    }
    // Undoes the step fed `picked` ahead when `picked` ends generation, or when picking, reading
    // or handing it out throws, so that the position and the cache hold only tokens the caller got.
    const int64_t position_before = position_, steps_before = stats_.decode_steps;
    std::vector<Tensor> cache_before = cache_;
    const auto undo = [&] {
      position_ = position_before;
      stats_.decode_steps = steps_before;
      cache_ = std::move(cache_before);
    };
    Tensor next;
    bool going = false;
    try {
      if (may_feed(made.size() + 1)) next = step(picked);
      going = emit(picked.data_as<int64_t>()[0]);
    } catch (...) {
      undo();
      throw;
    }
    if (!going) return undo();
    picked = std::move(next);
  }
}

std::vector<int64_t> Generator::generate(std::span<const int64_t> prompt, const GenerationOptions& options,
                                         const TokenCallback& on_token) {
  if (prompt.empty()) throw Error(ErrorCode::InvalidArgument, "generate: expected at least one prompt token");
  const int64_t context = sequence_limit(options);
  if (context > 0 && position_ + static_cast<int64_t>(prompt.size()) > context)
    throw Error(ErrorCode::InvalidArgument, "generate: the prompt of " + std::to_string(prompt.size()) + " tokens after " +
                                                std::to_string(position_) + " cached ones does not fit the context of " +
                                                std::to_string(context) + " positions");
  Sampler sampler(options.sampling);
  stats_ = GenerationStats{};
  stats_.prompt_tokens = static_cast<int64_t>(prompt.size());
  const Clock::time_point start = Clock::now();
  std::vector<float> logits;
  for (size_t done = 0; done < prompt.size(); ++stats_.prefill_calls) {
    const size_t n = std::min<size_t>(prompt.size() - done, static_cast<size_t>(max_tokens_per_call_));
    logits = forward(prompt.subspan(done, n));
    done += n;
  }
  stats_.prefill_ms = ms_since(start);
  std::vector<int64_t> made;
  made.reserve(static_cast<size_t>(std::clamp<int64_t>(options.max_new_tokens, 0, context > 0 ? context : int64_t{1} << 16)));
  const RunStats before_decode = session_.totals();
  Clock::time_point decode_start = Clock::now();
  // Takes a new token; false when generation ends with it.
  const auto emit = [&](int64_t token) {
    made.push_back(token);
    if (made.size() == 1) {
      stats_.first_token_ms = ms_since(start);
      decode_start = Clock::now();
    }
    const bool stop = std::find(options.stop_tokens.begin(), options.stop_tokens.end(), token) != options.stop_tokens.end();
    if (on_token && !on_token(token)) {
      stats_.stop_reason = StopReason::Callback;
      return false;
    }
    if (stop) stats_.stop_reason = StopReason::StopToken;
    return !stop;
  };
  // Whether the token after the first `made` ones may be fed; says why not when the context is full.
  const auto may_feed = [&](size_t made) {
    if (static_cast<int64_t>(made) >= options.max_new_tokens) return false;
    if (context > 0 && position_ >= context) {
      stats_.stop_reason = StopReason::ContextFull;
      return false;
    }
    return true;
  };
  if (options.max_new_tokens > 0 && emit(sampler.next(logits))) {
    if (options.sampling.temperature == 0 && undoable_)
      decode_greedy(may_feed, emit, made);
    else
      while (may_feed(made.size())) {
        logits = forward(std::span<const int64_t>(&made.back(), 1));
        ++stats_.decode_steps;
        if (!emit(sampler.next(logits))) break;
      }
  }
  stats_.decode_ms = stats_.decode_steps ? ms_since(decode_start) : 0;
  stats_.decode_totals = session_.totals() - before_decode;
  stats_.generated_tokens = static_cast<int64_t>(made.size());
  return made;
}

}  // namespace wgml
