#include <chrono>

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

std::vector<int64_t> Generator::generate(std::span<const int64_t> prompt, const GenerationOptions& options,
                                         const TokenCallback& on_token) {
  if (prompt.empty()) throw Error(ErrorCode::InvalidArgument, "generate: expected at least one prompt token");
  Sampler sampler(options.sampling);
  stats_ = GenerationStats{};
  stats_.prompt_tokens = static_cast<int64_t>(prompt.size());
  const auto room = [&] { return options.max_sequence <= 0 || position_ < options.max_sequence; };
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
      if (!room()) break;
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
    if ((on_token && !on_token(token)) || stop) break;
  }
  stats_.decode_ms = stats_.decode_steps ? ms_since(decode_start) : 0;
  stats_.decode_totals = session_.totals() - before_decode;
  stats_.generated_tokens = static_cast<int64_t>(made.size());
  return made;
}

}  // namespace wgml
