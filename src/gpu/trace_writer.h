#pragma once
// Chrome / Perfetto trace files (the JSON "traceEvents" format that chrome://tracing and
// ui.perfetto.dev open): one complete slice per op or pass, each on a named track.
#include <string>
#include <vector>

#include "gpu/profiler.h"

namespace wgml::gpu {

struct TraceSlice {
  std::string name;
  std::string track;  // slices of one track are drawn on one row
  double start_us = 0;
  double duration_us = 0;
};

// Passes on the track "GPU passes", ops on "GPU ops".
std::vector<TraceSlice> trace_slices(const std::vector<GpuTiming>& timings);

std::string chrome_trace_json(const std::vector<TraceSlice>& slices);

// Writes chrome_trace_json(slices) to `path`; throws wgml::Error(Io) naming the path.
void write_chrome_trace(const std::string& path, const std::vector<TraceSlice>& slices);

}  // namespace wgml::gpu
