#include "gpu/trace_writer.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "wgml/error.h"

namespace wgml::gpu {
namespace {

constexpr int kProcessId = 1;

// Track names in order of first appearance; a track's thread id is its position plus one.
int track_id(std::vector<std::string>& tracks, const std::string& track) {
  for (size_t i = 0; i < tracks.size(); ++i)
    if (tracks[i] == track) return int(i) + 1;
  tracks.push_back(track);
  return int(tracks.size());
}

nlohmann::json metadata(const char* what, int tid, const std::string& name) {
  return {{"ph", "M"}, {"name", what}, {"pid", kProcessId}, {"tid", tid}, {"args", {{"name", name}}}};
}

}  // namespace

std::vector<TraceSlice> trace_slices(const std::vector<GpuTiming>& timings) {
  std::vector<TraceSlice> slices;
  slices.reserve(timings.size());
  for (const GpuTiming& t : timings)
    slices.push_back(
        {t.name, t.kind == TimingKind::Pass ? "GPU passes" : "GPU ops", t.start_ns / 1000.0, t.duration_ns / 1000.0});
  return slices;
}

std::string chrome_trace_json(const std::vector<TraceSlice>& slices) {
  std::vector<std::string> tracks;
  nlohmann::json events = nlohmann::json::array();
  events.push_back(metadata("process_name", 0, "wgml"));
  for (const TraceSlice& s : slices) {
    events.push_back({{"name", s.name},
                      {"cat", s.track},
                      {"ph", "X"},
                      {"pid", kProcessId},
                      {"tid", track_id(tracks, s.track)},
                      {"ts", s.start_us},
                      {"dur", s.duration_us}});
  }
  for (size_t i = 0; i < tracks.size(); ++i) events.push_back(metadata("thread_name", int(i) + 1, tracks[i]));
  nlohmann::json trace = {{"traceEvents", events}, {"displayTimeUnit", "ns"}};
  return trace.dump(1);
}

void write_chrome_trace(const std::string& path, const std::vector<TraceSlice>& slices) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out << chrome_trace_json(slices);
  out.close();
  if (!out) throw Error(ErrorCode::Io, "cannot write the trace file " + path);
}

}  // namespace wgml::gpu
