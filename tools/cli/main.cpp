// wgml command line: inspect and run MLX-delegate programs and ONNX models.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "api/op_support.h"
#include "core/elements.h"
#include "frontend/load_model.h"
#include "frontend/onnx/onnx_model.h"
#include "frontend/summary.h"
#include "generate_command.h"
#include "gpu/gpu_error.h"
#include "io/npy.h"
#include "session_args.h"
#include "spec_command.h"
#include "wgml/error.h"
#include "wgml/session.h"

namespace {

int inspect(const std::string& path, bool json) {
  const auto model = wgml::frontend::load_model(path);
  const auto summary = wgml::frontend::summarize(model);
  if (json)
    std::cout << wgml::frontend::to_json(summary).dump(2) << "\n";
  else
    std::cout << wgml::frontend::to_text(summary);
  return 0;
}

struct RunArgs {
  wgml::cli::SessionArgs session;
  std::vector<std::string> inputs;
  std::string output_dir;
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

void print_outputs(const wgml::Session& session, const std::vector<wgml::Value>& outputs, const std::string& output_dir,
                   const std::string& step_suffix) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string name = session.outputs()[i].name + step_suffix;
    std::cout << name << ": " << describe(outputs[i]);
    const auto* t = std::get_if<wgml::Tensor>(&outputs[i]);
    if (!output_dir.empty() && t) {
      const std::string file = output_dir + "/" + name + ".npy";
      wgml::io::write_npy(file, *t);
      std::cout << " -> " << file;
    }
    std::cout << "\n";
  }
}

// Runs each step in one session, so mutable buffers (KV caches) carry over from step to step.
int run(const RunArgs& args) {
  wgml::Session session = args.session.open();
  const auto steps = load_steps(session, args.inputs);
  for (size_t s = 0; s < steps.size(); ++s)
    print_outputs(session, session.run(steps[s]), args.output_dir, steps.size() > 1 ? ".step" + std::to_string(s) : "");
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
  run_cmd->add_option("--output-dir", run_args.output_dir, "Write each output as NAME.npy (NAME.stepK.npy for several calls)");

  wgml::cli::GenerateCommand generate_command(app);

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
  } catch (const wgml::Error& e) {
    std::cerr << "wgml: error [" << wgml::error_code_name(e.code()) << "]: " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "wgml: error [runtime]: out of memory\n";
    return 1;
  }
  return 0;
}
