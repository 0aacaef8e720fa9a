// wgml command line: inspect and run MLX-delegate programs and ONNX models.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "api/op_support.h"
#include "bench_command.h"
#include "core/elements.h"
#include "core/printable.h"
#include "frontend/load_model.h"
#include "frontend/onnx/onnx_model.h"
#include "frontend/summary.h"
#include "generate_command.h"
#include "gpu/gpu_error.h"
#include "io/npy.h"
#include "io/output_files.h"
#include "runtime/executor.h"
#include "serve_command.h"
#include "session_args.h"
#include "spec_command.h"
#include "wgml/error.h"
#include "wgml/session.h"

namespace {

// Names come from the model file and need not be UTF-8, where dump() would throw: invalid bytes
// become U+FFFD. Everything past ASCII is written as \uXXXX, so that DEL and the C1 controls
// (U+0080-U+009F, which JSON leaves raw) cannot reach a terminal either.
std::string dump_json(const nlohmann::json& json) { return json.dump(2, ' ', true, nlohmann::json::error_handler_t::replace); }

int inspect(const std::string& path, bool json) {
  const auto model = wgml::frontend::load_model(path);
  const auto summary = wgml::frontend::summarize(model);
  if (json)
    std::cout << dump_json(wgml::frontend::to_json(summary)) << "\n";
  else
    std::cout << wgml::frontend::to_text(summary);
  return 0;
}

struct RunArgs {
  wgml::cli::SessionArgs session;
  std::vector<std::string> inputs;
  std::string output_dir;
  int repeat = 1;
  bool json = false;
};

// .npy, or a serialized ONNX TensorProto (.pb, the ONNX backend tests' format).
wgml::Value read_input(const std::string& path, const wgml::IoInfo& info) {
  const wgml::Tensor t = std::filesystem::path(path).extension() == ".pb" ? wgml::frontend::onnx::read_tensor_file(path)
                                                                          : wgml::io::read_npy(path, info.dtype);
  if (info.kind == "tensor") return t;
  if (t.numel() != 1)
    throw wgml::Error(wgml::ErrorCode::InvalidArgument,
                      path + ": input '" + info.name + "' is an int value: expected one element");
  return static_cast<int64_t>(wgml::load_as_double(t.dtype(), t.data(), 0));
}

std::vector<std::string> split_commas(const std::string& list) {
  std::vector<std::string> items;
  for (size_t begin = 0;;) {
    const size_t comma = list.find(',', begin);
    items.push_back(list.substr(begin, comma - begin));
    if (comma == std::string::npos) return items;
    begin = comma + 1;
  }
}

// The files of each input, from "NAME=PATH[,PATH...]" or a bare "PATH[,PATH...]" in input order.
std::vector<std::vector<std::string>> input_files(const std::vector<wgml::IoInfo>& infos, const std::vector<std::string>& specs) {
  std::vector<std::vector<std::string>> files(infos.size());
  size_t next = 0;
  for (const std::string& spec : specs) {
    const auto eq = spec.find('=');
    size_t index = next;
    if (eq != std::string::npos) {
      const std::string name = spec.substr(0, eq);
      index = infos.size();
      for (size_t i = 0; i < infos.size(); ++i)
        if (infos[i].name == name) index = i;
      if (index == infos.size())
        throw wgml::Error(wgml::ErrorCode::InvalidArgument, "--input " + spec + ": the model has no input named '" + name + "'");
    }
    if (index >= infos.size())
      throw wgml::Error(wgml::ErrorCode::InvalidArgument,
                        "--input " + spec + ": the model has only " + std::to_string(infos.size()) + " inputs");
    files[index] = split_commas(eq == std::string::npos ? spec : spec.substr(eq + 1));
    next = index + 1;
  }
  for (size_t i = 0; i < infos.size(); ++i)
    if (files[i].empty())
      throw wgml::Error(wgml::ErrorCode::InvalidArgument, "input '" + infos[i].name + "' was not given (--input NAME=FILE.npy)");
  return files;
}

// One call's inputs per step: an input given as a comma list takes its k-th file in step k; one
// given as a single file is the same in every step.
std::vector<std::vector<wgml::Value>> load_steps(const wgml::Session& session, const std::vector<std::string>& specs) {
  const auto& infos = session.inputs();
  const std::vector<std::vector<std::string>> files = input_files(infos, specs);
  size_t steps = 1;
  for (const auto& list : files) steps = std::max(steps, list.size());
  std::vector<std::vector<wgml::Value>> out(steps, std::vector<wgml::Value>(infos.size()));
  for (size_t i = 0; i < infos.size(); ++i) {
    if (files[i].size() != 1 && files[i].size() != steps)
      throw wgml::Error(wgml::ErrorCode::InvalidArgument, "input '" + infos[i].name + "': " + std::to_string(files[i].size()) +
                                                              " files for " + std::to_string(steps) +
                                                              " steps (give one file, or one per step)");
    for (size_t s = 0; s < steps; ++s) out[s][i] = read_input(files[i][files[i].size() == 1 ? 0 : s], infos[i]);
  }
  return out;
}

std::string describe(const wgml::Value& v) {
  if (const auto* t = std::get_if<wgml::Tensor>(&v)) {
    std::string s = std::string(wgml::dtype_name(t->dtype())) + " [";
    for (int d = 0; d < t->rank(); ++d) s += (d ? ", " : "") + std::to_string(t->dim(d));
    return s + "]";
  }
  if (const auto* i = std::get_if<int64_t>(&v)) return "int " + std::to_string(*i);
  if (const auto* f = std::get_if<double>(&v)) return "float " + std::to_string(*f);
  return std::get<bool>(v) ? "bool true" : "bool false";
}

// Where each output's file goes: the output folder (created if missing) and one plain file name
// per output, derived from its name by the rule of io/output_files.h, so that no name from the
// model file can point outside the folder.
class OutputFiles {
 public:
  OutputFiles(const std::string& dir, const std::vector<wgml::IoInfo>& outputs) : dir_(dir) {
    std::vector<std::string> names;
    for (const wgml::IoInfo& info : outputs) names.push_back(info.name);
    stems_ = wgml::io::output_file_stems(names);
    std::error_code error;
    if (!dir_.empty()) std::filesystem::create_directories(dir_, error);
    if (error) throw wgml::Error(wgml::ErrorCode::Io, dir + ": cannot create the output folder: " + error.message());
  }
  bool enabled() const { return !dir_.empty(); }
  std::string path(size_t output, const std::string& step_suffix) const {
    return (dir_ / (stems_[output] + step_suffix + ".npy")).string();
  }

 private:
  std::filesystem::path dir_;
  std::vector<std::string> stems_;
};

nlohmann::json output_json(const std::string& name, const wgml::Value& value, const std::string& file) {
  nlohmann::json out{{"name", name}};
  if (const auto* t = std::get_if<wgml::Tensor>(&value)) {
    out["dtype"] = wgml::dtype_name(t->dtype());
    out["shape"] = t->shape();
    out["file"] = file.empty() ? nlohmann::json() : nlohmann::json(file);
  } else if (const auto* i = std::get_if<int64_t>(&value)) {
    out["value"] = *i;
  } else if (const auto* f = std::get_if<double>(&value)) {
    out["value"] = *f;
  } else {
    out["value"] = std::get<bool>(value);
  }
  return out;
}

// Writes a step's tensor outputs and reports each (name, value, file): as text lines, or as JSON
// objects added to `json`.
void report_outputs(const wgml::Session& session, const std::vector<wgml::Value>& outputs, const OutputFiles& files,
                    const std::string& step_suffix, nlohmann::json* json) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = session.outputs()[i].name;
    const auto* t = std::get_if<wgml::Tensor>(&outputs[i]);
    std::string file;
    if (files.enabled() && t) {
      file = files.path(i, step_suffix);
      wgml::io::write_npy(file, *t);
    }
    if (json) {
      json->push_back(output_json(name, outputs[i], file));
      continue;
    }
    std::cout << wgml::printable(name) + step_suffix << ": " << describe(outputs[i]) << (file.empty() ? "" : " -> " + file)
              << "\n";
  }
}

// Each step's call, its outputs read back to the host (so a WebGPU run's time includes waiting for
// the GPU); returns the last step's outputs and the wall time of it all in ms.
std::pair<std::vector<std::vector<wgml::Value>>, double> run_steps(wgml::Session& session,
                                                                   const std::vector<std::vector<wgml::Value>>& steps) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::vector<wgml::Value>> outputs;
  for (const auto& inputs : steps) {
    outputs.push_back(session.run(inputs));
    for (const wgml::Value& v : outputs.back())
      if (const auto* t = std::get_if<wgml::Tensor>(&v)) t->data();
  }
  return {std::move(outputs), std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count()};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Load, the first run (pipeline compiles, first uploads) and the steady runs after it, apart.
void print_times(const wgml::Session& session, const std::vector<double>& runs_ms) {
  std::fprintf(stderr, "time: load %.3f ms, first run %.3f ms", session.load_ms(), runs_ms.front());
  if (runs_ms.size() > 1)
    std::fprintf(stderr, ", steady run %.3f ms (median of %zu)", median({runs_ms.begin() + 1, runs_ms.end()}),
                 runs_ms.size() - 1);
  std::fprintf(stderr, " (a run: every step's call and the reading back of its outputs)\n");
}

// Runs each step in one session, so mutable buffers (KV caches) carry over from step to step;
// --repeat runs them all again, printing the outputs of the last repetition.
int run(const RunArgs& args) {
  wgml::Session session = args.session.open();
  const auto steps = load_steps(session, args.inputs);
  const OutputFiles files(args.output_dir, session.outputs());
  std::vector<double> runs_ms;
  std::vector<std::vector<wgml::Value>> outputs;
  for (int r = 0; r < args.repeat; ++r) {
    auto [step_outputs, ms] = run_steps(session, steps);
    outputs = std::move(step_outputs);
    runs_ms.push_back(ms);
  }
  nlohmann::json json_steps = nlohmann::json::array();
  for (size_t s = 0; s < steps.size(); ++s) {
    nlohmann::json* json = args.json ? &json_steps.emplace_back(nlohmann::json::array()) : nullptr;
    report_outputs(session, outputs[s], files, steps.size() > 1 ? ".step" + std::to_string(s) : "", json);
  }
  if (args.json) std::cout << dump_json({{"device", session.device_description()}, {"steps", json_steps}}) << "\n";
  std::cout.flush();  // the times and the profile go to stderr, after the outputs
  if (args.session.profile() || args.repeat > 1) print_times(session, runs_ms);
  if (args.session.profile()) wgml::cli::print_profile(session, args.session.trace_path);
  return 0;
}

// Every op of every domain with its support per backend (api/op_support.h).
int list_ops(bool json) {
  const nlohmann::json support = wgml::api::op_support();
  if (json) {
    std::cout << support.dump(2) << "\n";
    return 0;
  }
  for (const auto& op : support["ops"])
    std::cout << op["domain"].get<std::string>() << "\t" << op["op"].get<std::string>()
              << "\tcpu: " << (op["support"]["cpu"].get<bool>() ? "yes" : "no")
              << "\twebgpu: " << op["support"]["webgpu"].get<std::string>() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"wgml: run ExecuTorch MLX-delegate programs and ONNX models on WebGPU or CPU"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "wgml " WGML_VERSION);

  std::string inspect_path;
  bool inspect_json = false;
  auto* inspect_cmd = app.add_subcommand("inspect", "Summarise a model: slots, I/O, constants, nodes");
  inspect_cmd->add_option("file", inspect_path, "Model file (.pte, .mlxg, .onnx)")->required();
  inspect_cmd->add_flag("--json", inspect_json, "Print JSON");

  RunArgs run_args;
  auto* run_cmd = app.add_subcommand("run", "Run a model on inputs given as .npy or ONNX TensorProto .pb files");
  run_args.session.add_to(*run_cmd);
  run_cmd->add_option("--input", run_args.inputs,
                      "NAME=PATH (.npy or .pb), or PATH in input order; PATH,PATH,... runs one call per file in one "
                      "session (a KV cache carries over)");
  run_cmd->add_option("--output-dir", run_args.output_dir,
                      "Write each tensor output into this folder as STEM.npy (STEM.stepK.npy for several calls); STEM "
                      "is the output's name made a plain file name (docs/reliability.md), the mapping is printed");
  run_cmd->add_flag("--json", run_args.json, "Print the outputs (name, value, file) as JSON");
  run_cmd
      ->add_option("--repeat", run_args.repeat,
                   "Run (every step) N times in one session; prints load, first-run and the median steady-run time")
      ->check(CLI::Range(1, 1000000));

  wgml::cli::GenerateCommand generate_command(app);
  wgml::cli::BenchCommand bench_command(app);
  wgml::cli::ServeCommand serve_command(app);

  bool ops_json = false;
  auto* ops_cmd = app.add_subcommand("ops", "List every op of every domain with its support per backend");
  ops_cmd->add_flag("--json", ops_json, "Print JSON");

  wgml::cli::SpecCommands spec_commands(app);

  CLI11_PARSE(app, argc, argv);
  try {
    if (spec_commands.selected()) return spec_commands.run();
    if (*inspect_cmd) return inspect(inspect_path, inspect_json);
    if (*ops_cmd) return list_ops(ops_json);
    if (*run_cmd) return run(run_args);
    if (generate_command.selected()) return generate_command.run();
    if (bench_command.selected()) return bench_command.run();
    if (serve_command.selected()) return serve_command.run();
  } catch (const wgml::Error& e) {
    std::cerr << "wgml: error [" << wgml::error_code_name(e.code()) << "]: " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "wgml: error [runtime]: out of memory\n";
    return 1;
  }
  return 0;
}
