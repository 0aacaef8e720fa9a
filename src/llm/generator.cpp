#include <algorithm>
#include <chrono>
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

}  // namespace

Generator::Generator(Session& session) : session_(session) {
  const std::vector<IoInfo>& in = session.inputs();
  const std::vector<IoInfo>& out = session.outputs();
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
  positions_per_token_ = in[1].shape[0] != 1 || in[0].shape[1] == 1;
  vocab_size_ = out[0].shape.back();
  max_context_ = program_context(session);
}

std::vector<Value> Generator::inputs_for(std::span<const int64_t> tokens) const {
  const int64_t n = static_cast<int64_t>(tokens.size());
  Tensor ids(DType::Int64, {1, n});
  std::copy(tokens.begin(), tokens.end(), ids.mutable_data_as<int64_t>());
  Tensor positions(DType::Int64, {positions_per_token_ ? n : 1});
  for (int64_t i = 0; i < positions.numel(); ++i) positions.mutable_data_as<int64_t>()[i] = position_ + i;
  return {ids, positions};
}

std::vector<float> Generator::forward(std::span<const int64_t> tokens) {
  if (tokens.empty() || static_cast<int64_t>(tokens.size()) > max_tokens_per_call_)
    throw Error(ErrorCode::InvalidArgument, "generate: a call takes 1 to " + std::to_string(max_tokens_per_call_) +
                                                " tokens, found " + std::to_string(tokens.size()));
  const std::vector<Value> outputs = session_.run(inputs_for(tokens));
  position_ += static_cast<int64_t>(tokens.size());
  const Tensor* logits = std::get_if<Tensor>(&outputs[0]);
  if (!logits || logits->numel() < vocab_size_ || logits->numel() % vocab_size_ != 0)
    throw Error(ErrorCode::Runtime, "generate: output 0 is not a whole number of logits rows of " + std::to_string(vocab_size_));
  return to_floats(logits->flat_range(logits->numel() - vocab_size_, vocab_size_));
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
  const RunStats before_decode = session_.totals();
  Clock::time_point decode_start = Clock::now();
  while (static_cast<int64_t>(made.size()) < options.max_new_tokens) {
    if (!made.empty()) {
      if (context > 0 && position_ >= context) {
        stats_.stop_reason = StopReason::ContextFull;
        break;
      }
      logits = forward(std::span<const int64_t>(&made.back(), 1));
      ++stats_.decode_steps;
    }
    const int64_t token = sampler.next(logits);
    made.push_back(token);
    if (made.size() == 1) {
      stats_.first_token_ms = ms_since(start);
      decode_start = Clock::now();
    }
    const bool stop = std::find(options.stop_tokens.begin(), options.stop_tokens.end(), token) != options.stop_tokens.end();
    if (on_token && !on_token(token)) {
      stats_.stop_reason = StopReason::Callback;
      break;
    }
    if (stop) {
      stats_.stop_reason = StopReason::StopToken;
      break;
    }
  }
  stats_.decode_ms = stats_.decode_steps ? ms_since(decode_start) : 0;
  stats_.decode_totals = session_.totals() - before_decode;
  stats_.generated_tokens = static_cast<int64_t>(made.size());
  return made;
}

}  // namespace wgml
