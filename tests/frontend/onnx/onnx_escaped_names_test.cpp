// Names from a model file that hold terminal escape sequences or bytes that are not UTF-8 (op types,
// node, initializer, input and output names; .pte slot names, .safetensors keys, .npy dtypes) reach
// error messages and `wgml inspect` escaped: valid UTF-8 with no control character but the newline.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>

#include "frontend/load_model.h"
#include "frontend/onnx/onnx_builder.h"
#include "frontend/summary.h"
#include "io/npy.h"
#include "support/program_builder.h"
#include "wgml/session.h"

namespace wgml::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// Sets the terminal's title and clears its screen (OSC and CSI, ESC and C1 forms), then two bytes
// that are not UTF-8.
const std::string kHostile =
    "n\x1b]0;owned\x07\x1b[2J\xc2\x9b"
    "1m\xff\xfe";
const std::string kHostileEscaped = R"(n\x1b]0;owned\x07\x1b[2J\xc2\x9b1m\xff\xfe)";
// In JSON, which escapes control characters itself: the bytes that are not UTF-8 as U+FFFD.
const std::string kHostileInJson =
    "n\x1b]0;owned\x07\x1b[2J\xc2\x9b"
    "1m\xef\xbf\xbd\xef\xbf\xbd";

// Valid UTF-8 (nlohmann's strict dump() throws on anything else) without a byte a terminal takes as
// a command: C0 controls but the newline, DEL, C1 controls (U+0080-U+009F, 0xc2 0x80-0x9f).
void expect_printable(const std::string& text) {
  EXPECT_NO_THROW((void)nlohmann::json(text).dump()) << "not UTF-8: " << ::testing::PrintToString(text);
  for (size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<uint8_t>(text[i]);
    const bool c1 = byte == 0xc2 && i + 1 < text.size() && static_cast<uint8_t>(text[i + 1]) <= 0x9f;
    EXPECT_FALSE((byte < 0x20 && byte != '\n') || byte == 0x7f || c1)
        << "control character at byte " << i << " of " << ::testing::PrintToString(text);
  }
}

template <class Action>
Error error_of(Action action) {
  try {
    action();
  } catch (const Error& e) {
    expect_printable(e.what());
    return e;
  }
  ADD_FAILURE() << "no error";
  return Error(ErrorCode::Runtime, "");
}

Error load_error(const std::string& path) {
  return error_of([&] { frontend::load_model(path); });
}

TEST(OnnxEscapedNames, AnUnknownOpType) {
  OnnxModel m;
  m.input("x", kFloat, {2}).output("y", kFloat, {2});
  m.node(kHostile, {"x"}, {"y"}, "custom");
  const Error e = load_error(m.write(fresh_directory("escaped_op_type")));
  EXPECT_EQ(e.code(), ErrorCode::Unsupported);
  EXPECT_THAT(e.what(), HasSubstr("node 'custom' (" + kHostileEscaped + ", opset 17): no lowering"));
}

TEST(OnnxEscapedNames, ANodeNameAndTheInitializerItMisses) {
  OnnxModel m;
  m.input("x", kFloat, {2}).output("y", kFloat, {2});
  m.node("Mul", {"x", kHostile + "w"}, {"y"}, kHostile);
  const Error e = load_error(m.write(fresh_directory("escaped_node_name")));
  EXPECT_EQ(e.code(), ErrorCode::InvalidProgram);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("node '" + kHostileEscaped + "' (Mul)"), HasSubstr("'" + kHostileEscaped + "w'")));
}

TEST(OnnxEscapedNames, AnInitializerName) {
  OnnxModel m;
  m.input("x", kFloat, {3}).output("y", kFloat, {3});
  ::onnx::TensorProto* w = m.graph().add_initializer();
  w->set_name(kHostile);
  w->set_data_type(kFloat);
  w->add_dims(3);
  w->set_raw_data(std::string(8, '\0'));  // two floats for three
  m.node("Add", {"x", kHostile}, {"y"});
  const Error e = load_error(m.write(fresh_directory("escaped_initializer")));
  EXPECT_EQ(e.code(), ErrorCode::InvalidFormat);
  EXPECT_THAT(e.what(), HasSubstr("initializer '" + kHostileEscaped + "'"));
}

TEST(OnnxEscapedNames, AnInputName) {
  OnnxModel m;
  m.output("y", kFloat, {2});
  ::onnx::ValueInfoProto* x = m.graph().add_input();
  x->set_name(kHostile);
  x->mutable_type()->mutable_tensor_type()->set_elem_type(kFloat);  // no shape: refused
  m.node("Relu", {kHostile}, {"y"});
  const Error e = load_error(m.write(fresh_directory("escaped_input")));
  EXPECT_EQ(e.code(), ErrorCode::Unsupported);
  EXPECT_THAT(e.what(), HasSubstr("graph input '" + kHostileEscaped + "': inputs of unknown rank"));
}

TEST(OnnxEscapedNames, AnOutputName) {
  OnnxModel m;
  m.input("x", kFloat, {2}).output("y", kFloat, {2}).output(kHostile, kFloat, {2});
  m.node("Relu", {"x"}, {"y"});
  const Error e = load_error(m.write(fresh_directory("escaped_output")));
  EXPECT_EQ(e.code(), ErrorCode::InvalidProgram);
  EXPECT_THAT(e.what(), HasSubstr("graph output '" + kHostileEscaped + "' is produced by no node"));
}

TEST(OnnxEscapedNames, ANodeFailingAtRunTime) {
  OnnxModel m;
  m.input("x", kFloat, {kDynamic}).input("z", kFloat, {kDynamic}).output("y", kFloat, {kDynamic});
  m.node("Add", {"x", "z"}, {"y"}, kHostile);
  Session session(m.write(fresh_directory("escaped_run_node")));
  const Error e = error_of([&] { session.run({float_tensor_of({2}, {1, 2}), float_tensor_of({3}, {1, 2, 3})}); });
  EXPECT_EQ(e.code(), ErrorCode::Runtime);
  EXPECT_THAT(e.what(), HasSubstr("ONNX node '" + kHostileEscaped + "' (Add)"));
}

// `wgml inspect`: the text escapes every name; the JSON keeps each name's characters (JSON escapes
// the controls) with the bytes that are not UTF-8 as U+FFFD, so dump() cannot throw.
TEST(OnnxEscapedNames, TheInspectSummary) {
  OnnxModel m;
  m.input(kHostile, kFloat, {2}).output(kHostile + "out", kFloat, {2});
  m.node("Relu", {kHostile}, {kHostile + "out"}, kHostile);
  m.proto().set_producer_name(kHostile);
  m.graph().set_name(kHostile);
  const frontend::ModelSummary summary = frontend::summarize(frontend::load_model(m.write(fresh_directory("escaped_inspect"))));

  const std::string text = frontend::to_text(summary);
  expect_printable(text);
  EXPECT_THAT(text,
              AllOf(HasSubstr("  " + kHostileEscaped + ": float32 [2]"), HasSubstr("  " + kHostileEscaped + "out: float32 [2]"),
                    HasSubstr("graph: " + kHostileEscaped + "\n"), HasSubstr("producer: " + kHostileEscaped)));

  std::string json_text;
  ASSERT_NO_THROW(json_text = frontend::to_json(summary).dump());
  const nlohmann::json json = nlohmann::json::parse(json_text);
  EXPECT_EQ(json["inputs"][0]["name"], kHostileInJson);
  EXPECT_EQ(json["outputs"][0]["name"], kHostileInJson + "out");
  EXPECT_EQ(json["source"]["graph"], kHostileInJson);
}

// ---- names from an MLX-delegate program and its companion files ------------------------------

TEST(PteEscapedNames, ANamedSlotWithoutItsNamedData) {
  TempDir dir;
  mlx_delegate::MLXGraphT graph = tiny_graph();
  for (auto& slot : graph.named_slots)
    if (slot->name == kTinyConstantName) slot->name = kHostile;
  const Error e = load_error(write_pte_model(dir, "model", graph, tiny_constants()));
  EXPECT_EQ(e.code(), ErrorCode::InvalidProgram);
  EXPECT_THAT(e.what(), HasSubstr("expected named data '" + kHostileEscaped + "', found none"));
}

TEST(SafetensorsEscapedNames, ATensorKey) {
  TempDir dir;
  const std::string path = write_payload_model(dir, "model", tiny_graph(), tiny_constants());
  const std::string header = R"({"n\u001b[2J": {"dtype": "F32", "shape": [4], "data_offsets": [0, 400]}})";
  Bytes bytes(8 + header.size());
  bytes[0] = static_cast<uint8_t>(header.size());
  std::copy(header.begin(), header.end(), bytes.begin() + 8);
  write_file(dir.file("model.safetensors"), bytes);
  const Error e = load_error(path);
  EXPECT_EQ(e.code(), ErrorCode::InvalidFormat);
  EXPECT_THAT(e.what(), HasSubstr(R"(tensor 'n\x1b[2J': data_offsets [0, 400) lie outside the file)"));
}

TEST(NpyEscapedNames, ADtype) {
  const std::string path = (fresh_directory("escaped_npy") / "x.npy").string();
  std::string header = "{'descr': '" + kHostile + "', 'fortran_order': False, 'shape': (2,), }";
  header.resize(117, ' ');  // with the newline, 118 (0x76) bytes: the header ends at byte 128
  header += '\n';
  std::ofstream(path, std::ios::binary) << std::string("\x93NUMPY\x01\x00\x76\x00", 10) << header;
  const Error e = error_of([&] { io::read_npy(path); });
  EXPECT_THAT(e.what(), HasSubstr("unsupported dtype '" + kHostileEscaped + "'"));
}

}  // namespace
}  // namespace wgml::testing
