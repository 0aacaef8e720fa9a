#include "generate_command.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include <filesystem>
#include <optional>

#include "llm/chat_format.h"
#include "wgml/error.h"
#include "wgml/tokenizer.h"

namespace wgml::cli {
namespace {

std::vector<int64_t> parse_ids(const std::string& list) {
  std::vector<int64_t> ids;
  size_t begin = 0;
  while (begin < list.size()) {
    size_t used = 0;
    const std::string item = list.substr(begin, list.find(',', begin) - begin);
    try {
      ids.push_back(std::stoll(item, &used));
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item.empty())
      throw Error(ErrorCode::InvalidArgument, "--prompt-ids: '" + item + "' is not a token id (expected ids like 1,2,3)");
    begin += item.size() + 1;
  }
  return ids;
}

void print_stats(const GenerationStats& s, bool details) {
  std::fprintf(
      stderr, "prompt: %lld tokens in %lld calls, %.1f tokens/s; first token after %.1f ms; decode: %lld tokens, %.1f tokens/s\n",
      static_cast<long long>(s.prompt_tokens), static_cast<long long>(s.prefill_calls), s.prompt_tokens_per_s(), s.first_token_ms,
      static_cast<long long>(s.generated_tokens), s.decode_tokens_per_s());
  if (!details || s.decode_steps == 0) return;
  const RunStats& t = s.decode_totals;
  const double n = static_cast<double>(s.decode_steps);
  std::fprintf(stderr,
               "per decode token: %.1f dispatches, %.1f submits, %.0f bytes uploaded, %.0f bytes read, %.2f buffers created, "
               "%.2f bind groups created, %.2f pipelines compiled\n",
               t.dispatches / n, t.submits / n, t.bytes_uploaded / n, t.bytes_read / n, t.buffers_created / n,
               t.bind_groups_created / n, t.pipelines_compiled / n);
}

std::string model_directory(const std::string& model) {
  const std::filesystem::path dir = std::filesystem::path(model).parent_path();
  return dir.empty() ? "." : dir.string();
}

}  // namespace

GenerateCommand::GenerateCommand(CLI::App& app) {
  command_ = app.add_subcommand(
      "generate",
      "Generate text with an LLM exported by ExecuTorch's MLX LLM path, or an ONNX decoder with its KV cache as "
      "inputs and outputs (onnxruntime-genai's builder; genai_config.json beside it)");
  session_.add_to(*command_);
  auto* prompt = command_->add_option("--prompt", prompt_, "The prompt text");
  auto* ids = command_->add_option("--prompt-ids", prompt_ids_, "The prompt as token ids, comma-separated (no tokenizer needed)");
  prompt->excludes(ids);
  command_->add_option("--tokenizer", tokenizer_path_,
                       "tokenizer.json / tokenizer.model, or their directory (default: the model's directory)");
  command_->add_flag("--chat", chat_, "Wrap the prompt as one user message in the model's chat format");
  command_->add_option("--chat-format", chat_format_, "llama3, chatml or llama2 (default: recognised from the tokenizer)");
  command_->add_option("--system", system_, "A system message for --chat");
  command_->add_flag("--ids", print_ids_, "Print token ids, one per line, instead of text");
  command_->add_option("--max-new-tokens", options_.max_new_tokens, "Tokens to generate")->capture_default_str();
  command_->add_option("--temperature", options_.sampling.temperature, "0: greedy")->capture_default_str();
  command_->add_option("--top-k", options_.sampling.top_k, "Sample from the k likeliest tokens (0: all)")->capture_default_str();
  command_->add_option("--top-p", options_.sampling.top_p, "Nucleus sampling mass")->capture_default_str();
  command_->add_option("--seed", options_.sampling.seed, "Sampling seed")->capture_default_str();
  command_->add_option("--stop-token", options_.stop_tokens, "Token ids that end generation (repeatable)");
  command_->add_option("--max-seq-len", options_.max_sequence,
                       "The most positions the prompt and new tokens may fill (0: the program's context, its "
                       "get_max_ctx_len or KV cache length, or genai_config.json's context_length; more is an error)");
  command_->add_flag("--stats", stats_, "Also print GPU work per decode token: dispatches, submits, bytes moved");
}

std::vector<int64_t> GenerateCommand::prompt_tokens(const Tokenizer* tokenizer) const {
  if (!prompt_ids_.empty()) return parse_ids(prompt_ids_);
  if (!tokenizer) throw Error(ErrorCode::InvalidArgument, "generate: expected --prompt TEXT or --prompt-ids IDS");
  if (!chat_ && chat_format_.empty()) return tokenizer->encode(prompt_, tokenizer->adds_bos());
  std::optional<ChatFormat> format =
      chat_format_.empty() ? detect_chat_format(*tokenizer) : std::optional(chat_format_from_name(chat_format_));
  if (!format)
    throw Error(ErrorCode::InvalidArgument, tokenizer->path() +
                                                ": --chat: the tokenizer's chat template is of no known format; name one with "
                                                "--chat-format llama3|chatml|llama2");
  return chat_prompt(*tokenizer, *format, prompt_, system_);
}

int GenerateCommand::run() const {
  if (prompt_ids_.empty() && prompt_.empty())
    throw Error(ErrorCode::InvalidArgument, "generate: expected a non-empty --prompt TEXT, or --prompt-ids IDS");
  // The model first: a wrong model path is reported as the model file, not as a tokenizer missing beside it.
  Session session = session_.open();
  std::optional<Tokenizer> tokenizer;
  if (prompt_ids_.empty() || !tokenizer_path_.empty())
    tokenizer = Tokenizer::load(tokenizer_path_.empty() ? model_directory(session_.path) : tokenizer_path_);
  const std::vector<int64_t> prompt = prompt_tokens(tokenizer ? &*tokenizer : nullptr);
  // An ONNX decoder is driven as onnxruntime-genai drives it: by its genai_config.json, which also says where it stops.
  std::optional<DecoderConfig> decoder;
  if (std::filesystem::path(session_.path).extension() == ".onnx") decoder = read_genai_config(session_.path);
  GenerationOptions options = options_;
  if (options.stop_tokens.empty() && decoder) options.stop_tokens = decoder->eos_token_ids;
  if (options.stop_tokens.empty() && tokenizer) options.stop_tokens = tokenizer->eos_ids();
  Generator generator = decoder ? Generator(session, *decoder) : Generator(session);
  std::optional<TextStream> text;
  if (tokenizer && !print_ids_) text.emplace(tokenizer->stream(prompt));
  generator.generate(prompt, options, [&](int64_t token) {
    const bool stop = std::find(options.stop_tokens.begin(), options.stop_tokens.end(), token) != options.stop_tokens.end();
    if (stop && text) return true;
    if (text)
      std::cout << text->push(token);
    else
      std::cout << token << "\n";
    std::cout << std::flush;
    return true;
  });
  // The text ends its line and reaches stdout before the closing lines go to stderr, which may share its pipe.
  if (text) std::cout << text->flush() << "\n";
  std::cout << std::flush;
  const GenerationStats& stats = generator.stats();
  if (stats.stop_reason == StopReason::ContextFull)
    std::fprintf(stderr, "generate: stopped: the context of %lld positions is full (%lld prompt tokens, %lld new tokens)\n",
                 static_cast<long long>(generator.position()), static_cast<long long>(stats.prompt_tokens),
                 static_cast<long long>(stats.generated_tokens));
  print_stats(stats, stats_);
  if (session_.profile()) print_profile(session, session_.trace_path);
  return 0;
}

}  // namespace wgml::cli
