#pragma once
// wgml::Tokenizer: text to token ids and back for LLM generation, read from a model's own tokenizer
// files by maintained libraries (docs/llm.md, "Tokenizers"):
//   tokenizer.json   byte-level BPE (Llama 3, Qwen2/3, GPT-2, ...): pytorch/tokenizers' HFTokenizer
//   tokenizer.model  SentencePiece (Llama 2, Mistral, Gemma): SentencePiece itself; or a tiktoken
//                    file (Meta's original Llama 3 release): pytorch/tokenizers' Tiktoken
// tokenizer_config.json and generation_config.json beside them name BOS, the stop tokens and the
// chat template.
//
//   auto tokenizer = wgml::Tokenizer::load("model_dir");
//   std::vector<wgml::TokenId> prompt = tokenizer.encode("Hello", tokenizer.adds_bos());
//   wgml::TextStream stream = tokenizer.stream(prompt);
//   for (wgml::TokenId id : generated) std::cout << stream.push(id) << std::flush;
//   std::cout << stream.flush();
//
// No header of the tokenizer libraries is included here: only tokenizer.cpp sees them.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wgml {

using TokenId = int64_t;  // the dtype of an LLM's token-id input (torch.long)

class TextStream;

class Tokenizer {
 public:
  // `path`: a model directory holding tokenizer.json or tokenizer.model (tokenizer.json first, as
  // Hugging Face does), or one of those files. Throws wgml::Error naming the file and what was
  // expected when it is missing, unreadable or of a kind no library here reads.
  static Tokenizer load(const std::string& path);

  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  // The ids of `text`, BOS first when `add_bos` (and the tokenizer has one). A tokenizer.json's
  // special tokens written in the text (<|eot_id|>) become their ids, as in Hugging Face's
  // tokenizers; SentencePiece reads them as plain text, as the sentencepiece library does.
  std::vector<TokenId> encode(std::string_view text, bool add_bos) const;
  // The text of `ids`, special tokens included. Bytes that do not form UTF-8 (a character cut
  // between tokens) become U+FFFD. Throws wgml::Error for an id outside the vocabulary.
  std::string decode(std::span<const TokenId> ids) const;
  // A decoder for generated tokens, one at a time. `context`: the tokens before the first one
  // pushed (the prompt; the last few suffice), which decide whether its leading space shows.
  TextStream stream(std::span<const TokenId> context = {}) const;

  std::optional<TokenId> bos_id() const;
  // Whether the model's tokenizer puts BOS in front of a prompt (tokenizer_config.json's
  // add_bos_token, else tokenizer.json's post-processor; SentencePiece and tiktoken: yes).
  bool adds_bos() const;
  // The tokens that end generation: generation_config.json's eos_token_id (one or a list: Llama 3
  // stops at <|end_of_text|> and <|eot_id|>), tokenizer_config.json's eos_token and the tokenizer's
  // own EOS.
  const std::vector<TokenId>& eos_ids() const;
  bool is_eos(TokenId id) const;
  int64_t vocab_size() const;
  // tokenizer_config.json's Jinja chat template; empty when there is none.
  const std::string& chat_template() const;
  // "tokenizer.json", "sentencepiece" or "tiktoken": which reader took the file.
  const std::string& kind() const;
  // The tokenizer file read.
  const std::string& path() const;

  struct State;  // defined in tokenizer.cpp

 private:
  explicit Tokenizer(std::unique_ptr<State> state);

  std::unique_ptr<State> state_;
};

// Turns generated token ids into text as they come, emitting only complete characters: a character
// whose bytes span several byte-level tokens (an emoji, CJK) appears once its last token arrives.
// The text pushed so far plus flush() equals decode() of all the ids after the context. It uses
// the tokenizer's state, which moving the Tokenizer keeps; the Tokenizer must outlive it.
class TextStream {
 public:
  // The text that `id` completes; empty while a character is still incomplete.
  std::string push(TokenId id);
  // What is still held back (a character cut off at the end comes out as U+FFFD).
  std::string flush();

 private:
  friend class Tokenizer;
  TextStream(const Tokenizer::State& tokenizer, std::span<const TokenId> context);
  std::string take(bool at_end);

  const Tokenizer::State* tokenizer_;
  // The ids from the start of the decoded window; the text of its first `emitted_` ids was
  // returned already (or is context). Decoding the window, not single ids, keeps the spaces
  // SentencePiece gives a piece only by its position.
  std::vector<TokenId> window_;
  size_t emitted_ = 0;
};

}  // namespace wgml
