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

// The special tokens are written as text: tokenizer.json and tiktoken tokenizers read them back as
// their ids. SentencePiece would not, so the Llama 2 format keeps its one special token, BOS, out
// of the text, as transformers' Llama tokenizer splits it off before SentencePiece encodes the rest.
std::vector<TokenId> chat_prompt(const Tokenizer& tokenizer, ChatFormat format, std::string_view user, std::string_view system) {
  switch (format) {
    case ChatFormat::Llama3: {
      std::string text;
      if (!system.empty()) {
        text = concat({"<|start_header_id|>system<|end_header_id|>\n\n", trim(system), "<|eot_id|>"});
      }
      text += concat({"<|start_header_id|>user<|end_header_id|>\n\n", trim(user), "<|eot_id|>",
                      "<|start_header_id|>assistant<|end_header_id|>\n\n"});
      return with_bos(tokenizer, text);
    }
    case ChatFormat::ChatML: {
      std::string text;
      if (!system.empty()) text = concat({"<|im_start|>system\n", system, "<|im_end|>\n"});
      text += concat({"<|im_start|>user\n", user, "<|im_end|>\n<|im_start|>assistant\n"});
      return tokenizer.encode(text, /*add_bos=*/false);
    }
    case ChatFormat::Llama2: {
      std::string content(user);
      if (!system.empty()) content = concat({"<<SYS>>\n", system, "\n<</SYS>>\n\n", user});
      return with_bos(tokenizer, concat({"[INST] ", trim(content), " [/INST]"}));
    }
  }
  return {};
}

}  // namespace wgml
