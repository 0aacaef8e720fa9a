// wgml command line: inspect and run MLX-delegate programs.
#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "frontend/summary.h"
#include "wgml/error.h"

namespace {

int inspect(const std::string& path, bool json) {
  const auto model = wgml::frontend::load_model(path);
  const auto summary = wgml::frontend::summarize(model);
  if (json) std::cout << wgml::frontend::to_json(summary).dump(2) << "\n";
  else std::cout << wgml::frontend::to_text(summary);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"wgml: run ExecuTorch MLX-delegate programs and ONNX models on WebGPU or CPU"};
  app.require_subcommand(1);

  std::string inspect_path;
  bool inspect_json = false;
  auto* inspect_cmd = app.add_subcommand("inspect", "Summarise a model: slots, I/O, constants, nodes");
  inspect_cmd->add_option("file", inspect_path, "Model file (.pte, .mlxg)")->required();
  inspect_cmd->add_flag("--json", inspect_json, "Print JSON");

  CLI11_PARSE(app, argc, argv);
  try {
    if (*inspect_cmd) return inspect(inspect_path, inspect_json);
  } catch (const wgml::Error& e) {
    std::cerr << "wgml: error [" << wgml::error_code_name(e.code()) << "]: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
