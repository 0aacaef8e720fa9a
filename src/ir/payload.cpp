#include "ir/payload.h"

#include <cstring>
#include <vector>

#include "ir/decode_support.h"
#include "ir/validate.h"
#include "wgml/error.h"

namespace wgml::ir {
namespace {

constexpr uint64_t kMaxSlots = uint64_t{1} << 24;

[[noreturn]] void fail(ErrorCode code, const std::string& source, const std::string& msg) {
  throw Error(code, source + ": " + msg);
}

Slot decode_slot(const mlx_delegate::SlotVariant* s, const std::string& where, const std::string& source) {
  if (!s) fail(ErrorCode::InvalidProgram, source, where + ": expected a slot, found none");
  const auto type = static_cast<int>(s->slot_type());
  if (type < 0 || type > 3)
    fail(ErrorCode::InvalidProgram, source, where + ": expected slot_type 0-3, found " + std::to_string(type));
  return Slot{s->idx(), static_cast<SlotType>(type)};
}

std::vector<Slot> decode_slot_map(const flatbuffers::Vector<flatbuffers::Offset<mlx_delegate::SlotVariant>>* v, const char* field,
                                  const std::string& source) {
  std::vector<Slot> out;
  if (!v) return out;
  for (uint32_t i = 0; i < v->size(); ++i)
    out.push_back(decode_slot(v->Get(i), std::string(field) + "[" + std::to_string(i) + "]", source));
  return out;
}

TensorMeta decode_meta(const mlx_delegate::TensorMeta& m, uint32_t tid, const std::string& source) {
  const std::string where = "tensor_meta[" + std::to_string(tid) + "]";
  TensorMeta meta;
  const auto dtype = dtype_from_scalar_type(m.scalar_type());
  if (!dtype)
    fail(ErrorCode::Unsupported, source,
         where + ": unsupported scalar_type " + std::to_string(m.scalar_type()) +
             " (expected one of Byte, Char, Short, Int, Long, Half, Float, BFloat16, Bool, "
             "UInt32)");
  meta.dtype = *dtype;
  if (!m.shape()) fail(ErrorCode::InvalidProgram, source, where + ": expected a shape");
  for (uint32_t d = 0; d < m.shape()->size(); ++d) {
    const auto* dim = m.shape()->Get(d);
    Dim out{dim->value(), dim->min_value(), dim->max_value()};
    if (out.value < -1 || (!out.is_static() && (out.min_value < 0 || (out.max_value >= 0 && out.max_value < out.min_value))))
      fail(ErrorCode::InvalidProgram, source,
           where + ".shape[" + std::to_string(d) + "]: expected a static size >= 0 or -1 with 0 <= min <= max, found value " +
               std::to_string(out.value) + " min " + std::to_string(out.min_value) + " max " + std::to_string(out.max_value));
    meta.shape.push_back(out);
  }
  if (m.dim_order()) meta.dim_order.assign(m.dim_order()->begin(), m.dim_order()->end());
  return meta;
}

void decode_counts(const mlx_delegate::MLXGraph& g, Program& p, const std::string& source) {
  p.num_constant_tensors = g.num_constant_tensors();
  p.num_input_tensors = g.num_input_tensors();
  p.num_output_tensors = g.num_output_tensors();
  p.num_mutable_buffer_tensors = g.num_mutable_buffer_tensors();
  p.num_temp_tensors = g.num_temp_tensors();
  p.num_values = g.num_values();
  if (p.num_tensors() > kMaxSlots || p.num_values > kMaxSlots)
    fail(ErrorCode::InvalidProgram, source,
         "slot counts: expected at most " + std::to_string(kMaxSlots) + " tensor and value slots, found " +
             std::to_string(p.num_tensors()) + " tensors and " + std::to_string(p.num_values) + " values");
}

void decode_chains(const mlx_delegate::MLXGraph& g, Program& p, const std::string& source) {
  const auto* chains = g.instruction_chains();
  if (!chains) fail(ErrorCode::InvalidProgram, source, "expected instruction_chains, found none");
  p.chains.resize(chains->size());
  for (uint32_t c = 0; c < chains->size(); ++c) {
    const auto* instructions = chains->Get(c)->instructions();
    if (!instructions)
      fail(ErrorCode::InvalidProgram, source, "chain " + std::to_string(c) + ": expected an instructions list, found none");
    auto& out = p.chains[c].instructions;
    out.reserve(instructions->size());
    for (uint32_t i = 0; i < instructions->size(); ++i)
      out.push_back(decode_node(*instructions->Get(i), NodeContext(source, c, i)));
  }
}

Program decode_graph(const mlx_delegate::MLXGraph& g, const std::string& source) {
  Program p;
  p.version = g.version() ? g.version()->str() : "";
  if (p.version != "1") fail(ErrorCode::Unsupported, source, "version: expected \"1\", found \"" + p.version + "\"");
  decode_counts(g, p, source);
  decode_chains(g, p, source);
  p.main_chain_idx = g.main_chain_idx();
  p.init_chain_idx = g.init_chain_idx();
  p.inputs = decode_slot_map(g.input_map(), "input_map", source);
  p.outputs = decode_slot_map(g.output_map(), "output_map", source);
  p.mutable_buffers = decode_slot_map(g.mutable_buffer_map(), "mutable_buffer_map", source);
  if (const auto* named = g.named_slots()) {
    for (uint32_t i = 0; i < named->size(); ++i) {
      const auto* s = named->Get(i);
      const std::string where = "named_slots[" + std::to_string(i) + "]";
      if (!s->name()) fail(ErrorCode::InvalidProgram, source, where + ": expected a name");
      p.named_slots.push_back({s->name()->str(), decode_slot(s->slot(), where + ".slot", source)});
    }
  }
  if (const auto* metas = g.tensor_meta()) {
    for (uint32_t i = 0; i < metas->size(); ++i) p.tensor_meta.emplace_back(decode_meta(*metas->Get(i), i, source));
  }
  return p;
}

}  // namespace

bool looks_like_payload(const io::ByteView& blob) {
  static const uint8_t kMagic[8] = {0, 0, 0, 0, 'M', 'L', 'X', '0'};
  return blob.size >= 8 && std::memcmp(blob.data, kMagic, 8) == 0;
}

Program read_payload(const io::ByteView& blob, const std::string& source) {
  if (blob.size < kPayloadHeaderSize)
    fail(ErrorCode::InvalidFormat, source,
         "byte 0: expected a 24-byte MLX0 header, found " + std::to_string(blob.size) + " bytes");
  if (!looks_like_payload(blob)) fail(ErrorCode::InvalidFormat, source, "byte 0: expected 4 zero bytes then magic \"MLX0\"");
  const uint64_t data_offset = io::read_u64_le(blob.data + 8);
  const uint64_t data_size = io::read_u64_le(blob.data + 16);
  if (data_offset <= kPayloadHeaderSize || !blob.contains(data_offset, data_size))
    fail(ErrorCode::InvalidFormat, source,
         "byte 8: data segment [" + std::to_string(data_offset) + ", +" + std::to_string(data_size) +
             ") must start after the header and end within the " + std::to_string(blob.size) + "-byte payload");
  const uint8_t* fb = blob.data + kPayloadHeaderSize;
  const size_t fb_size = data_offset - kPayloadHeaderSize;
  // FlatBuffers reads scalars in place: a payload at an unaligned place in its container (a .pte
  // segment may start anywhere) is verified and decoded from an aligned copy.
  std::vector<uint64_t> aligned_copy;
  if (reinterpret_cast<uintptr_t>(fb) % alignof(uint64_t) != 0) {
    aligned_copy.resize((fb_size + sizeof(uint64_t) - 1) / sizeof(uint64_t));
    std::memcpy(aligned_copy.data(), fb, fb_size);
    fb = reinterpret_cast<const uint8_t*>(aligned_copy.data());
  }
  flatbuffers::Verifier::Options opts;
  opts.max_tables = 64 * 1000 * 1000;
  flatbuffers::Verifier verifier(fb, fb_size, opts);
  if (!mlx_delegate::VerifyMLXGraphBuffer(verifier))
    fail(ErrorCode::InvalidFormat, source,
         "byte 24: the MLXGraph FlatBuffer (" + std::to_string(fb_size) +
             " bytes) fails verification: an offset, length or nesting is out of bounds");
  Program program = decode_graph(*mlx_delegate::GetMLXGraph(fb), source);
  validate_program(program, source);
  return program;
}

}  // namespace wgml::ir
