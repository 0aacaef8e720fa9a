#include "wgml/tokenizer.h"

#include <sentencepiece_processor.h>

#include <pytorch/tokenizers/hf_tokenizer.h>
#include <pytorch/tokenizers/tiktoken.h>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "wgml/error.h"

namespace wgml {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";  // U+FFFD

// The library behind one kind of tokenizer file: ids without BOS, and the bytes of a run of ids.
class Codec {
 public:
  virtual ~Codec() = default;
  virtual std::vector<TokenId> encode(std::string_view text) const = 0;
  virtual std::string decode_bytes(std::span<const TokenId> ids) const = 0;
  // The id of a token written as text (a special token's content), if it is one token.
  virtual std::optional<TokenId> token_id(const std::string& token) const = 0;
  virtual int64_t vocab_size() const = 0;
};

const char* library_error_name(tokenizers::Error error) {
  switch (error) {
    case tokenizers::Error::Ok:
      return "Ok";
    case tokenizers::Error::Internal:
      return "Internal";
    case tokenizers::Error::Uninitialized:
      return "Uninitialized";
    case tokenizers::Error::OutOfRange:
      return "OutOfRange";
    case tokenizers::Error::LoadFailure:
      return "LoadFailure";
    case tokenizers::Error::EncodeFailure:
      return "EncodeFailure";
    case tokenizers::Error::Base64DecodeFailure:
      return "Base64DecodeFailure";
    case tokenizers::Error::ParseFailure:
      return "ParseFailure";
    case tokenizers::Error::DecodeFailure:
      return "DecodeFailure";
    case tokenizers::Error::RegexFailure:
      return "RegexFailure";
  }
  return "?";
}

void check_in_vocabulary(TokenId id, int64_t vocab_size, const std::string& path) {
  if (id < 0 || id >= vocab_size) {
    throw Error(ErrorCode::InvalidArgument, "token id " + std::to_string(id) + " is outside the vocabulary of " + path +
                                                " (ids 0 to " + std::to_string(vocab_size - 1) + ")");
  }
}

// pytorch/tokenizers' BPE tokenizers (HFTokenizer for tokenizer.json, Tiktoken): their decode
// gives each token's bytes, so a text is the concatenation.
class PytorchTokenizersCodec : public Codec {
 public:
  PytorchTokenizersCodec(std::unique_ptr<tokenizers::Tokenizer> tokenizer, std::string path)
      : tokenizer_(std::move(tokenizer)), path_(std::move(path)) {}

  std::vector<TokenId> encode(std::string_view text) const override {
    auto result = tokenizer_->encode(std::string(text), 0, 0);
    if (!result.ok()) {
      throw Error(ErrorCode::Runtime,
                  path_ + ": pytorch/tokenizers could not encode the text (error " + library_error_name(result.error()) + ")");
    }
    return {result.get().begin(), result.get().end()};
  }

  std::string decode_bytes(std::span<const TokenId> ids) const override {
    std::string bytes;
    uint64_t previous = tokenizer_->bos_tok();
    for (TokenId id : ids) {
      check_in_vocabulary(id, vocab_size(), path_);
      auto piece = tokenizer_->decode(previous, static_cast<uint64_t>(id));
      if (!piece.ok()) {
        throw Error(ErrorCode::InvalidArgument,
                    "token id " + std::to_string(id) + " has no text in " + path_ + " (a gap in its vocabulary)");
      }
      bytes += piece.get();
      previous = static_cast<uint64_t>(id);
    }
    return bytes;
  }

  std::optional<TokenId> token_id(const std::string& token) const override {
    auto ids = tokenizer_->encode(token, 0, 0);
    if (!ids.ok() || ids.get().size() != 1) return std::nullopt;
    return static_cast<TokenId>(ids.get()[0]);
  }

  int64_t vocab_size() const override { return tokenizer_->vocab_size(); }
  uint64_t library_eos() const { return tokenizer_->eos_tok(); }
  uint64_t library_bos() const { return tokenizer_->bos_tok(); }

 private:
  std::unique_ptr<tokenizers::Tokenizer> tokenizer_;
  std::string path_;
};

// SentencePiece's own processor. (pytorch/tokenizers' SPTokenizer wraps it, but decodes token by
// token and leaves byte-fallback pieces such as <0xE6> as that text.)
class SentencePieceCodec : public Codec {
 public:
  explicit SentencePieceCodec(std::string path) : path_(std::move(path)) {}

  // False when the file is not a SentencePiece model (it may be a tiktoken file).
  bool load(std::string* message) {
    try {
      auto status = processor_.Load(path_);
      if (!status.ok()) *message = status.ToString();
      return status.ok();
    } catch (const std::exception& e) {
      // The library reports a bad model through its status; what throws is protobuf itself (out
      // of memory on a huge declared field).
      throw Error(ErrorCode::Runtime, path_ + ": SentencePiece could not read the model: " + e.what());
    }
  }

  std::vector<TokenId> encode(std::string_view text) const override {
    std::vector<int> ids;
    auto status = processor_.Encode(text, &ids);
    if (!status.ok()) {
      throw Error(ErrorCode::Runtime, path_ + ": SentencePiece could not encode the text: " + status.ToString());
    }
    return {ids.begin(), ids.end()};
  }

  std::string decode_bytes(std::span<const TokenId> ids) const override {
    std::vector<int> pieces;
    pieces.reserve(ids.size());
    for (TokenId id : ids) {
      check_in_vocabulary(id, vocab_size(), path_);
      pieces.push_back(static_cast<int>(id));
    }
    std::string text;
    auto status = processor_.Decode(pieces, &text);
    if (!status.ok()) {
      throw Error(ErrorCode::Runtime, path_ + ": SentencePiece could not decode: " + status.ToString());
    }
    return text;
  }

  std::optional<TokenId> token_id(const std::string& token) const override {
    int id = processor_.PieceToId(token);
    if (id == processor_.unk_id() && processor_.IdToPiece(id) != token) return std::nullopt;
    return id;
  }

  int64_t vocab_size() const override { return processor_.GetPieceSize(); }
  std::optional<TokenId> bos() const { return optional_id(processor_.bos_id()); }
  std::optional<TokenId> eos() const { return optional_id(processor_.eos_id()); }

 private:
  static std::optional<TokenId> optional_id(int id) { return id < 0 ? std::nullopt : std::optional<TokenId>(id); }

  sentencepiece::SentencePieceProcessor processor_;
  std::string path_;
};

// A JSON object from `path`; none when there is no such file.
std::optional<json> read_json_if_present(const fs::path& path) {
  std::ifstream file(path);
  if (!file) {
    if (fs::exists(path)) throw Error(ErrorCode::Io, path.string() + ": cannot be read");
    return std::nullopt;
  }
  json parsed;
  try {
    parsed = json::parse(file);
  } catch (const json::exception& e) {
    throw Error(ErrorCode::InvalidFormat, path.string() + ": not valid JSON (" + e.what() + ")");
  }
  if (!parsed.is_object()) throw Error(ErrorCode::InvalidFormat, path.string() + ": expected a JSON object");
  return parsed;
}

std::optional<std::string> read_text_if_present(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return std::nullopt;
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// A token named in a config file: "<s>", {"content": "<s>", ...} or null.
std::optional<std::string> token_text(const json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return (*it)["content"].get<std::string>();
  }
  return std::nullopt;
}

std::vector<TokenId> ids_of(const json& value, const fs::path& file, const char* key) {
  std::vector<TokenId> ids;
  for (const json& item : value.is_array() ? value : json::array({value})) {
    if (!item.is_number_integer()) {
      throw Error(ErrorCode::InvalidFormat, file.string() + ": " + key + " must be a token id or a list of them");
    }
    ids.push_back(item.get<TokenId>());
  }
  return ids;
}

// A tokenizer.json's post-processor that puts a special token first (Llama 3's TemplateProcessing,
// alone or inside a Sequence): that token's text.
std::optional<std::string> template_first_special_token(const json& processor) {
  if (!processor.is_object()) return std::nullopt;
  const std::string type =
      processor.contains("type") && processor["type"].is_string() ? processor["type"].get<std::string>() : "";
  if (type == "Sequence" && processor.contains("processors") && processor["processors"].is_array()) {
    for (const json& inner : processor["processors"]) {
      if (auto token = template_first_special_token(inner)) return token;
    }
  }
  if (type != "TemplateProcessing" || !processor.contains("single") || processor["single"].empty()) {
    return std::nullopt;
  }
  const json& first = processor["single"].is_array() ? processor["single"][0] : json();
  if (first.contains("SpecialToken") && first["SpecialToken"].contains("id") && first["SpecialToken"]["id"].is_string()) {
    return first["SpecialToken"]["id"].get<std::string>();
  }
  return std::nullopt;
}

// What a model's tokenizer defaults to before the config files have their say.
struct Defaults {
  std::optional<TokenId> bos;
  bool adds_bos = false;
  std::vector<TokenId> eos;
};

void add_unique(std::vector<TokenId>& ids, TokenId id) {
  if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
}

}  // namespace

struct Tokenizer::State {
  std::unique_ptr<Codec> codec;
  std::string path;
  std::string kind;
  std::string chat_template;
  std::optional<TokenId> bos;
  bool adds_bos = false;
  std::vector<TokenId> eos;
};

namespace {

std::unique_ptr<Tokenizer::State> load_tokenizer_json(const fs::path& file, Defaults& defaults) {
  const std::string path = file.string();
  json parsed = *read_json_if_present(file);
  if (!parsed.contains("model") || !parsed["model"].is_object()) {
    throw Error(ErrorCode::InvalidFormat, path + ": expected a Hugging Face tokenizer.json (an object with \"model\")");
  }
  const json& model = parsed["model"];
  const std::string model_type = model.contains("type") && model["type"].is_string() ? model["type"].get<std::string>() : "BPE";
  if (model_type != "BPE") {
    throw Error(ErrorCode::Unsupported,
                path + ": model type " + model_type + "; expected BPE (pytorch/tokenizers' HFTokenizer reads byte-level BPE)");
  }
  auto tokenizer = std::make_unique<tokenizers::HFTokenizer>();
  if (auto error = tokenizer->load(path); error != tokenizers::Error::Ok) {
    throw Error(ErrorCode::Unsupported,
                path + ": pytorch/tokenizers' HFTokenizer cannot read it (error " + library_error_name(error) +
                    "); expected a BPE tokenizer.json whose normalizer, pre-tokenizer and decoder it supports");
  }
  auto codec = std::make_unique<PytorchTokenizersCodec>(std::move(tokenizer), path);
  if (auto first = template_first_special_token(parsed.value("post_processor", json()))) {
    defaults.bos = codec->token_id(*first);
    defaults.adds_bos = defaults.bos.has_value();
  }
  // Its guess from the special tokens' names, used only when no config file names an EOS.
  defaults.eos = {static_cast<TokenId>(codec->library_eos())};
  auto state = std::make_unique<Tokenizer::State>();
  state->codec = std::move(codec);
  state->kind = "tokenizer.json";
  return state;
}

// Llama 3's split pattern as Meta's tokenizer.py has it. pytorch/tokenizers' Tiktoken defaults to
// the pattern without `\s+(?!\S)`, which RE2 lacks, and so splits runs of spaces differently; the
// library takes the full pattern through its PCRE2 fallback.
constexpr std::string_view kLlama3Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Llama 3.1's 256 special tokens, which follow the ranks of its tiktoken file (pytorch/tokenizers'
// Tiktoken default).
std::vector<std::string> llama3_special_tokens() {
  std::vector<std::string> tokens = {"<|begin_of_text|>",
                                     "<|end_of_text|>",
                                     "<|reserved_special_token_0|>",
                                     "<|reserved_special_token_1|>",
                                     "<|finetune_right_pad_id|>",
                                     "<|step_id|>",
                                     "<|start_header_id|>",
                                     "<|end_header_id|>",
                                     "<|eom_id|>",
                                     "<|eot_id|>",
                                     "<|python_tag|>"};
  for (int reserved = 2; tokens.size() < 256; ++reserved) {
    tokens.push_back("<|reserved_special_token_" + std::to_string(reserved) + "|>");
  }
  return tokens;
}

std::unique_ptr<Tokenizer::State> load_tokenizer_model(const fs::path& file, Defaults& defaults) {
  const std::string path = file.string();
  auto state = std::make_unique<Tokenizer::State>();
  auto sentencepiece = std::make_unique<SentencePieceCodec>(path);
  std::string sentencepiece_message;
  if (sentencepiece->load(&sentencepiece_message)) {
    defaults.bos = sentencepiece->bos();
    defaults.adds_bos = true;  // as Llama 2's tokenizer does
    if (auto eos = sentencepiece->eos()) defaults.eos = {*eos};
    state->codec = std::move(sentencepiece);
    state->kind = "sentencepiece";
    return state;
  }
  // Meta's original Llama 3 tokenizer.model: tiktoken ranks with Llama 3's special tokens.
  auto tiktoken = std::make_unique<tokenizers::Tiktoken>(std::string(kLlama3Split), llama3_special_tokens(),
                                                         /*bos_token_index=*/0, /*eos_token_index=*/1);
  if (auto error = tiktoken->load(path); error != tokenizers::Error::Ok) {
    throw Error(ErrorCode::InvalidFormat, path + ": neither a SentencePiece model (" + sentencepiece_message +
                                              ") nor a tiktoken file (pytorch/tokenizers: error " + library_error_name(error) +
                                              ")");
  }
  auto codec = std::make_unique<PytorchTokenizersCodec>(std::move(tiktoken), path);
  defaults.bos = static_cast<TokenId>(codec->library_bos());
  defaults.adds_bos = true;
  defaults.eos = {static_cast<TokenId>(codec->library_eos())};
  for (const char* stop : {"<|eot_id|>", "<|eom_id|>"}) {
    if (auto id = codec->token_id(stop)) add_unique(defaults.eos, *id);
  }
  state->codec = std::move(codec);
  state->kind = "tiktoken";
  return state;
}

fs::path find_tokenizer_file(const fs::path& path) {
  std::error_code error;
  if (!fs::exists(path, error)) {
    throw Error(ErrorCode::Io, path.string() +
                                   ": not found; expected a model directory holding tokenizer.json or "
                                   "tokenizer.model, or one of those files");
  }
  if (!fs::is_directory(path, error)) return path;
  for (const char* name : {"tokenizer.json", "tokenizer.model"}) {
    if (fs::exists(path / name, error)) return path / name;
  }
  throw Error(ErrorCode::Io, path.string() + ": holds neither tokenizer.json nor tokenizer.model");
}

// tokenizer_config.json and generation_config.json beside the tokenizer file decide BOS, EOS and
// the chat template, as transformers does.
void apply_configs(Tokenizer::State& state, const fs::path& dir, const Defaults& defaults) {
  const fs::path tokenizer_config_path = dir / "tokenizer_config.json";
  const fs::path generation_config_path = dir / "generation_config.json";
  const json tokenizer_config = read_json_if_present(tokenizer_config_path).value_or(json::object());
  const json generation_config = read_json_if_present(generation_config_path).value_or(json::object());
  const Codec& codec = *state.codec;
  auto resolve = [&](const std::string& token) {
    auto id = codec.token_id(token);
    if (!id) {
      throw Error(ErrorCode::InvalidFormat,
                  tokenizer_config_path.string() + ": names the token " + token + ", which is not one token of " + state.path);
    }
    return *id;
  };
  auto checked = [&](TokenId id, const fs::path& file, const char* key) {
    if (id < 0 || id >= codec.vocab_size()) {
      throw Error(ErrorCode::InvalidFormat,
                  file.string() + ": " + key + " " + std::to_string(id) + " is outside the vocabulary of " + state.path);
    }
    return id;
  };

  state.bos = defaults.bos;
  if (tokenizer_config.contains("bos_token")) {
    auto bos = token_text(tokenizer_config, "bos_token");
    state.bos = bos ? std::optional<TokenId>(resolve(*bos)) : std::nullopt;
  } else if (generation_config.contains("bos_token_id") && generation_config["bos_token_id"].is_number_integer()) {
    state.bos = checked(generation_config["bos_token_id"].get<TokenId>(), generation_config_path, "bos_token_id");
  }
  state.adds_bos = defaults.adds_bos;
  if (tokenizer_config.contains("add_bos_token") && tokenizer_config["add_bos_token"].is_boolean()) {
    state.adds_bos = tokenizer_config["add_bos_token"].get<bool>();
  }
  state.adds_bos = state.adds_bos && state.bos.has_value();

  if (generation_config.contains("eos_token_id") && !generation_config["eos_token_id"].is_null()) {
    for (TokenId id : ids_of(generation_config["eos_token_id"], generation_config_path, "eos_token_id")) {
      add_unique(state.eos, checked(id, generation_config_path, "eos_token_id"));
    }
  }
  if (auto eos = token_text(tokenizer_config, "eos_token")) add_unique(state.eos, resolve(*eos));
  if (state.eos.empty() || state.kind != "tokenizer.json") {
    for (TokenId id : defaults.eos) add_unique(state.eos, id);
  }

  if (auto file = read_text_if_present(dir / "chat_template.jinja")) {
    state.chat_template = *file;
  } else if (auto it = tokenizer_config.find("chat_template"); it != tokenizer_config.end()) {
    if (it->is_string()) state.chat_template = it->get<std::string>();
    // Several named templates: the default one.
    if (it->is_array()) {
      for (const json& named : *it) {
        if (named.is_object() && named.value("name", json()) == "default" && named.value("template", json()).is_string()) {
          state.chat_template = named["template"].get<std::string>();
        }
      }
    }
  }
}

bool ends_inside_character(std::string_view bytes) {
  // A lead byte in the last three bytes whose character needs more bytes than follow it.
  for (size_t back = 1; back <= std::min<size_t>(3, bytes.size()); ++back) {
    auto byte = static_cast<unsigned char>(bytes[bytes.size() - back]);
    if ((byte & 0xC0) == 0x80) continue;
    size_t length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1;
    return length > back && byte < 0xF5;
  }
  return false;
}

// Bytes as UTF-8, each maximal ill-formed subsequence replaced by U+FFFD (as Hugging Face's
// byte-level decoder does, through Rust's String::from_utf8_lossy).
std::string valid_utf8(std::string_view bytes) {
  std::string text;
  text.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    auto lead = static_cast<unsigned char>(bytes[i]);
    if (lead < 0x80) {
      text += bytes[i++];
      continue;
    }
    // Length and the allowed range of the second byte (which excludes overlongs and surrogates).
    size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) low = 0xA0;
      if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) low = 0x90;
      if (lead == 0xF4) high = 0x8F;
    }
    size_t valid = length == 0 ? 0 : 1;
    while (valid > 0 && valid < length && i + valid < bytes.size()) {
      auto byte = static_cast<unsigned char>(bytes[i + valid]);
      bool ok = valid == 1 ? (byte >= low && byte <= high) : (byte & 0xC0) == 0x80;
      if (!ok) break;
      ++valid;
    }
    if (length > 0 && valid == length) {
      text.append(bytes.substr(i, length));
      i += length;
    } else {
      text += kReplacementCharacter;
      i += std::max<size_t>(valid, 1);
    }
  }
  return text;
}

}  // namespace

Tokenizer Tokenizer::load(const std::string& path) {
  fs::path file = find_tokenizer_file(path);
  Defaults defaults;
  std::unique_ptr<State> state;
  if (file.extension() != ".json") {
    state = load_tokenizer_model(file, defaults);
  } else {
    try {
      state = load_tokenizer_json(file, defaults);
    } catch (const Error& error) {
      // A directory whose tokenizer.json the library cannot read (Llama 2's and Mistral's, made
      // from their SentencePiece model) but which holds that model: read the model.
      const fs::path model = file.parent_path() / "tokenizer.model";
      if (error.code() != ErrorCode::Unsupported || !fs::is_directory(path) || !fs::exists(model)) throw;
      defaults = {};
      file = model;
      state = load_tokenizer_model(file, defaults);
    }
  }
  state->path = file.string();
  apply_configs(*state, file.parent_path().empty() ? fs::path(".") : file.parent_path(), defaults);
  return Tokenizer(std::move(state));
}

Tokenizer::Tokenizer(std::unique_ptr<State> state) : state_(std::move(state)) {}
Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_bos) const {
  std::vector<TokenId> ids;
  if (add_bos && state_->bos) ids.push_back(*state_->bos);
  std::vector<TokenId> text_ids = state_->codec->encode(text);
  ids.insert(ids.end(), text_ids.begin(), text_ids.end());
  return ids;
}

std::string Tokenizer::decode(std::span<const TokenId> ids) const { return valid_utf8(state_->codec->decode_bytes(ids)); }

TextStream Tokenizer::stream(std::span<const TokenId> context) const { return TextStream(*state_, context); }

std::optional<TokenId> Tokenizer::bos_id() const { return state_->bos; }
bool Tokenizer::adds_bos() const { return state_->adds_bos; }
const std::vector<TokenId>& Tokenizer::eos_ids() const { return state_->eos; }
bool Tokenizer::is_eos(TokenId id) const { return std::find(state_->eos.begin(), state_->eos.end(), id) != state_->eos.end(); }
int64_t Tokenizer::vocab_size() const { return state_->codec->vocab_size(); }
const std::string& Tokenizer::chat_template() const { return state_->chat_template; }
const std::string& Tokenizer::kind() const { return state_->kind; }
const std::string& Tokenizer::path() const { return state_->path; }

// The last context tokens kept: enough for any leading-space or byte-fallback decision.
constexpr size_t kStreamContext = 4;

TextStream::TextStream(const Tokenizer::State& tokenizer, std::span<const TokenId> context) : tokenizer_(&tokenizer) {
  auto kept = context.subspan(context.size() - std::min(context.size(), kStreamContext));
  window_.assign(kept.begin(), kept.end());
  emitted_ = window_.size();
}

std::string TextStream::push(TokenId id) {
  window_.push_back(id);
  return take(false);
}

std::string TextStream::flush() { return take(true); }

// Decodes the window and returns what follows the text of its first `emitted_` ids, unless the
// window ends inside a character (raw bytes, or SentencePiece's U+FFFD for unfinished bytes).
// Then the window restarts at the ids just emitted, which stay as context.
std::string TextStream::take(bool at_end) {
  if (window_.size() == emitted_) return {};
  std::span<const TokenId> ids(window_);
  // The bytes as the library decodes them: a text may end inside a character.
  const std::string before = tokenizer_->codec->decode_bytes(ids.first(emitted_));
  const std::string all = tokenizer_->codec->decode_bytes(ids);
  const bool unfinished = ends_inside_character(all) || std::string_view(all).ends_with(kReplacementCharacter);
  if (!at_end && (unfinished || all.size() <= before.size())) return {};
  std::string text = valid_utf8(std::string_view(all).substr(std::min(before.size(), all.size())));
  window_.erase(window_.begin(), window_.begin() + static_cast<std::ptrdiff_t>(emitted_));
  emitted_ = window_.size();
  return text;
}

}  // namespace wgml
