#pragma once
// What `wgml inspect` reports about a model, as data (tests assert on it) and as JSON or text.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ir/model.h"

namespace wgml::frontend {

struct IoSummary {
  std::string name;
  std::string kind;  // "tensor", "int", "float", "bool"
  uint32_t slot = 0;
  std::string dtype;  // tensors only
  std::vector<ir::Dim> shape;
  bool unused = false;  // a method input the program never reads (slot is meaningless)
};

struct ChainSummary {
  uint32_t index = 0;
  std::string role;  // "main", "init" or "body"
  size_t instructions = 0;
  std::map<std::string, size_t> node_histogram;
};

struct ModelSummary {
  std::string path;
  std::string format;
  std::string version;
  std::map<std::string, uint64_t> slot_counts;
  std::vector<IoSummary> inputs, outputs, mutable_buffers;
  size_t constant_count = 0;
  uint64_t constant_bytes = 0;
  std::vector<ChainSummary> chains;
  std::map<std::string, std::string> source_info;     // Model::source_info
  std::map<std::string, size_t> source_op_histogram;  // Model::source_op_histogram
};

ModelSummary summarize(const ir::Model& model);
nlohmann::json to_json(const ModelSummary& summary);
std::string to_text(const ModelSummary& summary);
std::string format_shape(const std::vector<ir::Dim>& shape);

}  // namespace wgml::frontend
