#include "support/program_builder.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace wgml::testing {
namespace {

namespace mx = mlx_delegate;
namespace et = executorch_flatbuffer;

uint64_t align_up(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get_u32(const uint8_t* p) { return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24; }

Bytes floats(std::initializer_list<float> values) {
  Bytes out(values.size() * sizeof(float));
  std::memcpy(out.data(), values.begin(), out.size());
  return out;
}

}  // namespace

// ---- MLXGraph pieces -------------------------------------------------------------------------

std::unique_ptr<mx::SlotVariantT> tensor_slot(uint32_t idx) { return value_slot(idx, mx::SlotType::TensorSlot); }

std::unique_ptr<mx::SlotVariantT> value_slot(uint32_t idx, mx::SlotType type) {
  auto s = std::make_unique<mx::SlotVariantT>();
  s->idx = idx;
  s->slot_type = type;
  return s;
}

std::unique_ptr<mx::TensorMetaT> tensor_meta(int8_t scalar_type, const std::vector<int32_t>& dims) {
  auto m = std::make_unique<mx::TensorMetaT>();
  m->scalar_type = scalar_type;
  for (size_t d = 0; d < dims.size(); ++d) {
    auto dim = std::make_unique<mx::ShapeDimT>();
    dim->value = dims[d];
    m->shape.push_back(std::move(dim));
    m->dim_order.push_back(static_cast<uint8_t>(d));
  }
  return m;
}

std::unique_ptr<mx::NamedSlotT> named_tensor(const std::string& name, uint32_t t) {
  auto n = std::make_unique<mx::NamedSlotT>();
  n->name = name;
  n->slot = tensor_slot(t);
  return n;
}

std::unique_ptr<mx::Tid> tid(uint32_t idx) { return std::make_unique<mx::Tid>(idx); }
std::unique_ptr<mx::Vid> vid(uint32_t idx) { return std::make_unique<mx::Vid>(idx); }

std::unique_ptr<mx::InstructionT> add(uint32_t a, uint32_t b, uint32_t out) {
  mx::AddNodeT n;
  n.a = tid(a);
  n.b = tid(b);
  n.out = tid(out);
  return instruction(std::move(n));
}

uint32_t add_chain(mx::MLXGraphT& graph, std::vector<std::unique_ptr<mx::InstructionT>> instructions) {
  auto c = std::make_unique<mx::InstructionChainT>();
  c->instructions = std::move(instructions);
  graph.instruction_chains.push_back(std::move(c));
  return static_cast<uint32_t>(graph.instruction_chains.size() - 1);
}

mx::InstructionChainT& chain(mx::MLXGraphT& graph, uint32_t index) { return *graph.instruction_chains.at(index); }

// ---- the tiny valid program ------------------------------------------------------------------

mx::MLXGraphT tiny_graph() {
  mx::MLXGraphT g;
  g.version = std::string(1, '1');
  g.num_constant_tensors = 1;
  g.num_input_tensors = 1;
  g.num_output_tensors = 1;
  g.num_mutable_buffer_tensors = 0;
  g.num_temp_tensors = 0;
  g.num_values = 0;
  std::vector<std::unique_ptr<mx::InstructionT>> main;
  main.push_back(add(1, 0, 2));
  g.main_chain_idx = add_chain(g, std::move(main));
  g.init_chain_idx = -1;
  g.input_map.push_back(tensor_slot(1));
  g.output_map.push_back(tensor_slot(2));
  g.named_slots.push_back(named_tensor(kTinyConstantName, 0));
  for (int t = 0; t < 3; ++t) g.tensor_meta.push_back(tensor_meta(kScalarFloat, {2, 2}));
  return g;
}

mx::MLXGraphT rich_graph() {
  mx::MLXGraphT g;
  g.version = std::string(1, '1');
  g.num_constant_tensors = 1;
  g.num_input_tensors = 1;
  g.num_output_tensors = 1;
  g.num_mutable_buffer_tensors = 1;
  g.num_temp_tensors = 2;
  g.num_values = 3;
  auto int_or_vid = [](bool is_vid, int64_t literal, uint32_t v) {
    auto r = std::make_unique<mx::IntOrVidT>();
    r->is_vid = is_vid;
    r->literal = literal;
    if (is_vid) r->vid = vid(v);
    return r;
  };
  std::vector<std::unique_ptr<mx::InstructionT>> main;
  {
    mx::SymSizeNodeT n;
    n.a = tid(1);
    n.dim = 0;
    n.out = vid(0);
    main.push_back(instruction(std::move(n)));
  }
  {
    mx::AddIntNodeT n;
    n.a = int_or_vid(true, 0, 0);
    n.b = int_or_vid(false, 1, 0);
    n.out = vid(1);
    main.push_back(instruction(std::move(n)));
  }
  main.push_back(add(1, 0, 4));
  {
    mx::IfNodeT n;
    n.cond = int_or_vid(true, 0, 0);
    n.then_chain_idx = 2;
    n.else_chain_idx = 3;
    main.push_back(instruction(std::move(n)));
  }
  {
    mx::ScanNodeT n;
    n.originals = {mx::Tid(4)};
    n.sliced = {mx::Tid(5)};
    n.outputs = {mx::Tid(2)};
    n.carry = {mx::Tid(3)};
    n.body_chain_idx = 4;
    n.scan_axis = 0;
    main.push_back(instruction(std::move(n)));
  }
  main.push_back(add(4, 3, 2));
  g.main_chain_idx = add_chain(g, std::move(main));
  std::vector<std::unique_ptr<mx::InstructionT>> init, then_branch, else_branch, body;
  init.push_back(add(0, 0, 0));
  then_branch.push_back(add(4, 4, 5));
  else_branch.push_back(add(4, 0, 5));
  body.push_back(add(5, 3, 3));
  g.init_chain_idx = static_cast<int32_t>(add_chain(g, std::move(init)));
  add_chain(g, std::move(then_branch));
  add_chain(g, std::move(else_branch));
  add_chain(g, std::move(body));
  g.input_map.push_back(tensor_slot(1));
  g.input_map.push_back(value_slot(2, mx::SlotType::IntValueSlot));
  g.output_map.push_back(tensor_slot(2));
  g.mutable_buffer_map.push_back(tensor_slot(3));
  g.named_slots.push_back(named_tensor(kTinyConstantName, 0));
  g.named_slots.push_back(named_tensor("abcd/m", 3));
  g.tensor_meta.push_back(tensor_meta(kScalarFloat, {2, 2}));
  auto dynamic = tensor_meta(kScalarFloat, {-1, 2});
  dynamic->shape[0]->min_value = 1;
  dynamic->shape[0]->max_value = 8;
  g.tensor_meta.push_back(std::move(dynamic));
  g.tensor_meta.push_back(tensor_meta(kScalarFloat, {2, 2}));
  g.tensor_meta.push_back(tensor_meta(kScalarFloat, {2, 2}));
  return g;
}

std::vector<NamedBlob> tiny_constants() {
  return {NamedBlob{kTinyConstantName, floats({1.0f, 2.0f, 3.0f, 4.0f}), "F32", {2, 2}}};
}

// ---- serialization ---------------------------------------------------------------------------

Bytes graph_flatbuffer(const mx::MLXGraphT& graph) {
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(mx::MLXGraph::Pack(fbb, &graph));
  return Bytes(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

Bytes payload_from_flatbuffer(const Bytes& flatbuffer) {
  const uint64_t data_offset = 24 + align_up(flatbuffer.size(), 16);
  Bytes out(data_offset, 0);
  std::memcpy(out.data() + 4, "MLX0", 4);
  put_u64(out.data() + 8, data_offset);
  put_u64(out.data() + 16, 0);
  std::memcpy(out.data() + 24, flatbuffer.data(), flatbuffer.size());
  return out;
}

Bytes build_payload(const mx::MLXGraphT& graph) { return payload_from_flatbuffer(graph_flatbuffer(graph)); }

Bytes build_pte(et::ProgramT program, const std::vector<Bytes>& segments, const PteOptions& options) {
  const uint64_t align = options.segment_alignment;
  program.segments.clear();
  uint64_t cursor = 0;
  std::vector<uint64_t> offsets;
  if (options.extended_header) {
    for (const Bytes& s : segments) {
      auto seg = std::make_unique<et::DataSegmentT>();
      seg->offset = cursor;
      offsets.push_back(cursor);
      seg->size = s.size();
      program.segments.push_back(std::move(seg));
      cursor = align_up(cursor + s.size(), align);
    }
  }
  if (options.edit_program) options.edit_program(program);
  flatbuffers::FlatBufferBuilder fbb;
  et::FinishProgramBuffer(fbb, et::Program::Pack(fbb, &program));
  Bytes fb(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  if (!options.extended_header) return fb;

  constexpr uint32_t kHeaderLength = 32;
  Bytes out;
  out.reserve(fb.size() + kHeaderLength);
  out.insert(out.end(), fb.begin(), fb.begin() + 8);
  out.resize(8 + kHeaderLength, 0);
  out.insert(out.end(), fb.begin() + 8, fb.end());
  // The header sits between the identifier and the tables: the root offset skips it, and every
  // other offset is relative, so nothing else moves.
  put_u32(out.data(), get_u32(out.data()) + kHeaderLength);
  const uint64_t program_size = out.size();
  const uint64_t base = segments.empty() ? 0 : align_up(program_size, align);
  uint8_t* h = out.data() + 8;
  std::memcpy(h, "eh00", 4);
  put_u32(h + 4, kHeaderLength);
  put_u64(h + 8, program_size);
  put_u64(h + 16, base);
  put_u64(h + 24, cursor);
  if (!segments.empty()) {
    out.resize(base, 0);
    for (size_t i = 0; i < segments.size(); ++i) {
      out.resize(base + offsets[i], 0);
      out.insert(out.end(), segments[i].begin(), segments[i].end());
    }
    out.resize(base + cursor, 0);
  }
  return out;
}

Bytes build_mlx_pte(const Bytes& payload, const std::vector<NamedBlob>& named, const PteOptions& options) {
  et::ProgramT program;
  program.version = 0;
  auto plan = std::make_unique<et::ExecutionPlanT>();
  plan->name = options.plan_name;
  auto delegate = std::make_unique<et::BackendDelegateT>();
  delegate->id = options.backend_id;
  delegate->processed = std::make_unique<et::BackendDelegateDataReferenceT>();
  std::vector<Bytes> segments;
  if (options.delegate_in_segment) {
    delegate->processed->location = et::DataLocation::SEGMENT;
    delegate->processed->index = 0;
    segments.push_back(payload);
  } else {
    delegate->processed->location = et::DataLocation::INLINE;
    delegate->processed->index = 0;
    auto inline_data = std::make_unique<et::BackendDelegateInlineDataT>();
    inline_data->data = payload;
    program.backend_delegate_data.push_back(std::move(inline_data));
  }
  plan->delegates.push_back(std::move(delegate));
  program.execution_plan.push_back(std::move(plan));
  for (const NamedBlob& blob : named) {
    auto entry = std::make_unique<et::NamedDataT>();
    entry->key = blob.key;
    entry->segment_index = static_cast<uint32_t>(segments.size());
    segments.push_back(blob.data);
    program.named_data.push_back(std::move(entry));
  }
  return build_pte(std::move(program), segments, options);
}

Bytes build_safetensors(const std::vector<NamedBlob>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const NamedBlob& t : tensors) {
    header[t.key] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.data.size()}}};
    offset += t.data.size();
  }
  std::string text = header.dump();
  text.resize(align_up(text.size(), 8), ' ');
  std::string blob(8, '\0');
  put_u64(reinterpret_cast<uint8_t*>(blob.data()), text.size());
  blob += text;
  for (const NamedBlob& t : tensors) blob.append(t.data.begin(), t.data.end());
  return Bytes(blob.begin(), blob.end());
}

size_t op_type_offset(const Bytes& flatbuffer, uint32_t c, uint32_t i) {
  const auto* graph = mx::GetMLXGraph(flatbuffer.data());
  const auto* ins = graph->instruction_chains()->Get(c)->instructions()->Get(i);
  const auto* table = reinterpret_cast<const flatbuffers::Table*>(ins);
  const uint8_t* p = table->GetAddressOf(mx::Instruction::VT_OP_TYPE);
  if (!p) throw std::logic_error("op_type_offset: the instruction stores no op_type");
  return static_cast<size_t>(p - flatbuffer.data());
}

// ---- files -------------------------------------------------------------------------------------

TempDir::TempDir() {
  const char* env = std::getenv("TEST_TMPDIR");
  std::string base = env && *env ? env : std::filesystem::temp_directory_path().string();
  std::string pattern = base + "/wgml_test_XXXXXX";
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("TempDir: mkdtemp failed in " + base);
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void write_file(const std::string& path, const Bytes& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("write_file: cannot write " + path);
}

Bytes read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("read_file: cannot read " + path);
  return Bytes(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

std::string write_payload_model(const TempDir& dir, const std::string& stem, const mx::MLXGraphT& graph,
                                const std::vector<NamedBlob>& constants) {
  const std::string path = dir.file(stem + ".mlxg");
  write_file(path, build_payload(graph));
  if (!constants.empty()) write_file(dir.file(stem + ".safetensors"), build_safetensors(constants));
  return path;
}

std::string write_pte_model(const TempDir& dir, const std::string& stem, const mx::MLXGraphT& graph,
                            const std::vector<NamedBlob>& constants, const PteOptions& options) {
  const std::string path = dir.file(stem + ".pte");
  write_file(path, build_mlx_pte(build_payload(graph), constants, options));
  return path;
}

}  // namespace wgml::testing
