#include "llm/chat_format.h"

#include <string>

#include "wgml/error.h"

namespace wgml {

namespace {

// Jinja's `trim` filter (Python's str.strip) for the ASCII whitespace prompts carry.
std::string_view trim(std::string_view text) {
  constexpr std::string_view kSpace = " \t\n\r\f\v";
  size_t first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kSpace) - first + 1);
}

std::vector<TokenId> with_bos(const Tokenizer& tokenizer, const std::string& text) {
  return tokenizer.encode(text, /*add_bos=*/true);
}

std::string concat(std::initializer_list<std::string_view> parts) {
  std::string text;
  for (std::string_view part : parts) text += part;
  return text;
}

}  // namespace

ChatFormat chat_format_from_name(std::string_view name) {
  for (ChatFormat format : {ChatFormat::Llama3, ChatFormat::ChatML, ChatFormat::Llama2}) {
    if (name == chat_format_name(format)) return format;
  }
  throw Error(ErrorCode::InvalidArgument, "unknown chat format '" + std::string(name) + "'; expected llama3, chatml or llama2");
}

const char* chat_format_name(ChatFormat format) {
  switch (format) {
    case ChatFormat::Llama3:
      return "llama3";
    case ChatFormat::ChatML:
      return "chatml";
    case ChatFormat::Llama2:
      return "llama2";
  }
  return "?";
}

std::optional<ChatFormat> detect_chat_format(const Tokenizer& tokenizer) {
  const std::string& chat_template = tokenizer.chat_template();
  if (chat_template.find("<|start_header_id|>") != std::string::npos) return ChatFormat::Llama3;
  if (chat_template.find("<|im_start|>") != std::string::npos) return ChatFormat::ChatML;
  if (chat_template.find("[INST]") != std::string::npos) return ChatFormat::Llama2;
  return std::nullopt;
}

namespace {

void check_roles(std::span<const ChatMessage> messages) {
  if (messages.empty()) throw Error(ErrorCode::InvalidArgument, "chat prompt: expected at least one message");
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string& role = messages[i].role;
    if (role != "system" && role != "user" && role != "assistant")
      throw Error(ErrorCode::InvalidArgument, "chat prompt: message " + std::to_string(i) + " has the role '" + role +
                                                  "': expected system, user or assistant");
  }
}

// Llama 2's template: the system message folds into the first user turn; each user turn opens
// with BOS, each assistant turn closes with EOS. BOS and EOS are ids, never text, for SentencePiece.
std::vector<TokenId> llama2_prompt(const Tokenizer& tokenizer, std::span<const ChatMessage> messages) {
  std::string system;
  if (messages.front().role == "system") {
    system = messages.front().content;
    messages = messages.subspan(1);
  }
  std::vector<TokenId> ids;
  for (size_t i = 0; i < messages.size(); ++i) {
    const char* expected = i % 2 == 0 ? "user" : "assistant";
    if (messages[i].role != expected || (i + 1 == messages.size() && i % 2 == 1))
      throw Error(ErrorCode::InvalidArgument,
                  "chat prompt: the llama2 format expects one system message first, then "
                  "user and assistant messages in turn ending with a user's; message " +
                      std::to_string(i + (system.empty() ? 0 : 1)) + " is a " + messages[i].role + "'s");
    std::vector<TokenId> turn;
    if (i % 2 == 0) {
      std::string content = messages[i].content;
      if (i == 0 && !system.empty()) content = concat({"<<SYS>>\n", system, "\n<</SYS>>\n\n", content});
      turn = with_bos(tokenizer, concat({"[INST] ", trim(content), " [/INST]"}));
    } else {
      if (tokenizer.eos_ids().empty())
        throw Error(
            ErrorCode::InvalidArgument,
            tokenizer.path() + ": chat prompt: the llama2 format ends an assistant turn with EOS; the tokenizer has none");
      turn = tokenizer.encode(concat({" ", trim(messages[i].content), " "}), /*add_bos=*/false);
      turn.push_back(tokenizer.eos_ids().front());
    }
    ids.insert(ids.end(), turn.begin(), turn.end());
  }
  return ids;
}

}  // namespace

std::vector<TokenId> chat_prompt(const Tokenizer& tokenizer, ChatFormat format, std::string_view user, std::string_view system) {
  std::vector<ChatMessage> messages;
  if (!system.empty()) messages.push_back({"system", std::string(system)});
  messages.push_back({"user", std::string(user)});
  return chat_prompt(tokenizer, format, messages);
}

// The special tokens are written as text: tokenizer.json and tiktoken tokenizers read them back as
// their ids. SentencePiece would not, so the Llama 2 format keeps its special tokens out of the
// text, as transformers' Llama tokenizer splits them off before SentencePiece encodes the rest.
std::vector<TokenId> chat_prompt(const Tokenizer& tokenizer, ChatFormat format, std::span<const ChatMessage> messages) {
  check_roles(messages);
  std::string text;
  switch (format) {
    case ChatFormat::Llama3:
      for (const ChatMessage& message : messages)
        text += concat({"<|start_header_id|>", message.role, "<|end_header_id|>\n\n", trim(message.content), "<|eot_id|>"});
      return with_bos(tokenizer, text + "<|start_header_id|>assistant<|end_header_id|>\n\n");
    case ChatFormat::ChatML:
      for (const ChatMessage& message : messages)
        text += concat({"<|im_start|>", message.role, "\n", message.content, "<|im_end|>\n"});
      return tokenizer.encode(text + "<|im_start|>assistant\n", /*add_bos=*/false);
    case ChatFormat::Llama2:
      return llama2_prompt(tokenizer, messages);
  }
  return {};
}

}  // namespace wgml
