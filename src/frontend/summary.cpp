#include "frontend/summary.h"

#include <nlohmann/json.hpp>
#include <sstream>

#include "core/printable.h"

namespace wgml::frontend {
namespace {

// ExecuTorch prefixes slot names with "<4 hex>/" to keep methods apart; users know the rest.
std::string display_name(const std::string& name) {
  const auto slash = name.find('/');
  return slash == 4 ? name.substr(5) : name;
}

IoSummary io_summary(const ir::Model& model, const ir::Slot& slot, const std::string& fallback) {
  IoSummary s;
  s.slot = slot.idx;
  s.kind = ir::slot_type_name(slot.type);
  s.name = fallback;
  // ONNX names are the user's own; only ExecuTorch adds a prefix.
  for (const ir::NamedSlot& n : model.program.named_slots)
    if (n.slot.idx == slot.idx && n.slot.type == slot.type)
      s.name = model.format == ir::ModelFormat::Onnx ? n.name : display_name(n.name);
  if (slot.type == ir::SlotType::Tensor) {
    if (const ir::TensorMeta* m = model.program.meta(ir::Tid{slot.idx})) {
      s.dtype = dtype_name(m->dtype);
      s.shape = m->shape;
    }
  }
  return s;
}

std::vector<IoSummary> io_list(const ir::Model& model, const std::vector<ir::Slot>& slots, const char* prefix) {
  std::vector<IoSummary> out;
  for (size_t i = 0; i < slots.size(); ++i) out.push_back(io_summary(model, slots[i], prefix + std::to_string(i)));
  return out;
}

// The method's outputs, when the model has a method signature.
std::vector<IoSummary> output_list(const ir::Model& model) {
  if (model.method_outputs.empty()) return io_list(model, model.program.outputs, "output_");
  std::vector<IoSummary> out;
  for (size_t i = 0; i < model.method_outputs.size(); ++i)
    out.push_back(io_summary(model, model.program.outputs[model.method_outputs[i]], "output_" + std::to_string(i)));
  return out;
}

// The method's inputs, when the model has a method signature: inputs the program never reads are
// listed with their declared type.
std::vector<IoSummary> input_list(const ir::Model& model) {
  if (model.method_inputs.empty()) return io_list(model, model.program.inputs, "input_");
  std::vector<IoSummary> out;
  for (size_t i = 0; i < model.method_inputs.size(); ++i) {
    const ir::MethodInput& in = model.method_inputs[i];
    const std::string fallback = "input_" + std::to_string(i);
    if (in.program_input) {
      out.push_back(io_summary(model, model.program.inputs[*in.program_input], fallback));
      continue;
    }
    IoSummary s{fallback, ir::slot_type_name(in.type), 0, "", {}, true};
    if (in.type == ir::SlotType::Tensor) {
      s.dtype = dtype_name(in.meta.dtype);
      s.shape = in.meta.shape;
    }
    out.push_back(std::move(s));
  }
  return out;
}

const char* format_name(ir::ModelFormat f) {
  switch (f) {
    case ir::ModelFormat::Pte:
      return "pte";
    case ir::ModelFormat::Payload:
      return "mlx-payload";
    case ir::ModelFormat::Onnx:
      return "onnx";
  }
  return "?";
}

std::string chain_role(const ir::Program& p, uint32_t c) {
  if (c == p.main_chain_idx) return "main";
  if (static_cast<int64_t>(c) == p.init_chain_idx) return "init";
  return "body";
}

nlohmann::json dims_json(const std::vector<ir::Dim>& shape) {
  nlohmann::json dims = nlohmann::json::array();
  for (const ir::Dim& d : shape) {
    if (d.is_static())
      dims.push_back(d.value);
    else
      dims.push_back({{"min", d.min_value}, {"max", d.max_value}});
  }
  return dims;
}

// Names keep their bytes in JSON (which escapes control characters itself), those that are not
// UTF-8 made U+FFFD: nlohmann's dump() throws on them.
template <class Count>
nlohmann::json counts_json(const std::map<std::string, Count>& counts) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, count] : counts) out[valid_utf8(name)] = count;
  return out;
}

nlohmann::json io_json(const std::vector<IoSummary>& list) {
  nlohmann::json out = nlohmann::json::array();
  for (const IoSummary& s : list) {
    nlohmann::json j = {{"name", valid_utf8(s.name)}, {"kind", s.kind}};
    if (s.unused)
      j["unused"] = true;
    else
      j["slot"] = s.slot;
    if (s.kind == "tensor") {
      j["dtype"] = s.dtype;
      j["shape"] = dims_json(s.shape);
    }
    out.push_back(j);
  }
  return out;
}

void io_text(std::ostringstream& os, const char* title, const std::vector<IoSummary>& list) {
  os << title << " (" << list.size() << ")\n";
  for (const IoSummary& s : list) {
    os << "  " << printable(s.name) << ": ";
    if (s.kind == "tensor")
      os << s.dtype << " " << format_shape(s.shape);
    else
      os << s.kind << " value";
    if (s.unused)
      os << "  [unused by the program]\n";
    else
      os << "  [slot " << s.slot << "]\n";
  }
}

}  // namespace

std::string format_shape(const std::vector<ir::Dim>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    const ir::Dim& d = shape[i];
    if (d.is_static()) {
      out += std::to_string(d.value);
    } else {
      out +=
          "?(" + std::to_string(d.min_value) + ".." + (d.max_value < 0 ? std::string("inf") : std::to_string(d.max_value)) + ")";
    }
  }
  return out + "]";
}

ModelSummary summarize(const ir::Model& model) {
  const ir::Program& p = model.program;
  ModelSummary s;
  s.path = model.path;
  s.format = format_name(model.format);
  s.version = p.version;
  s.slot_counts = {{"constants", p.num_constant_tensors}, {"inputs", p.num_input_tensors},
                   {"outputs", p.num_output_tensors},     {"mutable_buffers", p.num_mutable_buffer_tensors},
                   {"temps", p.num_temp_tensors},         {"values", p.num_values}};
  s.inputs = input_list(model);
  s.outputs = output_list(model);
  s.mutable_buffers = io_list(model, p.mutable_buffers, "buffer_");
  s.constant_count = model.constants.size();
  for (const io::ByteView& c : model.constants) s.constant_bytes += c.size;
  for (uint32_t c = 0; c < p.chains.size(); ++c) {
    ChainSummary chain{c, chain_role(p, c), p.chains[c].instructions.size(), {}};
    for (const ir::Instruction& n : p.chains[c].instructions) ++chain.node_histogram[ir::instruction_name(n)];
    s.chains.push_back(std::move(chain));
  }
  s.source_info = model.source_info;
  s.source_op_histogram = model.source_op_histogram;
  return s;
}

nlohmann::json to_json(const ModelSummary& s) {
  nlohmann::json chains = nlohmann::json::array();
  for (const ChainSummary& c : s.chains)
    chains.push_back({{"index", c.index}, {"role", c.role}, {"instructions", c.instructions}, {"nodes", c.node_histogram}});
  nlohmann::json source = nlohmann::json::object();
  for (const auto& [key, value] : s.source_info) source[valid_utf8(key)] = valid_utf8(value);
  return {{"path", valid_utf8(s.path)},
          {"format", s.format},
          {"version", valid_utf8(s.version)},
          {"slots", s.slot_counts},
          {"inputs", io_json(s.inputs)},
          {"outputs", io_json(s.outputs)},
          {"mutable_buffers", io_json(s.mutable_buffers)},
          {"constants", {{"count", s.constant_count}, {"bytes", s.constant_bytes}}},
          {"chains", chains},
          {"source", source},
          {"source_ops", counts_json(s.source_op_histogram)}};
}

std::string to_text(const ModelSummary& s) {
  std::ostringstream os;
  os << printable(s.path) << " (" << s.format << ", MLX IR version " << printable(s.version) << ")\n";
  for (const auto& [key, value] : s.source_info) os << printable(key) << ": " << printable(value) << "\n";
  if (!s.source_op_histogram.empty()) {
    os << s.format << " ops:";
    for (const auto& [name, count] : s.source_op_histogram) os << " " << printable(name) << " x" << count;
    os << "\n";
  }
  os << "slots:";
  for (const auto& [name, count] : s.slot_counts) os << " " << name << "=" << count;
  os << "\n";
  io_text(os, "inputs", s.inputs);
  io_text(os, "outputs", s.outputs);
  io_text(os, "mutable buffers", s.mutable_buffers);
  os << "constants: " << s.constant_count << " tensors, " << s.constant_bytes << " bytes\n";
  for (const ChainSummary& c : s.chains) {
    os << "chain " << c.index << " (" << c.role << "): " << c.instructions << " instructions\n";
    for (const auto& [name, count] : c.node_histogram) os << "  " << name << " x" << count << "\n";
  }
  return os.str();
}

}  // namespace wgml::frontend
