// wgml command line: inspect and run MLX-delegate programs and ONNX models.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_backend.h"
#include "backend/webgpu/gpu_context.h"
#include "backend/webgpu/webgpu_backend.h"
#include "frontend/load_model.h"
#include "frontend/onnx/onnx_model.h"
#include "frontend/summary.h"
#include "gpu/gpu_error.h"
#include "io/npy.h"
#include "runtime/executor.h"
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
  std::string path;
  std::string device = "auto";
  std::vector<std::string> inputs;
  std::string output_dir;
  std::string constants;
  std::string adapter;
  std::vector<std::string> tunables;
  std::string tunables_file;
  bool profile = false;
  std::string trace_path;  // --profile TRACE.json
};

wgml::SessionOptions session_options(const RunArgs& args) {
  wgml::SessionOptions o;
  o.device = args.device;
  o.constants_path = args.constants;
  o.adapter = args.adapter;
  o.tunables = args.tunables;
  o.tunables_file = args.tunables_file;
  o.profile = args.profile;
  return o;
}

// The per-op profile as a table on stderr, slowest first.
void print_profile(wgml::Session& session, const std::string& trace_path) {
  const std::vector<wgml::OpProfile> ops = session.profile(trace_path);
  std::fprintf(stderr, "profile (%s)\n%-32s %-7s %7s %11s  %s\n", session.device_description().c_str(), "op", "device", "calls",
               "total ms", "note");
  for (const wgml::OpProfile& p : ops)
    std::fprintf(stderr, "%-32s %-7s %7llu %11.3f  %s\n", p.op.c_str(), p.device.c_str(),
                 static_cast<unsigned long long>(p.calls), p.total_ms, p.note.c_str());
  const wgml::RunStats& stats = session.last_run_stats();
  std::fprintf(stderr, "last run: %llu plans made, %llu kernels rendered, %llu pipelines compiled\n",
               static_cast<unsigned long long>(stats.plans_made), static_cast<unsigned long long>(stats.kernels_rendered),
               static_cast<unsigned long long>(stats.pipelines_compiled));
}

// .npy, or a serialized ONNX TensorProto (.pb, the ONNX backend tests' format).
wgml::Tensor read_tensor(const std::string& path, wgml::DType expected) {
  if (std::filesystem::path(path).extension() == ".pb") return wgml::frontend::onnx::read_tensor_file(path);
  return wgml::io::read_npy(path, expected);
}

// Binds "NAME=PATH" (or a bare PATH, in positional order) to the session's inputs.
std::vector<wgml::Value> load_inputs(const wgml::Session& session, const std::vector<std::string>& specs) {
  const auto& infos = session.inputs();
  std::vector<wgml::Value> values(infos.size());
  std::vector<bool> bound(infos.size(), false);
  size_t next = 0;
  for (const std::string& spec : specs) {
    const auto eq = spec.find('=');
    size_t index = next;
    std::string path = spec;
    if (eq != std::string::npos) {
      const std::string name = spec.substr(0, eq);
      path = spec.substr(eq + 1);
      index = infos.size();
      for (size_t i = 0; i < infos.size(); ++i)
        if (infos[i].name == name) index = i;
      if (index == infos.size())
        throw wgml::Error(wgml::ErrorCode::InvalidArgument, "--input " + spec + ": the model has no input named '" + name + "'");
    }
    if (index >= infos.size())
      throw wgml::Error(wgml::ErrorCode::InvalidArgument,
                        "--input " + spec + ": the model has only " + std::to_string(infos.size()) + " inputs");
    const wgml::Tensor t = read_tensor(path, infos[index].dtype);
    if (infos[index].kind == "tensor")
      values[index] = t;
    else
      values[index] = static_cast<int64_t>(t.numel() == 1 ? t.data_as<int64_t>()[0] : 0);
    bound[index] = true;
    next = index + 1;
  }
  for (size_t i = 0; i < infos.size(); ++i)
    if (!bound[i])
      throw wgml::Error(wgml::ErrorCode::InvalidArgument, "input '" + infos[i].name + "' was not given (--input NAME=FILE.npy)");
  return values;
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

// `auto`: the best WebGPU adapter (a GPU, else a CPU implementation such as lavapipe), or the CPU
// reference where the machine has no WebGPU library or device at all.
wgml::Session open_session(const RunArgs& args) {
  wgml::SessionOptions options = session_options(args);
  if (args.device != "auto") return wgml::Session(args.path, options);
  options.device = "webgpu";
  try {
    return wgml::Session(args.path, options);
  } catch (const wgml::gpu::GpuError& e) {
    if (e.kind() != wgml::gpu::GpuErrorKind::LibraryNotFound && e.kind() != wgml::gpu::GpuErrorKind::NoAdapter) throw;
    std::cerr << "wgml: no WebGPU device (" << e.what() << "); running on the CPU reference\n";
    options.device = "cpu";
    return wgml::Session(args.path, options);
  }
}

int run(const RunArgs& args) {
  wgml::Session session = open_session(args);
  const auto outputs = session.run(load_inputs(session, args.inputs));
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = session.outputs()[i].name;
    std::cout << name << ": " << describe(outputs[i]);
    if (!args.output_dir.empty()) {
      const std::string file = args.output_dir + "/" + name + ".npy";
      if (const auto* t = std::get_if<wgml::Tensor>(&outputs[i])) {
        wgml::io::write_npy(file, *t);
        std::cout << " -> " << file;
      }
    }
    std::cout << "\n";
  }
  if (args.profile) print_profile(session, args.trace_path);
  if (!args.trace_path.empty()) std::cerr << "trace: " << args.trace_path << " (open in ui.perfetto.dev or chrome://tracing)\n";
  return 0;
}

// Every op of every domain with its support per backend: the IR's nodes (domain "mlx") and the
// ONNX ops a backend keeps in their own domain. A node runs on the CPU when the CPU backend has a
// kernel for it or the executor runs it itself (control flow, value arithmetic, copies); on
// WebGPU with a GPU kernel when kernels/specs has its spec, as a sequence of GPU kernels when
// kernels/decompositions decomposes it, else through the CPU fallback.
int list_ops(bool json) {
  const wgml::backend::cpu::CpuBackend cpu;
  const std::string kernels = wgml::backend::webgpu::default_kernels_dir();
  wgml::kernel::Engine engine(kernels + "/wgsl");
  engine.load_directory(kernels + "/specs");
  const auto decompositions = wgml::kernel::load_decomposition_directory(kernels + "/decompositions");
  nlohmann::json ops = nlohmann::json::array();
  for (size_t id = 1; id < wgml::ir::kNodeNames.size(); ++id) {
    const bool native = wgml::runtime::Executor::handles_natively(id);
    const bool on_cpu = cpu.kernels().find(id) || native;
    const std::string op(wgml::backend::webgpu::spec_op_name(wgml::ir::kNodeNames[id]));
    const wgml::kernel::KernelSpec* spec = engine.find("mlx", op);
    const char* webgpu = spec && spec->view                  ? "view"
                         : spec                              ? "kernel"
                         : native                            ? "executor"
                         : decompositions.count({"mlx", op}) ? "decomposed"
                         : on_cpu                            ? "cpu fallback"
                                                             : "no";
    ops.push_back(
        {{"domain", "mlx"}, {"op", wgml::ir::kNodeNames[id]}, {"id", id}, {"support", {{"cpu", on_cpu}, {"webgpu", webgpu}}}});
  }
  for (const auto& [key, kernel] : cpu.kernels().onnx_kernels()) {
    const char* webgpu = engine.find(key.first, key.second) ? "kernel" : "cpu fallback";
    ops.push_back({{"domain", key.first}, {"op", key.second}, {"support", {{"cpu", true}, {"webgpu", webgpu}}}});
  }
  if (json) {
    std::cout << nlohmann::json{{"backends", {"cpu", "webgpu"}}, {"ops", ops}}.dump(2) << "\n";
    return 0;
  }
  for (const auto& op : ops)
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
  run_cmd->add_option("file", run_args.path, "Model file (.pte, .mlxg, .onnx)")->required();
  run_cmd
      ->add_option("--device", run_args.device,
                   "webgpu (GPU kernels, the rest on the CPU), cpu (the reference), or auto: webgpu where "
                   "the machine has a WebGPU device (a GPU, else lavapipe), else cpu")
      ->check(CLI::IsMember({"auto", "cpu", "webgpu"}))
      ->capture_default_str();
  run_cmd->add_option("--adapter", run_args.adapter, "webgpu: adapter index or part of its name (default: the best)");
  run_cmd->add_option("--tunable", run_args.tunables, "webgpu: override a kernel tunable, Op.NAME=VALUE (repeatable)");
  run_cmd->add_option("--tunables-file", run_args.tunables_file, "webgpu: per-adapter tunables JSON");
  auto* profile_option =
      run_cmd->add_option("--profile", run_args.trace_path,
                          "webgpu: print GPU time per kernel and the nodes run on the CPU; with a file name, also write a "
                          "Chrome/Perfetto trace there (one slice per kernel and per pass)");
  profile_option->expected(0, 1);
  run_cmd->add_option("--input", run_args.inputs, "NAME=PATH (.npy or .pb), or PATH in input order");
  run_cmd->add_option("--output-dir", run_args.output_dir, "Write each output as NAME.npy here");
  run_cmd->add_option("--constants", run_args.constants, "Constants (.safetensors) for a .mlxg payload");

  bool ops_json = false;
  auto* ops_cmd = app.add_subcommand("ops", "List every op of every domain with its support per backend");
  ops_cmd->add_flag("--json", ops_json, "Print JSON");

  wgml::cli::SpecCommands spec_commands(app);

  CLI11_PARSE(app, argc, argv);
  try {
    if (spec_commands.selected()) return spec_commands.run();
    if (*inspect_cmd) return inspect(inspect_path, inspect_json);
    if (*ops_cmd) return list_ops(ops_json);
    if (*run_cmd) {
      run_args.profile = profile_option->count() > 0;
      return run(run_args);
    }
  } catch (const wgml::Error& e) {
    std::cerr << "wgml: error [" << wgml::error_code_name(e.code()) << "]: " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "wgml: error [runtime]: out of memory\n";
    return 1;
  }
  return 0;
}
