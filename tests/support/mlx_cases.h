#pragma once
// The MLX-differential cases (tools/mlx_cases/generate.py writes them at test time, the CTest
// fixture `mlx_cases`): tiny programs per node with the outputs the real MLX computed. run_case
// loads one through the real loader (FlatBuffers verification, decoding, validation), runs it on a
// backend and compares: dtype and shape exactly, values within float32 1e-5, float16 1e-3,
// bfloat16 1e-2 (relative and absolute), integers and bools exactly.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "wgml/tensor.h"

namespace wgml::testing {

// <cases dir>/<node>.json's cases; a test failure (and an empty list) when it is missing.
nlohmann::json mlx_cases_of(const std::string& node);
// Runs one case on `backend`, reporting mismatches with MLX as test failures; returns each step's
// outputs (none when the case expects an error or fails).
std::vector<std::vector<Value>> run_mlx_case(const nlohmann::json& c, const runtime::Backend& backend);
// Two backends' results of case `c` agree: dtypes and shapes exactly, values within the
// tolerance of the MLX comparison.
void expect_same_results(const nlohmann::json& c, const std::vector<std::vector<Value>>& got,
                         const std::vector<std::vector<Value>>& want, const std::string& what);
// Every node name of the schema ("AddNode", ...), for parameterized suites.
std::vector<std::string> all_node_names();

}  // namespace wgml::testing
