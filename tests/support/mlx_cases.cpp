#include "support/mlx_cases.h"

#include <flatbuffers/idl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/elements.h"
#include "ir/nodes.h"
#include "ir/payload.h"
#include "runtime/executor.h"
#include "support/program_builder.h"

namespace wgml::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<uint8_t> base64_decode(const std::string& text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : (c == '/' ? 63 : -1);
  };
  std::vector<uint8_t> out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    const int v = value(c);
    if (v < 0) continue;  // '=' padding
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>(acc >> bits));
    }
  }
  return out;
}

wgml::Value decode_value(const json& v) {
  if (v.contains("int")) return v["int"].get<int64_t>();
  const auto dtype = wgml::dtype_from_name(v["dtype"].get<std::string>());
  if (!dtype) throw std::runtime_error("unknown dtype " + v["dtype"].dump());
  const std::vector<uint8_t> bytes = base64_decode(v["data"].get<std::string>());
  wgml::Tensor t(*dtype, v["shape"].get<wgml::Shape>());
  if (bytes.size() != t.nbytes()) throw std::runtime_error("case data has the wrong byte count");
  return wgml::Tensor::from_bytes(*dtype, t.shape(), bytes.data());
}

// The MLXGraph JSON compiled with flatbuffers' parser against the real schema, in a payload.
wgml::io::ByteView payload_from_json(const json& graph) {
  static const std::string schema = read_text(fs::path(WGML_SOURCE_DIR) / "schema" / "mlx_delegate.fbs");
  flatbuffers::Parser parser;
  if (!parser.Parse(schema.c_str()) || !parser.Parse(graph.dump().c_str()))
    throw std::runtime_error("flatbuffers parser: " + parser.error_);
  const uint8_t* fb = parser.builder_.GetBufferPointer();
  const Bytes flatbuffer(fb, fb + parser.builder_.GetSize());
  return wgml::io::own_bytes(payload_from_flatbuffer(flatbuffer));
}

double tolerance(wgml::DType t) {
  switch (t) {
    case wgml::DType::Float32:
      return 1e-5;
    case wgml::DType::Float16:
      return 1e-3;
    case wgml::DType::BFloat16:
      return 1e-2;
    default:
      return 0;
  }
}

// The tolerance of case `c`'s outputs of dtype `t`: that dtype's, or with compare "close:<dtype>"
// that dtype's (a result computed in float16 and cast to float32 is only as close as float16).
double case_tolerance(const json& c, wgml::DType t) {
  const std::string compare = c.value("compare", "close");
  if (compare.rfind("close:", 0) == 0) {
    const auto computed = wgml::dtype_from_name(compare.substr(6));
    if (!computed) throw std::runtime_error("case " + c["name"].get<std::string>() + ": unknown dtype in compare " + compare);
    return tolerance(*computed);
  }
  return tolerance(t);
}

bool close(double got, double want, double tol) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  if (std::isinf(want) || std::isinf(got)) return got == want;
  return std::fabs(got - want) <= tol + tol * std::fabs(want);
}

void expect_tensor_close(const json& c, const wgml::Tensor& got, const wgml::Tensor& want, const std::string& what) {
  ASSERT_EQ(wgml::dtype_name(got.dtype()), wgml::dtype_name(want.dtype())) << what << ": dtype";
  ASSERT_EQ(got.shape(), want.shape()) << what << ": shape";
  const bool floating = wgml::is_floating(want.dtype());
  const double tol = case_tolerance(c, want.dtype());
  int reported = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const bool ok =
        floating
            ? close(wgml::load_as_double(got.dtype(), got.data(), i), wgml::load_as_double(want.dtype(), want.data(), i), tol)
            : wgml::load_as_int64(got.dtype(), got.data(), i) == wgml::load_as_int64(want.dtype(), want.data(), i);
    if (!ok && reported++ < 4)
      ADD_FAILURE() << what << ": element " << i << ": got " << wgml::load_as_double(got.dtype(), got.data(), i) << ", MLX "
                    << wgml::load_as_double(want.dtype(), want.data(), i);
  }
}

// Rows of `t` along `axis` (moved last), as doubles.
std::vector<std::vector<double>> rows_along(const wgml::Tensor& t, int axis) {
  const int a = axis < 0 ? axis + t.rank() : axis;
  int64_t inner = 1;
  for (int d = a + 1; d < t.rank(); ++d) inner *= t.dim(d);
  const int64_t len = t.dim(a), outer = t.numel() / std::max<int64_t>(len, 1);
  std::vector<std::vector<double>> rows;
  for (int64_t o = 0; o < outer; ++o) {
    std::vector<double> row;
    for (int64_t j = 0; j < len; ++j)
      row.push_back(wgml::load_as_double(t.dtype(), t.data(), (o / inner * len + j) * inner + o % inner));
    rows.push_back(row);
  }
  return rows;
}

// Partition and ArgPartition leave the order within each side free: the kth element must equal
// MLX's, nothing before it may be greater and nothing after it smaller, and (for values) each row
// must be a permutation of MLX's. ArgPartition's indices are read through the input.
void expect_partitioned(const wgml::Tensor& got, const wgml::Tensor& want, const wgml::Tensor& input, int kth, int axis,
                        const std::string& what) {
  ASSERT_EQ(wgml::dtype_name(got.dtype()), wgml::dtype_name(want.dtype())) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const bool indices = got.dtype() == wgml::DType::UInt32;
  auto g = rows_along(got, axis), w = rows_along(want, axis), x = rows_along(input, axis);
  for (size_t r = 0; r < g.size(); ++r) {
    if (indices) {
      for (double& v : g[r]) v = x[r].at(static_cast<size_t>(v));
      for (double& v : w[r]) v = x[r].at(static_cast<size_t>(v));
    }
    const size_t k = static_cast<size_t>(kth < 0 ? kth + static_cast<int>(g[r].size()) : kth);
    EXPECT_EQ(g[r][k], w[r][k]) << what << ": row " << r << " kth element";
    for (size_t j = 0; j < g[r].size(); ++j)
      EXPECT_TRUE(j < k ? g[r][j] <= g[r][k] : g[r][j] >= g[r][k]) << what << ": row " << r << " element " << j;
    std::sort(g[r].begin(), g[r].end());
    std::sort(w[r].begin(), w[r].end());
    EXPECT_EQ(g[r], w[r]) << what << ": row " << r << " is not a permutation of MLX's";
  }
}

void expect_output(const wgml::Value& got, const json& want_json, const json& c, const wgml::Value& first_input,
                   const std::string& what) {
  const wgml::Value want = decode_value(want_json);
  if (const auto* n = std::get_if<int64_t>(&want)) {
    ASSERT_TRUE(std::holds_alternative<int64_t>(got)) << what << ": expected an int value";
    EXPECT_EQ(std::get<int64_t>(got), *n) << what;
    return;
  }
  ASSERT_TRUE(std::holds_alternative<wgml::Tensor>(got)) << what << ": expected a tensor";
  const std::string compare = c.value("compare", "close");
  if (compare.rfind("partition:", 0) == 0) {
    int kth = 0, axis = 0;
    std::sscanf(compare.c_str(), "partition:%d:%d", &kth, &axis);
    return expect_partitioned(std::get<wgml::Tensor>(got), std::get<wgml::Tensor>(want), std::get<wgml::Tensor>(first_input), kth,
                              axis, what);
  }
  expect_tensor_close(c, std::get<wgml::Tensor>(got), std::get<wgml::Tensor>(want), what);
}

}  // namespace

std::vector<std::vector<Value>> run_mlx_case(const json& c, const runtime::Backend& backend) {
  const std::string name = c["name"];
  auto model = std::make_shared<wgml::ir::Model>();
  model->path = name;
  model->format = wgml::ir::ModelFormat::Payload;
  const bool expect_error = c.contains("error");
  std::vector<std::vector<Value>> results;
  try {
    model->program = wgml::ir::read_payload(payload_from_json(c["graph"]), name);
    wgml::runtime::Executor executor(model, backend);
    for (size_t s = 0; s < c["steps"].size(); ++s) {
      const json& step = c["steps"][s];
      std::vector<wgml::Value> inputs;
      for (const json& v : step["inputs"]) inputs.push_back(decode_value(v));
      const auto outputs = executor.run(inputs);
      if (expect_error) break;
      EXPECT_EQ(outputs.size(), step["outputs"].size()) << name;
      if (outputs.size() != step["outputs"].size()) return {};
      for (size_t i = 0; i < outputs.size(); ++i)
        expect_output(outputs[i], step["outputs"][i], c, inputs.empty() ? wgml::Value{} : inputs[0],
                      name + " step " + std::to_string(s) + " output " + std::to_string(i));
      results.push_back(outputs);
    }
    if (expect_error) ADD_FAILURE() << name << ": expected an error mentioning '" << c["error"] << "'";
  } catch (const wgml::Error& e) {
    if (!expect_error)
      ADD_FAILURE() << name << ": " << e.what();
    else
      EXPECT_NE(std::string(e.what()).find(c["error"].get<std::string>()), std::string::npos)
          << name << ": error '" << e.what() << "' does not mention '" << c["error"] << "'";
  }
  return results;
}

void expect_same_results(const json& c, const std::vector<std::vector<Value>>& got, const std::vector<std::vector<Value>>& want,
                         const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what << ": steps";
  for (size_t s = 0; s < got.size(); ++s) {
    ASSERT_EQ(got[s].size(), want[s].size()) << what << ": outputs of step " << s;
    for (size_t i = 0; i < got[s].size(); ++i) {
      const std::string where = what + " step " + std::to_string(s) + " output " + std::to_string(i);
      const auto* g = std::get_if<Tensor>(&got[s][i]);
      const auto* w = std::get_if<Tensor>(&want[s][i]);
      if (g && w)
        expect_tensor_close(c, *g, *w, where);
      else
        EXPECT_EQ(got[s][i].index(), want[s][i].index()) << where;
    }
  }
}

json mlx_cases_of(const std::string& node) {
  const fs::path file = fs::path(WGML_MLX_CASES_DIR) / (node + ".json");
  if (!fs::exists(file)) {
    ADD_FAILURE() << file << " is missing: run tools/mlx_cases/generate.py (the mlx_cases CTest fixture does)";
    return json::array();
  }
  return json::parse(read_text(file))["cases"];
}

std::vector<std::string> all_node_names() {
  std::vector<std::string> names;
  for (size_t id = 1; id < ir::kNodeNames.size(); ++id) names.emplace_back(ir::kNodeNames[id]);
  return names;
}

}  // namespace wgml::testing
