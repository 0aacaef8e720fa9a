#include "llm/random_constants.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "core/elements.h"
#include "frontend/pte/pte_file.h"
#include "io/bytes.h"
#include "ir/payload.h"
#include "ir/slot_visit.h"
#include "ir/validate.h"
#include "wgml/error.h"

namespace wgml::llm {
namespace {

struct Access {
  std::vector<std::pair<uint32_t, std::string>> reads;  // tensor, field
  std::vector<uint32_t> writes;
};

Access access_of(const ir::Instruction& instruction) {
  Access a;
  ir::visit_slots(
      instruction,
      [&](ir::Tid t, ir::FieldRole role, std::string_view field) {
        if (role != ir::FieldRole::Write) a.reads.emplace_back(t.idx, std::string(field));
        if (role != ir::FieldRole::Read) a.writes.push_back(t.idx);
      },
      [](ir::Vid, std::string_view) {});
  return a;
}

// Tensors that end up as quantization scales: read by a `scales` field, or read by a node whose
// output does (a TakeNode gathering an embedding's scales row by row). Chains are walked backwards,
// so one pass follows a chain of such nodes.
std::set<uint32_t> scale_tensors(const ir::Program& program) {
  std::set<uint32_t> scales;
  for (const ir::Chain& chain : program.chains)
    for (auto it = chain.instructions.rbegin(); it != chain.instructions.rend(); ++it) {
      const Access a = access_of(*it);
      const bool feeds_scales = std::any_of(a.writes.begin(), a.writes.end(), [&](uint32_t t) { return scales.count(t) > 0; });
      for (const auto& [t, field] : a.reads)
        if (field == "scales" || feeds_scales) scales.insert(t);
    }
  return scales;
}

// Per constant: whether the main chain reads it only as the table TakeNodes gather rows from.
std::vector<bool> gathered_only(const ir::Program& program) {
  std::vector<int> reads(program.num_constant_tensors, 0), gathers(program.num_constant_tensors, 0);
  for (const ir::Instruction& instruction : program.chains[program.main_chain_idx].instructions) {
    const bool take = ir::instruction_name(instruction) == "TakeNode";
    for (const auto& [t, field] : access_of(instruction).reads) {
      if (t >= program.num_constant_tensors) continue;
      ++reads[t];
      if (take && field == "x") ++gathers[t];
    }
  }
  std::vector<bool> out(program.num_constant_tensors);
  for (uint32_t t = 0; t < program.num_constant_tensors; ++t) out[t] = reads[t] > 0 && reads[t] == gathers[t];
  return out;
}

// The size an init-chain instruction gives the constants it writes: its largest static input.
std::map<uint32_t, uint64_t> init_written_numel(const ir::Program& program) {
  std::map<uint32_t, uint64_t> out;
  if (!program.has_init_chain()) return out;
  for (const ir::Instruction& instruction : program.chains[program.init_chain_idx].instructions) {
    const Access a = access_of(instruction);
    uint64_t numel = 1;
    for (const auto& [t, field] : a.reads)
      if (const ir::TensorMeta* m = program.meta(ir::Tid{t}); m && m->static_numel()) numel = std::max(numel, *m->static_numel());
    for (uint32_t t : a.writes) out[t] = numel;
  }
  return out;
}

Fill fill_for(DType dtype, bool scale, bool written_by_init) {
  if (written_by_init) return Fill::Zero;
  if (is_floating(dtype)) return scale ? Fill::Scale : Fill::Normal;
  return dtype == DType::UInt32 ? Fill::Bits : Fill::Zero;
}

const char* safetensors_dtype(DType t) {
  switch (t) {
    case DType::UInt8:
      return "U8";
    case DType::Int8:
      return "I8";
    case DType::Int16:
      return "I16";
    case DType::Int32:
      return "I32";
    case DType::Int64:
      return "I64";
    case DType::Float16:
      return "F16";
    case DType::BFloat16:
      return "BF16";
    case DType::Float32:
      return "F32";
    case DType::Float64:
      return "F64";
    case DType::Bool:
      return "BOOL";
    case DType::UInt32:
      return "U32";
  }
  return "?";
}

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// 65536 values of the fill's distribution, encoded in `dtype`: an element is one of them, picked by
// 16 random bits (four elements per 64-bit draw), which keeps filling at memory speed.
std::vector<uint8_t> value_table(Fill fill, DType dtype, uint64_t seed) {
  constexpr int64_t kValues = 65536;
  std::vector<uint8_t> table(kValues * dtype_size(dtype));
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 0.02);
  std::uniform_real_distribution<double> scale(0.003, 0.006);
  for (int64_t i = 0; i < kValues; ++i) store_double(dtype, table.data(), i, fill == Fill::Scale ? scale(rng) : normal(rng));
  return table;
}

// Fills `count` elements at `out` (element `first` of its tensor onwards) from the stream `seed`.
void fill_elements(uint8_t* out, uint64_t first, uint64_t count, const ConstantInfo& c, const std::vector<uint8_t>& table,
                   uint64_t seed) {
  const size_t size = dtype_size(c.dtype);
  uint64_t state = seed ^ (first * 0xD1B54A32D192ED03ull);
  if (c.fill == Fill::Zero) {
    std::memset(out, 0, count * size);
  } else if (c.fill == Fill::Bits) {
    for (uint64_t i = 0; i < count * size; i += 8) {
      const uint64_t bits = splitmix64(state);
      std::memcpy(out + i, &bits, std::min<uint64_t>(8, count * size - i));
    }
  } else {
    for (uint64_t i = 0; i < count; i += 4) {
      uint64_t bits = splitmix64(state);
      for (uint64_t k = i; k < std::min(count, i + 4); ++k, bits >>= 16)
        std::memcpy(out + k * size, table.data() + (bits & 0xFFFF) * size, size);
    }
  }
}

}  // namespace

const char* fill_name(Fill f) {
  switch (f) {
    case Fill::Normal:
      return "N(0, 0.02)";
    case Fill::Scale:
      return "scale U(0.003, 0.006)";
    case Fill::Bits:
      return "random bits";
    case Fill::Zero:
      return "zero";
  }
  return "?";
}

std::vector<ConstantInfo> describe_constants(const ir::Program& program) {
  const std::vector<bool> from_init = ir::constants_written_by_init(program);
  const std::vector<bool> gathered = gathered_only(program);
  const std::set<uint32_t> scales = scale_tensors(program);
  const std::map<uint32_t, uint64_t> init_numel = init_written_numel(program);
  std::vector<ConstantInfo> out;
  for (uint32_t tid = 0; tid < program.num_constant_tensors; ++tid) {
    const ir::TensorMeta& meta = *program.meta(ir::Tid{tid});
    ConstantInfo c;
    c.name = program.named_slot_of_tensor(tid)->name;
    c.dtype = meta.dtype;
    for (const ir::Dim& d : meta.shape) c.shape.push_back(d.value);
    c.bytes = *meta.static_numel() * dtype_size(meta.dtype);
    c.written_by_init = from_init[tid];
    c.loaded_bytes = c.written_by_init ? init_numel.at(tid) * dtype_size(meta.dtype) : c.bytes;
    c.gathered_only = gathered[tid];
    c.fill = fill_for(meta.dtype, scales.count(tid) > 0, c.written_by_init);
    out.push_back(std::move(c));
  }
  return out;
}

void write_random_constants(const std::string& path, const std::vector<ConstantInfo>& constants, uint64_t seed,
                            unsigned threads) {
  std::vector<size_t> order(constants.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return dtype_size(constants[a].dtype) > dtype_size(constants[b].dtype); });
  nlohmann::json header = {{"__metadata__", {{"format", "wgml random constants"}, {"seed", std::to_string(seed)}}}};
  uint64_t total = 0;
  for (size_t i : order) {
    const ConstantInfo& c = constants[i];
    header[c.name] = {{"dtype", safetensors_dtype(c.dtype)}, {"shape", c.shape}, {"data_offsets", {total, total + c.bytes}}};
    total += c.bytes;
  }
  std::string text = header.dump();
  text.append((64 - (8 + text.size()) % 64) % 64, ' ');  // the data starts 64-byte aligned
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) throw Error(ErrorCode::Io, path + ": cannot create the constants file");
  const uint64_t header_size = text.size();
  uint8_t size_bytes[8];
  for (int i = 0; i < 8; ++i) size_bytes[i] = static_cast<uint8_t>(header_size >> (8 * i));
  file.write(reinterpret_cast<const char*>(size_bytes), 8);
  file.write(text.data(), static_cast<std::streamsize>(text.size()));

  // Each tensor in chunks of blocks; a block's stream is keyed by its first element, so the bytes
  // do not depend on how many threads share the blocks.
  constexpr uint64_t kChunkBytes = uint64_t{64} << 20, kBlock = uint64_t{1} << 16;
  std::vector<uint8_t> chunk;
  std::map<std::pair<Fill, DType>, std::vector<uint8_t>> tables;
  const std::vector<uint8_t> no_table;
  threads = std::max(1u, threads);
  for (size_t i : order) {
    const ConstantInfo& c = constants[i];
    const uint64_t size = dtype_size(c.dtype), numel = c.bytes / size;
    const bool drawn = c.fill == Fill::Normal || c.fill == Fill::Scale;
    if (drawn && !tables.count({c.fill, c.dtype})) tables[{c.fill, c.dtype}] = value_table(c.fill, c.dtype, seed);
    const std::vector<uint8_t>& table = drawn ? tables.at({c.fill, c.dtype}) : no_table;
    const uint64_t tensor_seed = seed * 0x9E3779B97F4A7C15ull + i;
    for (uint64_t first = 0; first < numel;) {
      const uint64_t count = std::min(numel - first, kChunkBytes / size / kBlock * kBlock);
      chunk.resize(count * size);
      std::vector<std::thread> workers;
      for (unsigned w = 0; w < threads && w * kBlock < count; ++w)
        workers.emplace_back([&, w] {
          for (uint64_t begin = w * kBlock; begin < count; begin += threads * kBlock)
            fill_elements(chunk.data() + begin * size, first + begin, std::min(kBlock, count - begin), c, table, tensor_seed);
        });
      for (std::thread& worker : workers) worker.join();
      file.write(reinterpret_cast<const char*>(chunk.data()), static_cast<std::streamsize>(chunk.size()));
      first += count;
    }
  }
  if (!file.flush()) throw Error(ErrorCode::Io, path + ": write failed");
}

bool payload_without_constants(const std::string& model_path, const std::string& constants_path) {
  const io::ByteView file = io::map_file(model_path);
  if (!ir::looks_like_payload(file)) return false;
  const std::string constants =
      constants_path.empty() ? std::filesystem::path(model_path).replace_extension(".safetensors").string() : constants_path;
  return ir::read_payload(file, model_path).num_constant_tensors > 0 && !std::filesystem::exists(constants);
}

RandomWeightsModel write_random_weights_model(const std::string& model_path, const std::string& dir, uint64_t seed,
                                              unsigned threads) {
  const io::ByteView file = io::map_file(model_path);
  RandomWeightsModel out{model_path, (std::filesystem::path(dir) / "model.safetensors").string()};
  ir::Program program;
  if (ir::looks_like_payload(file)) {
    program = ir::read_payload(file, model_path);
  } else if (frontend::looks_like_pte(file)) {
    const frontend::PteContents pte = frontend::read_pte(file, model_path);
    program = ir::read_payload(pte.payload, pte.payload_name);
    out.payload_path = (std::filesystem::path(dir) / "model.mlxg").string();
    std::ofstream payload(out.payload_path, std::ios::binary | std::ios::trunc);
    payload.write(reinterpret_cast<const char*>(pte.payload.data), static_cast<std::streamsize>(pte.payload.size));
    if (!payload.flush()) throw Error(ErrorCode::Io, out.payload_path + ": cannot write the MLX payload of " + model_path);
  } else {
    throw Error(ErrorCode::Unsupported, model_path +
                                            ": random weights are drawn for an MLX delegate program (.pte or .mlxg); this "
                                            "file is neither (an ONNX model carries its own initializers)");
  }
  write_random_constants(out.constants_path, describe_constants(program), seed, threads);
  return out;
}

}  // namespace wgml::llm
