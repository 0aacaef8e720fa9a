// External data and input files named by an untrusted model or caller: symbolic links may not lead
// outside the model's folder, FIFOs and other non-regular files are refused without blocking, and a
// file holding many tensors is mapped once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "frontend/load_model.h"
#include "frontend/onnx/onnx_builder.h"
#include "frontend/onnx/onnx_model.h"
#include "io/npy.h"
#include "wgml/session.h"

namespace wgml::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr float kSecret[] = {13, 17};

void write_floats(const fs::path& path, const std::vector<float>& values) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(sizeof(float) * values.size()));
}

// A float tensor of `count` elements whose bytes are at [offset, +4 * count) of `location`.
void make_external(::onnx::TensorProto& t, const std::string& name, const std::string& location, int64_t count,
                   int64_t offset = 0) {
  t.set_name(name);
  t.set_data_type(kFloat);
  t.add_dims(count);
  t.set_data_location(::onnx::TensorProto::EXTERNAL);
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"location", location},
                                   {"offset", std::to_string(offset)},
                                   {"length", std::to_string(4 * count)}}) {
    auto* entry = t.add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  }
}

// y = x * w, w being two floats at `location`, written into `directory`.
std::string write_model_reading(const fs::path& directory, const std::string& location) {
  OnnxModel m;
  m.input("x", kFloat, {2}).output("y", kFloat, {2});
  make_external(*m.graph().add_initializer(), "w", location, 2);
  m.node("Mul", {"x", "w"}, {"y"});
  return m.write(directory);
}

std::vector<float> run_model(const std::string& path) {
  Session session(path);
  return floats_of(std::get<Tensor>(session.run({float_tensor_of({2}, {1, 2})}).at(0)));
}

template <class Load>
Error error_of(Load&& load) {
  try {
    load();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "loaded";
  return Error(ErrorCode::Runtime, "");
}

Error load_error(const std::string& path) {
  return error_of([&] { frontend::load_model(path); });
}

// The file the attacks below try to read: outside the folder of the model that names it.
fs::path write_secret(const fs::path& directory) {
  const fs::path secret = directory / "secret.bin";
  write_floats(secret, {kSecret[0], kSecret[1]});
  return secret;
}

void expect_refused_link(const Error& e, const std::string& file, const std::string& tensor, const std::string& location) {
  EXPECT_EQ(e.code(), ErrorCode::InvalidFormat);
  EXPECT_THAT(e.what(),
              AllOf(HasSubstr(file), HasSubstr(tensor), HasSubstr("'" + location + "'"), HasSubstr("outside the model folder")));
}

TEST(OnnxUntrustedFiles, LocationLinkedToAnAbsolutePathOutsideIsRefused) {
  const fs::path secret = write_secret(fresh_directory("outside"));
  const fs::path dir = fresh_directory("absolute_link");
  fs::create_symlink(secret, dir / "weights.bin");
  expect_refused_link(load_error(write_model_reading(dir, "weights.bin")), "model.onnx", "initializer 'w'", "weights.bin");
}

TEST(OnnxUntrustedFiles, LocationLinkedUpTwoFoldersIsRefused) {
  const fs::path base = fresh_directory("relative_link");
  write_secret(base);
  const fs::path dir = base / "models" / "m";
  fs::create_directories(dir);
  fs::create_symlink("../../secret.bin", dir / "weights.bin");
  expect_refused_link(load_error(write_model_reading(dir, "weights.bin")), "model.onnx", "initializer 'w'", "weights.bin");
}

TEST(OnnxUntrustedFiles, LocationThroughAFolderLinkUpIsRefused) {
  const fs::path base = fresh_directory("folder_link");
  write_secret(base);
  const fs::path dir = base / "models" / "m";
  fs::create_directories(dir);
  fs::create_directory_symlink("../..", dir / "up");
  expect_refused_link(load_error(write_model_reading(dir, "up/secret.bin")), "model.onnx", "initializer 'w'", "up/secret.bin");
}

TEST(OnnxUntrustedFiles, TensorFileExternalDataThroughALinkIsRefused) {
  const fs::path base = fresh_directory("pb_link");
  write_secret(base);
  const fs::path inputs = base / "inputs";
  fs::create_directories(inputs);
  fs::create_symlink("../secret.bin", inputs / "x.bin");
  ::onnx::TensorProto x;
  make_external(x, "x", "x.bin", 2);
  const std::string path = (inputs / "input_0.pb").string();
  std::ofstream(path, std::ios::binary) << x.SerializeAsString();
  expect_refused_link(error_of([&] { frontend::onnx::read_tensor_file(path); }), "input_0.pb", "tensor 'x'", "x.bin");
}

// Links are allowed where they stay inside the folder (a file link and a folder link).
TEST(OnnxUntrustedFiles, LinksInsideTheModelFolderLoad) {
  const fs::path dir = fresh_directory("inside_links");
  fs::create_directories(dir / "data");
  write_floats(dir / "data" / "weights.bin", {3, -5});
  fs::create_symlink("data/weights.bin", dir / "alias.bin");
  fs::create_directory_symlink(".", dir / "here");
  EXPECT_THAT(run_model(write_model_reading(dir, "alias.bin")), ElementsAre(3, -10));
  EXPECT_THAT(run_model(write_model_reading(dir, "here/data/weights.bin")), ElementsAre(3, -10));
}

fs::path make_fifo(const fs::path& path) {
  EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0) << path;
  return path;
}

void expect_not_regular(const Error& e, const std::string& path, const std::string& kind) {
  EXPECT_EQ(e.code(), ErrorCode::Io);
  EXPECT_THAT(e.what(), AllOf(HasSubstr(path), HasSubstr("expected a regular file, found " + kind)));
}

// Without a writer, opening a FIFO for reading blocks: these tests hang if open() waits.
TEST(OnnxUntrustedFiles, FifoAsExternalDataIsAnIoError) {
  const fs::path dir = fresh_directory("fifo_location");
  make_fifo(dir / "weights.bin");
  const Error e = load_error(write_model_reading(dir, "weights.bin"));
  expect_not_regular(e, "weights.bin", "a FIFO");
  EXPECT_THAT(e.what(), AllOf(HasSubstr("model.onnx"), HasSubstr("initializer 'w'")));
}

TEST(OnnxUntrustedFiles, FifoAsTensorFileExternalDataIsAnIoError) {
  const fs::path dir = fresh_directory("fifo_pb_location");
  make_fifo(dir / "x.bin");
  ::onnx::TensorProto x;
  make_external(x, "x", "x.bin", 2);
  const std::string path = (dir / "input_0.pb").string();
  std::ofstream(path, std::ios::binary) << x.SerializeAsString();
  const Error e = error_of([&] { frontend::onnx::read_tensor_file(path); });
  expect_not_regular(e, "x.bin", "a FIFO");
  EXPECT_THAT(e.what(), AllOf(HasSubstr("input_0.pb"), HasSubstr("tensor 'x'")));
}

// The files `wgml run --input` reads (.npy, .pb) and the model itself.
TEST(OnnxUntrustedFiles, FifoOrFolderAsInputFileIsAnIoError) {
  const fs::path dir = fresh_directory("fifo_inputs");
  const std::string npy = make_fifo(dir / "x.npy").string();
  const std::string pb = make_fifo(dir / "x.pb").string();
  const std::string model = make_fifo(dir / "model.onnx").string();
  expect_not_regular(error_of([&] { io::read_npy(npy); }), npy, "a FIFO");
  expect_not_regular(error_of([&] { frontend::onnx::read_tensor_file(pb); }), pb, "a FIFO");
  expect_not_regular(load_error(model), model, "a FIFO");
  fs::create_directories(dir / "folder.npy");
  expect_not_regular(error_of([&] { io::read_npy((dir / "folder.npy").string()); }), "folder.npy", "a directory");
}

// Lines of /proc/self/maps that map `path`.
int mappings_of(const fs::path& path) {
  std::ifstream maps("/proc/self/maps");
  int count = 0;
  for (std::string line; std::getline(maps, line);)
    if (line.size() >= path.native().size() && line.compare(line.size() - path.native().size(), std::string::npos, path) == 0)
      ++count;
  return count;
}

// More initializers in one file than a process may have mappings (vm.max_map_count, 65530 by default).
TEST(OnnxUntrustedFiles, ManyInitializersInOneFileMapItOnce) {
  constexpr int kCount = 70000;
  const fs::path dir = fs::canonical(fresh_directory("many_initializers"));
  std::vector<float> weights(kCount);
  for (int i = 0; i < kCount; ++i) weights[i] = static_cast<float>(i);
  write_floats(dir / "weights.bin", weights);
  OnnxModel m;
  m.input("x", kFloat, {1}).output("y", kFloat, {1});
  for (int i = 0; i < kCount; ++i) make_external(*m.graph().add_initializer(), "w" + std::to_string(i), "weights.bin", 1, 4 * i);
  m.node("Add", {"x", "w1"}, {"x_w1"});
  m.node("Add", {"x_w1", "w" + std::to_string(kCount - 1)}, {"y"});
  Session session(m.write(dir));
  EXPECT_EQ(mappings_of(dir / "weights.bin"), 1);
  EXPECT_THAT(floats_of(std::get<Tensor>(session.run({float_tensor_of({1}, {0.5f})}).at(0))), ElementsAre(0.5f + 1 + 69999));
}

}  // namespace
}  // namespace wgml::testing
