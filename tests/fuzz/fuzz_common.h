#pragma once
// Shared pieces of the fuzz targets: the tail that summarizes a loaded model (what `wgml inspect`
// does), and the small inputs fuzz_execute runs a model with.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/elements.h"
#include "frontend/summary.h"
#include "ir/model.h"

namespace wgml::fuzz {

// fuzz_execute's memory limit: small enough that no kernel runs for long on tensors within it.
inline constexpr uint64_t kFuzzMemoryLimit = uint64_t{1} << 20;

inline void exercise_model(ir::Model& model) {
  model.constants = ir::bind_constants(model.program, model.named_data, model.path);
  const frontend::ModelSummary summary = frontend::summarize(model);
  (void)frontend::to_json(summary);
  (void)frontend::to_text(summary);
}

// A dim of a small input: its size when static, else 2 (or its upper bound when below 2).
inline int64_t small_dim(const ir::Dim& d) {
  if (d.is_static()) return d.value;
  return d.max_value >= 0 && d.max_value < 2 ? d.max_value : 2;
}

// One value per declared input: tensors of the declared dtype and small shape holding -2..2, ints
// 1, floats 0.5, bools true.
inline std::vector<Value> small_inputs(const ir::Model& model) {
  std::vector<Value> inputs;
  for (const frontend::IoSummary& in : frontend::summarize(model).inputs) {
    if (in.kind == "int") inputs.emplace_back(int64_t{1});
    if (in.kind == "float") inputs.emplace_back(0.5);
    if (in.kind == "bool") inputs.emplace_back(true);
    if (in.kind != "tensor") continue;
    Shape shape;
    for (const ir::Dim& d : in.shape) shape.push_back(small_dim(d));
    Tensor t(dtype_from_name(in.dtype).value_or(DType::Float32), shape);
    for (int64_t i = 0; i < t.numel(); ++i) store_int64(t.dtype(), t.mutable_data(), i, i % 5 - 2);
    inputs.emplace_back(std::move(t));
  }
  return inputs;
}

}  // namespace wgml::fuzz
