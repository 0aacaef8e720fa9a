#pragma once
// Shared tail of the fuzz targets: once a program has loaded, bind its constants and summarize
// it (what `wgml inspect` does), so the fuzzers also cover the code that trusts a valid program.
#include <string>

#include "frontend/summary.h"
#include "ir/model.h"

namespace wgml::fuzz {

inline void exercise_model(ir::Model& model) {
  model.constants = ir::bind_constants(model.program, model.named_data, model.path);
  const frontend::ModelSummary summary = frontend::summarize(model);
  (void)frontend::to_json(summary);
  (void)frontend::to_text(summary);
}

}  // namespace wgml::fuzz
