#include "session_args.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

#include "api/open_session.h"
#include "core/memory_budget.h"
#include "core/printable.h"

namespace wgml::cli {

void SessionArgs::add_to(CLI::App& command) {
  command.add_option("file", path, "Model file (.pte, .mlxg, .onnx)")->required();
  command
      .add_option("--device", device,
                  "webgpu (GPU kernels, the rest on the CPU), cpu (the reference), or auto: webgpu where "
                  "the machine has a WebGPU device (a GPU, else lavapipe), else cpu")
      ->check(CLI::IsMember({"auto", "cpu", "webgpu"}))
      ->capture_default_str();
  command.add_option("--adapter", adapter, "webgpu: adapter index or part of its name (default: the best)");
  command.add_option("--tunable", tunables, "webgpu: override a kernel tunable, Op.NAME=VALUE (repeatable)");
  command.add_option("--tunables-file", tunables_file, "webgpu: per-adapter tunables JSON");
  profile_option = command.add_option("--profile", trace_path,
                                      "print time per op (webgpu: GPU time per kernel, and every op run on the CPU with "
                                      "why), where the wall time went, and the memory peak with the largest tensors "
                                      "live then; with a file name, also write a Chrome/Perfetto trace there (webgpu: "
                                      "one slice per kernel and per pass)");
  profile_option->expected(0, 1);
  command.add_option("--constants", constants, "Constants (.safetensors) for a .mlxg payload");
  command.add_option("--max-memory", max_memory,
                     "Most bytes the model's tensors may hold at once, host and device (e.g. 4G, 512M; K/M/G/T are powers "
                     "of 1024); default: the free memory (MemAvailable), at most three quarters of physical memory");
}

Session SessionArgs::open() const {
  SessionOptions options;
  options.device = device;
  options.constants_path = constants;
  options.adapter = adapter;
  options.tunables = tunables;
  options.tunables_file = tunables_file;
  options.profile = profile();
  if (!max_memory.empty()) options.max_memory_bytes = parse_byte_size(max_memory);
  std::string why_not_webgpu;
  Session session = api::open_session(path, options, &why_not_webgpu);
  if (!why_not_webgpu.empty()) std::cerr << "wgml: no WebGPU device (" << why_not_webgpu << "); running on the CPU reference\n";
  return session;
}

namespace {

// 1536 -> "1.5 KiB": bytes in the largest binary unit that keeps the number at least 1.
std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit ? "%.1f %s" : "%.0f %s", value, units[unit]);
  return text;
}

void print_time_totals(const ProfileTotals& t) {
  std::fprintf(stderr,
               "wall time of %llu run(s): %.3f ms = cpu ops %.3f + host %.3f + executor %.3f + gpu recording %.3f + "
               "compiling %llu pipeline(s) %.3f + other (submits, waits for the GPU, bookkeeping) %.3f ms",
               static_cast<unsigned long long>(t.runs), t.wall_ms, t.cpu_ops_ms, t.host_ms, t.executor_ms, t.gpu_recording_ms,
               static_cast<unsigned long long>(t.pipelines_compiled), t.compile_ms, t.other_ms);
  if (t.gpu_busy_ms > 0) std::fprintf(stderr, "; GPU busy %.3f ms (overlaps the rest)", t.gpu_busy_ms);
  std::fprintf(stderr, "\n");
  if (t.load_dispatches > 0)
    std::fprintf(stderr,
                 "the load's own GPU work (init chain, constants folded at load), not among the ops: %llu dispatches, %.3f ms\n",
                 static_cast<unsigned long long>(t.load_dispatches), t.load_gpu_ms);
}

// The process's peak resident memory (VmHWM of /proc/self/status: what `time` and the kernel
// report as max RSS), or empty where there is no such file.
std::string process_peak_resident() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) {
      const size_t digits = line.find_first_of("0123456789");
      return digits == std::string::npos ? "" : human_bytes(std::stoull(line.substr(digits)) << 10);
    }
  return "";
}

void print_memory(const Session& session) {
  if (const std::string peak = process_peak_resident(); !peak.empty())
    std::fprintf(stderr, "process peak resident memory (VmHWM): %s\n", peak.c_str());
  const RunStats& stats = session.last_run_stats();
  std::fprintf(stderr, "peak memory of the last run: host tensors %s, GPU buffers %s (allocated; %llu in use after the run)\n",
               human_bytes(stats.peak_host_bytes).c_str(), human_bytes(stats.peak_device_bytes).c_str(),
               static_cast<unsigned long long>(stats.device_buffers_in_use));
  const MemoryProfile memory = session.memory_profile();
  if (memory.largest.empty()) return;
  std::fprintf(stderr, "largest tensors live at its highest point (host %s + GPU %s in use, after %s):\n",
               human_bytes(memory.host_bytes).c_str(), human_bytes(memory.device_bytes).c_str(), printable(memory.after).c_str());
  for (const LiveTensorInfo& t : memory.largest)
    std::fprintf(stderr, "  %-22s %-28s host %-12s gpu %-12s %s\n", t.slot.c_str(), t.tensor.c_str(),
                 human_bytes(t.host_bytes).c_str(), human_bytes(t.device_bytes).c_str(),
                 t.written_by.empty() ? "bound before the run" : printable(t.written_by).c_str());
}

}  // namespace

void print_profile(Session& session, const std::string& trace_path) {
  const std::vector<OpProfile> ops = session.profile(trace_path);
  std::fprintf(stderr, "profile (%s)\n%-32s %-8s %7s %11s %8s %11s  %s\n", session.device_description().c_str(), "op", "device",
               "calls", "total ms", "compiles", "compile ms", "note");
  for (const OpProfile& p : ops) {
    char compiled[384] = "";  // room for any double, so that no column is cut
    if (p.compiles)
      std::snprintf(compiled, sizeof compiled, "%8llu %11.3f", static_cast<unsigned long long>(p.compiles), p.compile_ms);
    std::fprintf(stderr, "%-32s %-8s %7llu %11.3f %20s  %s\n", printable(p.op).c_str(), p.device.c_str(),
                 static_cast<unsigned long long>(p.calls), p.total_ms, compiled, printable(p.note).c_str());
  }
  print_time_totals(session.profile_totals());
  const RunStats& stats = session.last_run_stats();
  std::fprintf(stderr,
               "last run: %llu plans made, %llu plan keys built, %llu kernels rendered, %llu pipelines compiled, %llu buffers "
               "created\n",
               static_cast<unsigned long long>(stats.plans_made), static_cast<unsigned long long>(stats.plan_keys_built),
               static_cast<unsigned long long>(stats.kernels_rendered), static_cast<unsigned long long>(stats.pipelines_compiled),
               static_cast<unsigned long long>(stats.buffers_created));
  print_memory(session);
  if (!trace_path.empty()) std::cerr << "trace: " << trace_path << " (open in ui.perfetto.dev or chrome://tracing)\n";
}

}  // namespace wgml::cli
