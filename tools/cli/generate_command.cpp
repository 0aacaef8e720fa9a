#include "generate_command.h"

#include <cstdio>
#include <iostream>

#include "wgml/error.h"

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
               "%.2f pipelines compiled\n",
               t.dispatches / n, t.submits / n, t.bytes_uploaded / n, t.bytes_read / n, t.buffers_created / n,
               t.pipelines_compiled / n);
}

}  // namespace

GenerateCommand::GenerateCommand(CLI::App& app) {
  command_ = app.add_subcommand("generate", "Generate text with an LLM exported by ExecuTorch's MLX LLM path");
  session_.add_to(*command_);
  command_->add_option("--prompt-ids", prompt_ids_, "The prompt as token ids, comma-separated")->required();
  command_->add_option("--max-new-tokens", options_.max_new_tokens, "Tokens to generate")->capture_default_str();
  command_->add_option("--temperature", options_.sampling.temperature, "0: greedy")->capture_default_str();
  command_->add_option("--top-k", options_.sampling.top_k, "Sample from the k likeliest tokens (0: all)")->capture_default_str();
  command_->add_option("--top-p", options_.sampling.top_p, "Nucleus sampling mass")->capture_default_str();
  command_->add_option("--seed", options_.sampling.seed, "Sampling seed")->capture_default_str();
  command_->add_option("--stop-token", options_.stop_tokens, "Token ids that end generation (repeatable)");
  command_->add_option("--max-seq-len", options_.max_sequence, "The program's sequence capacity (0: unknown)");
  command_->add_flag("--stats", stats_, "Also print GPU work per decode token: dispatches, submits, bytes moved");
}

int GenerateCommand::run() const {
  Session session = session_.open();
  Generator generator(session);
  const std::vector<int64_t> prompt = parse_ids(prompt_ids_);
  generator.generate(prompt, options_, [](int64_t token) {
    std::cout << token << "\n" << std::flush;
    return true;
  });
  print_stats(generator.stats(), stats_);
  if (session_.profile()) print_profile(session, session_.trace_path);
  return 0;
}

}  // namespace wgml::cli
