#pragma once
// Chat prompts for a conversation (system, user and assistant messages), ending where the assistant's
// next reply begins: the token ids transformers' apply_chat_template(add_generation_prompt=True) gives
// for the formats below. wgml has no Jinja engine to run a model's own chat template (docs/llm.md,
// "Chat templates", says why), so it writes the formats it knows and recognises a model's template
// by their markers.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "wgml/tokenizer.h"

namespace wgml {

enum class ChatFormat {
  Llama3,  // <|start_header_id|>user<|end_header_id|>\n\n...<|eot_id|> (Llama 3, 3.1, 3.2)
  ChatML,  // <|im_start|>user\n...<|im_end|>\n (Qwen2, Qwen2.5, Qwen3, SmolLM)
  Llama2,  // <s>[INST] <<SYS>>\n...\n<</SYS>>\n\n... [/INST] (Llama 2; Mistral without a system message)
};

// "llama3", "chatml" or "llama2"; throws wgml::Error (invalid-argument) naming the known ones.
ChatFormat chat_format_from_name(std::string_view name);
const char* chat_format_name(ChatFormat format);

// The format of the tokenizer's chat template, by its markers; none without a template or for a
// template of another format.
std::optional<ChatFormat> detect_chat_format(const Tokenizer& tokenizer);

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

// The prompt's ids, BOS included where the format has it. The model's own template may add more
// than the format: Llama 3.1's dated system preamble, Qwen2.5's default system message.
std::vector<TokenId> chat_prompt(const Tokenizer& tokenizer, ChatFormat format, std::string_view user,
                                 std::string_view system = {});
// The same for a conversation. Llama 2's format takes one system message, first, followed by user
// and assistant messages in turn, the last a user's; it ends each assistant turn with the
// tokenizer's first EOS. Throws wgml::Error (invalid-argument) naming the message that breaks
// these rules, or an unknown role.
std::vector<TokenId> chat_prompt(const Tokenizer& tokenizer, ChatFormat format, std::span<const ChatMessage> messages);

}  // namespace wgml
