// Issue 2's malformed-input table: every class of bad input is rejected with a wgml::Error whose
// code a program can branch on and whose message names the file, the place (chain, instruction,
// node, field or byte offset) and what was expected.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "frontend/load_model.h"
#include "frontend/pte/pte_file.h"
#include "ir/payload.h"
#include "runtime/executor.h"
#include "support/program_builder.h"
#include "wgml/error.h"

namespace wgml::testing {
namespace {

namespace mx = mlx_delegate;
using ::testing::AllOf;
using ::testing::HasSubstr;

template <class F>
Error error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected a wgml::Error, none was thrown";
  return Error(ErrorCode::Runtime, "<no error thrown>");
}

Error load_error(const std::string& path) {
  return error_of([&] { frontend::load_model(path); });
}

void put_u32(Bytes& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}
void put_u64(Bytes& b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

// The names a .pte gives its MLX delegate in every payload error.
std::string delegate_name(const std::string& path) { return path + ": plan 'forward', delegate 0 (MLXBackend)"; }

class MalformedInput : public ::testing::Test {
 protected:
  // Writes a standalone payload (+ .safetensors with the tiny program's constants).
  std::string payload_file(const mx::MLXGraphT& graph, const std::string& stem = "model") {
    return write_payload_model(dir_, stem, graph, tiny_constants());
  }
  std::string raw_file(const Bytes& bytes, const std::string& name) {
    const std::string path = dir_.file(name);
    write_file(path, bytes);
    return path;
  }
  // A .pte with the tiny program's constants around arbitrary payload bytes.
  std::string pte_file(const Bytes& payload, const PteOptions& options = {},
                       const std::vector<NamedBlob>& named = tiny_constants()) {
    return raw_file(build_mlx_pte(payload, named, options), "model.pte");
  }

  TempDir dir_;
};

// ---- positive: the helper's tiny program ---------------------------------------------------

void expect_tiny_model(const ir::Model& m) {
  EXPECT_EQ(m.program.num_constant_tensors, 1u);
  EXPECT_EQ(m.program.chains.size(), 1u);
  ASSERT_EQ(m.constants.size(), 1u);
  ASSERT_EQ(m.constants[0].size, 16u);
  float values[4];
  std::memcpy(values, m.constants[0].data, sizeof(values));
  EXPECT_EQ(values[0], 1.0f);
  EXPECT_EQ(values[3], 4.0f);
  EXPECT_EQ(m.named_data.count(kTinyConstantName), 1u);
}

TEST_F(MalformedInput, TinyProgramLoadsAsPayloadAndBindsConstants) {
  const ir::Model m = frontend::load_model(payload_file(tiny_graph()));
  EXPECT_EQ(m.format, ir::ModelFormat::Payload);
  expect_tiny_model(m);
}

TEST_F(MalformedInput, TinyProgramLoadsAsPteAndBindsConstants) {
  const std::string path = write_pte_model(dir_, "tiny", tiny_graph(), tiny_constants());
  const ir::Model m = frontend::load_model(path);
  EXPECT_EQ(m.format, ir::ModelFormat::Pte);
  expect_tiny_model(m);
  // The delegate blob in the container is byte-identical to the standalone payload.
  const Bytes file = read_file(path);
  const frontend::PteContents pte = frontend::read_pte(io::own_bytes(file), path);
  EXPECT_EQ(Bytes(pte.payload.data, pte.payload.data + pte.payload.size), build_payload(tiny_graph()));
}

TEST_F(MalformedInput, TinyProgramLoadsAsPteWithInlineDelegate) {
  PteOptions options;
  options.delegate_in_segment = false;
  const std::string path = write_pte_model(dir_, "inline", tiny_graph(), tiny_constants(), options);
  expect_tiny_model(frontend::load_model(path));
}

// A .pte segment may place the payload at any byte: FlatBuffers must not read it in place then
// (a fuzz finding: misaligned loads, undefined behaviour that UBSan reports).
TEST_F(MalformedInput, PayloadAtAnOddAddressLoads) {
  const Bytes payload = build_payload(rich_graph());
  std::vector<uint8_t> shifted(payload.size() + 1);
  std::memcpy(shifted.data() + 1, payload.data(), payload.size());
  const io::ByteView all = io::own_bytes(std::move(shifted));
  const ir::Program program = ir::read_payload(all.sub(1, payload.size()), "odd.mlxg");
  EXPECT_EQ(program.chains.size(), 5u);
  EXPECT_EQ(program.init_chain_idx, 1);
}

// Constant bytes at an address unaligned for their dtype are copied before kernels read them.
TEST_F(MalformedInput, ConstantsAtAnOddAddressAreReadCorrectly) {
  auto model =
      std::make_shared<ir::Model>(frontend::load_model(write_payload_model(dir_, "tiny", tiny_graph(), tiny_constants())));
  std::vector<uint8_t> shifted(17);
  std::memcpy(shifted.data() + 1, model->constants[0].data, 16);
  model->constants[0] = io::own_bytes(std::move(shifted)).sub(1, 16);
  const backend::cpu::CpuBackend cpu;
  runtime::Executor executor(model, cpu);
  const float x[4] = {10, 20, 30, 40};
  const auto out = executor.run({Tensor::from_bytes(DType::Float32, {2, 2}, x)});
  const float* y = std::get<Tensor>(out.at(0)).data_as<float>();
  EXPECT_EQ(y[0], 11.0f);
  EXPECT_EQ(y[3], 44.0f);
}

TEST_F(MalformedInput, RichProgramLoadsInBothForms) {
  for (const std::string& path : {write_pte_model(dir_, "rich", rich_graph(), tiny_constants()),
                                  write_payload_model(dir_, "rich", rich_graph(), tiny_constants())}) {
    const ir::Model m = frontend::load_model(path);
    EXPECT_EQ(m.program.chains.size(), 5u) << path;
    EXPECT_EQ(m.program.init_chain_idx, 1) << path;
    EXPECT_EQ(m.constants.size(), 1u) << path;
  }
}

TEST_F(MalformedInput, InitChainMayWriteConstants) {
  mx::MLXGraphT g = tiny_graph();
  std::vector<std::unique_ptr<mx::InstructionT>> init;
  init.push_back(add(0, 0, 0));
  g.init_chain_idx = static_cast<int32_t>(add_chain(g, std::move(init)));
  EXPECT_NO_THROW(frontend::load_model(payload_file(g)));
}

// ---- container and header ------------------------------------------------------------------

TEST_F(MalformedInput, EmptyFile) {
  const std::string path = raw_file({}, "empty.pte");
  const Error e = load_error(path);
  EXPECT_EQ(e.code(), ErrorCode::InvalidFormat);
  EXPECT_THAT(e.what(), AllOf(HasSubstr(path), HasSubstr("empty")));
}

TEST_F(MalformedInput, TruncatedPayloadHeader) {
  Bytes bytes = build_payload(tiny_graph());
  bytes.resize(16);
  const std::string path = raw_file(bytes, "short.mlxg");
  const Error e = load_error(path);
  EXPECT_EQ(e.code(), ErrorCode::InvalidFormat);
  EXPECT_THAT(e.what(), AllOf(HasSubstr(path + ": "), HasSubstr("expected a 24-byte MLX0 header"), HasSubstr("found 16 bytes")));

  // The same payload inside a .pte: the message names the delegate.
  const std::string pte = pte_file(bytes);
  const Error in_pte = load_error(pte);
  EXPECT_EQ(in_pte.code(), ErrorCode::InvalidFormat);
  EXPECT_THAT(in_pte.what(), AllOf(HasSubstr(delegate_name(pte)), HasSubstr("expected a 24-byte MLX0 header")));
}

TEST_F(MalformedInput, WrongMagic) {
  Bytes bytes = build_payload(tiny_graph());
  bytes[7] = '1';  // "MLX1"
  const std::string path = raw_file(bytes, "magic.mlxg");
  const Error e = load_error(path);
  EXPECT_EQ(e.code(), ErrorCode::InvalidFormat);
  EXPECT_THAT(e.what(), AllOf(HasSubstr(path + ": byte 0: expected"), HasSubstr("\"MLX0\"")));

  const std::string pte = pte_file(bytes);
  const Error in_pte = load_error(pte);
  EXPECT_EQ(in_pte.code(), ErrorCode::InvalidFormat);
  EXPECT_THAT(in_pte.what(),
              AllOf(HasSubstr(delegate_name(pte)), HasSubstr("byte 0: expected 4 zero bytes"), HasSubstr("magic \"MLX0\"")));
}

TEST_F(MalformedInput, DataSegmentOffsetPastEnd) {
  Bytes bytes = build_payload(tiny_graph());
  const uint64_t past = bytes.size() + 64;
  put_u64(bytes, 8, past);
  const std::string path = raw_file(bytes, "model.mlxg");
  write_file(dir_.file("model.safetensors"), build_safetensors(tiny_constants()));
  const Error e = load_error(path);
  EXPECT_EQ(e.code(), ErrorCode::InvalidFormat);
  EXPECT_THAT(e.what(), AllOf(HasSubstr(path + ": byte 8: data segment [" + std::to_string(past)),
                              HasSubstr("must start after the header and end within the " + std::to_string(bytes.size()) +
                                        "-byte payload")));
}

TEST_F(MalformedInput, FlatBufferVerifierFailure) {
  Bytes bytes = build_payload(tiny_graph());
  put_u32(bytes, 24, 0x7ffffff0u);  // the root table offset points far outside the buffer
  const std::string path = raw_file(bytes, "model.mlxg");
  const Error e = load_error(path);
  EXPECT_EQ(e.code(), ErrorCode::InvalidFormat);
  EXPECT_THAT(e.what(), AllOf(HasSubstr(path + ": byte 24: the MLXGraph FlatBuffer"), HasSubstr("fails verification")));
}

TEST_F(MalformedInput, FlatBufferVerifierFailureInsideNestedTable) {
  // Corrupt the length of chain 0's instruction vector rather than the root offset.
  const Bytes fb = graph_flatbuffer(tiny_graph());
  const auto* graph = mx::GetMLXGraph(fb.data());
  const auto* list = graph->instruction_chains()->Get(0)->instructions();
  const size_t length_at = reinterpret_cast<const uint8_t*>(list) - fb.data();
  Bytes bytes = payload_from_flatbuffer(fb);
  put_u32(bytes, 24 + length_at, 0x00ffffffu);
  const std::string pte = pte_file(bytes);
  const Error e = load_error(pte);
  EXPECT_EQ(e.code(), ErrorCode::InvalidFormat);
  EXPECT_THAT(e.what(), AllOf(HasSubstr(delegate_name(pte) + ": byte 24"), HasSubstr("fails verification")));
}

// ---- decode ----------------------------------------------------------------------------------

TEST_F(MalformedInput, UnknownUnionType) {
  Bytes fb = graph_flatbuffer(tiny_graph());
  const size_t at = op_type_offset(fb, 0, 0);
  ASSERT_EQ(fb[at], static_cast<uint8_t>(mx::OpNode::AddNode));
  fb[at] = 200;
  const std::string path = raw_file(payload_from_flatbuffer(fb), "model.mlxg");
  write_file(dir_.file("model.safetensors"), build_safetensors(tiny_constants()));
  const Error e = load_error(path);
  EXPECT_EQ(e.code(), ErrorCode::Unsupported);
  EXPECT_THAT(e.what(), AllOf(HasSubstr(path + ": chain 0, instruction 0"), HasSubstr("unknown node type id 200"),
                              HasSubstr("this build knows ids 1-")));
}

TEST_F(MalformedInput, MissingRequiredField) {
  mx::MLXGraphT g = tiny_graph();
  chain(g, 0).instructions[0]->op.AsAddNode()->b.reset();
  const std::string path = payload_file(g);
  const Error e = load_error(path);
  EXPECT_EQ(e.code(), ErrorCode::InvalidProgram);
  EXPECT_THAT(e.what(), AllOf(HasSubstr(path + ": chain 0, instruction 0 (AddNode), field 'b'"),
                              HasSubstr("expected a value for this required field")));
}

// An instruction whose op_type names a node but whose `op` table is absent. The relaxed schema
// lets it verify, and the generated decoder dereferences the missing table (null pointer).
// Disabled until tools/gen/gen_ir_nodes.py checks `src` (see the report / issue 2).
TEST_F(MalformedInput, InstructionWithoutNodeTable) {
  mx::MLXGraphT g = tiny_graph();
  auto& ins = *chain(g, 0).instructions[0];
  ins.op.Reset();
  ins.op.type = static_cast<mx::OpNode>(200);  // packs op_type 200 and no op table
  Bytes fb = graph_flatbuffer(g);
  fb[op_type_offset(fb, 0, 0)] = static_cast<uint8_t>(mx::OpNode::AddNode);
  const std::string path = raw_file(payload_from_flatbuffer(fb), "model.mlxg");
  write_file(dir_.file("model.safetensors"), build_safetensors(tiny_constants()));
  const Error e = load_error(path);
  EXPECT_EQ(e.code(), ErrorCode::InvalidProgram);
  EXPECT_THAT(e.what(), AllOf(HasSubstr(path + ": chain 0, instruction 0 (AddNode), field 'op'"),
                              HasSubstr("expected a AddNode table, found none")));
}

TEST_F(MalformedInput, UnsupportedDtype) {
  mx::MLXGraphT g = tiny_graph();
  g.tensor_meta[1]->scalar_type = kScalarDouble;
  const std::string path = payload_file(g);
  const Error e = load_error(path);
  EXPECT_EQ(e.code(), ErrorCode::Unsupported);
  EXPECT_THAT(e.what(), AllOf(HasSubstr(path + ": tensor_meta[1]: unsupported scalar_type 7"), HasSubstr("expected one of"),
                              HasSubstr("Float")));
}

TEST_F(MalformedInput, VersionTwo) {
  mx::MLXGraphT g = tiny_graph();
  g.version = "2";
  const std::string path = payload_file(g);
  const Error e = load_error(path);
  EXPECT_EQ(e.code(), ErrorCode::Unsupported);
  EXPECT_THAT(e.what(), HasSubstr(path + ": version: expected \"1\", found \"2\""));
}

// ---- validation ------------------------------------------------------------------------------

TEST_F(MalformedInput, OutOfRangeTid) {
  mx::MLXGraphT g = tiny_graph();
  chain(g, 0).instructions[0] = add(99, 0, 2);
  const std::string path = payload_file(g);
  const Error e = load_error(path);
  EXPECT_EQ(e.code(), ErrorCode::InvalidProgram);
  EXPECT_THAT(e.what(), AllOf(HasSubstr(path + ": chain 0, instruction 0 (AddNode), field 'a'"),
                              HasSubstr("expected a tensor slot below 3, found 99")));
}

TEST_F(MalformedInput, OutOfRangeVid) {
  mx::MLXGraphT g = tiny_graph();
  g.num_values = 1;
  mx::SymSizeNodeT size;
  size.a = tid(1);
  size.dim = 0;
  size.out = vid(5);
  auto& instructions = chain(g, 0).instructions;
  instructions.insert(instructions.begin(), instruction(std::move(size)));
  const std::string path = payload_file(g);
  const Error e = load_error(path);
  EXPECT_EQ(e.code(), ErrorCode::InvalidProgram);
  EXPECT_THAT(e.what(), AllOf(HasSubstr(path + ": chain 0, instruction 0 (SymSizeNode), field 'out'"),
                              HasSubstr("expected a value slot below 1, found 5")));
}

TEST_F(MalformedInput, BadMainChainIndex) {
  mx::MLXGraphT g = tiny_graph();
  g.main_chain_idx = 4;
  const std::string path = payload_file(g);
  const Error e = load_error(path);
  EXPECT_EQ(e.code(), ErrorCode::InvalidProgram);
  EXPECT_THAT(e.what(), HasSubstr(path + ": main_chain_idx: expected a chain index below 1, found 4"));
}

TEST_F(MalformedInput, BadInitChainIndex) {
  mx::MLXGraphT g = tiny_graph();
  g.init_chain_idx = 3;
  const std::string path = payload_file(g);
  const Error e = load_error(path);
  EXPECT_EQ(e.code(), ErrorCode::InvalidProgram);
  EXPECT_THAT(e.what(), HasSubstr(path + ": init_chain_idx: expected -1 or a chain index below "
                                         "1, found 3"));

  g.init_chain_idx = 0;  // the main chain
  const std::string same = payload_file(g, "same");
  const Error e2 = load_error(same);
  EXPECT_EQ(e2.code(), ErrorCode::InvalidProgram);
  EXPECT_THAT(e2.what(), HasSubstr(same + ": init_chain_idx: expected a chain other than the main chain"));
}

TEST_F(MalformedInput, ScanBodyChainIndexOutOfRange) {
  mx::MLXGraphT g = tiny_graph();
  mx::ScanNodeT scan;
  scan.originals = {mx::Tid(1)};
  scan.sliced = {mx::Tid(1)};
  scan.outputs = {mx::Tid(2)};
  scan.carry = {mx::Tid(2)};
  scan.body_chain_idx = 7;
  auto& instructions = chain(g, 0).instructions;
  instructions.insert(instructions.begin(), instruction(std::move(scan)));
  const std::string path = payload_file(g);
  const Error e = load_error(path);
  EXPECT_EQ(e.code(), ErrorCode::InvalidProgram);
  EXPECT_THAT(e.what(), AllOf(HasSubstr(path + ": chain 0, instruction 0 (ScanNode), field 'chain index'"),
                              HasSubstr("expected a body chain index below 1 other than the main and init "
                                        "chains, found 7")));
}

TEST_F(MalformedInput, TempReadBeforeWritten) {
  mx::MLXGraphT g = tiny_graph();
  g.num_temp_tensors = 1;  // Tid 3
  chain(g, 0).instructions[0] = add(3, 0, 2);
  const std::string path = payload_file(g);
  const Error e = load_error(path);
  EXPECT_EQ(e.code(), ErrorCode::InvalidProgram);
  EXPECT_THAT(e.what(), AllOf(HasSubstr(path + ": chain 0, instruction 0 (AddNode), field 'a'"),
                              HasSubstr("expected temp tensor 3 to be written by an earlier instruction")));
}

TEST_F(MalformedInput, WriteToConstantOutsideInitChain) {
  mx::MLXGraphT g = tiny_graph();
  chain(g, 0).instructions[0] = add(1, 1, 0);
  const std::string path = payload_file(g);
  const Error e = load_error(path);
  EXPECT_EQ(e.code(), ErrorCode::InvalidProgram);
  EXPECT_THAT(e.what(), AllOf(HasSubstr(path + ": chain 0, instruction 0 (AddNode), field 'out'"),
                              HasSubstr("expected no write to constant tensor 0 outside the init chain")));
}

// ---- constants -------------------------------------------------------------------------------

TEST_F(MalformedInput, MissingNamedConstant) {
  std::vector<NamedBlob> named = tiny_constants();
  named[0].key = "abcd/other";
  const std::string pte = pte_file(build_payload(tiny_graph()), {}, named);
  const Error e = load_error(pte);
  EXPECT_EQ(e.code(), ErrorCode::InvalidProgram);
  EXPECT_THAT(e.what(), HasSubstr(pte + ": constant tensor 0: expected named data 'abcd/w', "
                                        "found none"));

  // The standalone payload's .safetensors lacks it too.
  const std::string path = write_payload_model(dir_, "st", tiny_graph(), named);
  const Error e2 = load_error(path);
  EXPECT_EQ(e2.code(), ErrorCode::InvalidProgram);
  EXPECT_THAT(e2.what(), HasSubstr(path + ": constant tensor 0: expected named data 'abcd/w'"));
}

TEST_F(MalformedInput, ConstantOfTheWrongSize) {
  std::vector<NamedBlob> named = tiny_constants();
  named[0].data.resize(12);
  named[0].shape = {3};
  const std::string pte = pte_file(build_payload(tiny_graph()), {}, named);
  const Error e = load_error(pte);
  EXPECT_EQ(e.code(), ErrorCode::InvalidProgram);
  EXPECT_THAT(e.what(), HasSubstr(pte + ": constant tensor 0 ('abcd/w'): expected 16 bytes for "
                                        "its float32 metadata, found 12"));
}

// ---- .pte container --------------------------------------------------------------------------

TEST_F(MalformedInput, PteWithoutMlxDelegate) {
  PteOptions options;
  options.backend_id = "XnnpackBackend";
  const std::string pte = pte_file(build_payload(tiny_graph()), options);
  const Error e = load_error(pte);
  EXPECT_EQ(e.code(), ErrorCode::Unsupported);
  EXPECT_THAT(e.what(), AllOf(HasSubstr(pte + ": "), HasSubstr("expected a delegate with id \"MLXBackend\"")));
}

TEST_F(MalformedInput, PteDelegateSegmentPastEndOfFile) {
  PteOptions options;
  options.edit_program = [](executorch_flatbuffer::ProgramT& p) { p.segments[0]->offset = uint64_t{1} << 40; };
  const std::string pte = pte_file(build_payload(tiny_graph()), options);
  const Error e = load_error(pte);
  EXPECT_EQ(e.code(), ErrorCode::InvalidFormat);
  EXPECT_THAT(e.what(), AllOf(HasSubstr(delegate_name(pte) + ": segment 0 ["), HasSubstr("lies past the end of the")));
}

TEST_F(MalformedInput, PteNamedDataSegmentPastEndOfFile) {
  // A truncated file: the delegate's segment is whole, the constant's is cut.
  Bytes bytes = build_mlx_pte(build_payload(tiny_graph()), tiny_constants());
  bytes.resize(bytes.size() - 120);  // the 16-byte constant sits in the last 128-byte slot
  const std::string pte = raw_file(bytes, "cut.pte");
  const Error e = load_error(pte);
  EXPECT_EQ(e.code(), ErrorCode::InvalidFormat);
  EXPECT_THAT(e.what(), AllOf(HasSubstr(pte + ": named_data[0]: segment 1 ["),
                              HasSubstr("lies past the end of the " + std::to_string(bytes.size()) + "-byte file")));
}

TEST_F(MalformedInput, PteBadExtendedHeaderLength) {
  Bytes bytes = build_mlx_pte(build_payload(tiny_graph()), tiny_constants());
  ASSERT_EQ(std::memcmp(bytes.data() + 8, "eh00", 4), 0);
  put_u32(bytes, 12, 8);
  const std::string pte = raw_file(bytes, "eh.pte");
  const Error e = load_error(pte);
  EXPECT_EQ(e.code(), ErrorCode::InvalidFormat);
  EXPECT_THAT(e.what(), AllOf(HasSubstr(pte + ": byte 12: extended header length 8"), HasSubstr("must be at least 24")));

  put_u32(bytes, 12, 1u << 30);  // longer than the file
  const std::string long_pte = raw_file(bytes, "eh_long.pte");
  const Error e2 = load_error(long_pte);
  EXPECT_EQ(e2.code(), ErrorCode::InvalidFormat);
  EXPECT_THAT(e2.what(), AllOf(HasSubstr(long_pte + ": byte 12: extended header length"), HasSubstr("fit in the file")));
}

// ---- validation cost ----------------------------------------------------------------------------

// Chain k holds IfNode(then = k + 1, else = k + 1): 2^40 paths through 41 chains. Validation
// summarises each chain once; a walk that enumerated paths would never finish this test.
TEST_F(MalformedInput, NestedIfChainsValidateQuickly) {
  constexpr uint32_t kDepth = 40;
  mx::MLXGraphT g = tiny_graph();
  g.instruction_chains.clear();
  for (uint32_t k = 0; k < kDepth; ++k) {
    mx::IfNodeT branch;
    branch.cond = std::make_unique<mx::IntOrVidT>();
    branch.cond->literal = 1;
    branch.then_chain_idx = k + 1;
    branch.else_chain_idx = k + 1;
    std::vector<std::unique_ptr<mx::InstructionT>> body;
    body.push_back(instruction(std::move(branch)));
    add_chain(g, std::move(body));
  }
  std::vector<std::unique_ptr<mx::InstructionT>> leaf;
  leaf.push_back(add(1, 0, 2));
  add_chain(g, std::move(leaf));
  EXPECT_NO_THROW(frontend::load_model(payload_file(g)));
}

}  // namespace
}  // namespace wgml::testing
