// onnxruntime-genai's genai_config.json: what an ONNX decoder's generator needs from it.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "wgml/error.h"
#include "wgml/generator.h"

namespace wgml {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

[[noreturn]] void malformed(const fs::path& file, const std::string& field, const std::string& expected) {
  throw Error(ErrorCode::InvalidFormat, file.string() + ": " + field + ": expected " + expected);
}

json read_object(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw Error(ErrorCode::Io, file.string() + ": cannot be read");
  try {
    json parsed = json::parse(in);
    if (parsed.is_object()) return parsed;
  } catch (const json::exception& e) {
    throw Error(ErrorCode::InvalidFormat, file.string() + ": not valid JSON (" + e.what() + ")");
  }
  malformed(file, "the document", "a JSON object");
}

// The object at `key` of `parent` (named `field`), or null when absent.
const json* object_at(const json& parent, const char* key, const fs::path& file, const std::string& field) {
  const auto it = parent.find(key);
  if (it == parent.end()) return nullptr;
  if (!it->is_object()) malformed(file, field, "an object");
  return &*it;
}

void read_name(const json* names, const char* key, std::string& name, const fs::path& file, const std::string& field) {
  if (!names || !names->contains(key)) return;
  const json& value = (*names)[key];
  if (!value.is_string() || value.get<std::string>().empty()) malformed(file, field + "." + key, "a non-empty name");
  name = value.get<std::string>();
}

void read_layer_pattern(const json* names, const char* key, std::string& pattern, const fs::path& file,
                        const std::string& field) {
  read_name(names, key, pattern, file, field);
  if (pattern.find("%d") == std::string::npos) malformed(file, field + "." + key, "a name with %d for the layer");
}

int64_t positive_int(const json& value, const fs::path& file, const std::string& field) {
  if (!value.is_number_integer() || value.get<int64_t>() <= 0) malformed(file, field, "a positive integer");
  return value.get<int64_t>();
}

}  // namespace

DecoderConfig read_genai_config(const std::string& model_path) {
  const fs::path file = fs::path(model_path).parent_path() / "genai_config.json";
  DecoderConfig config;
  if (!fs::exists(file)) return config;
  const json document = read_object(file);
  const json* model = object_at(document, "model", file, "model");
  if (!model) malformed(file, "model", "an object");
  const json* decoder = object_at(*model, "decoder", file, "model.decoder");
  const json* inputs = decoder ? object_at(*decoder, "inputs", file, "model.decoder.inputs") : nullptr;
  const json* outputs = decoder ? object_at(*decoder, "outputs", file, "model.decoder.outputs") : nullptr;
  read_name(inputs, "input_ids", config.input_ids, file, "model.decoder.inputs");
  read_name(inputs, "attention_mask", config.attention_mask, file, "model.decoder.inputs");
  read_name(inputs, "position_ids", config.position_ids, file, "model.decoder.inputs");
  read_layer_pattern(inputs, "past_key_names", config.past_key_names, file, "model.decoder.inputs");
  read_layer_pattern(inputs, "past_value_names", config.past_value_names, file, "model.decoder.inputs");
  read_name(outputs, "logits", config.logits, file, "model.decoder.outputs");
  read_layer_pattern(outputs, "present_key_names", config.present_key_names, file, "model.decoder.outputs");
  read_layer_pattern(outputs, "present_value_names", config.present_value_names, file, "model.decoder.outputs");
  if (model->contains("context_length"))
    config.context_length = positive_int((*model)["context_length"], file, "model.context_length");
  const json* search = object_at(document, "search", file, "search");
  if (search && search->contains("max_length")) {
    const int64_t max_length = positive_int((*search)["max_length"], file, "search.max_length");
    config.context_length = config.context_length ? std::min(config.context_length, max_length) : max_length;
  }
  if (model->contains("eos_token_id")) {
    const json& eos = (*model)["eos_token_id"];
    for (const json& id : eos.is_array() ? eos : json::array({eos})) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0) malformed(file, "model.eos_token_id", "a token id or a list of them");
      config.eos_token_ids.push_back(id.get<int64_t>());
    }
  }
  return config;
}

}  // namespace wgml
