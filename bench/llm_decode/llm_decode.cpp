// The LLM decode step as `wgml generate` runs it, on random weights: one token per call at
// positions past, past + 1, ..., timed per token, against the copy bandwidth of the same device.
//
//   llm_decode PROGRAM.mlxg [--device webgpu|cpu] [--adapter SEL] [--past 1024] [--steps 64] [--warmup 4]
//              [--json OUT] [--profile] [--constants FILE.safetensors] [--seed N] [--copy-mib 256]
//              [--tunable Op.NAME=V ...] [--dispatches-per-submit N] [--ahead]
//   llm_decode --extract MODEL.pte OUT.mlxg     the MLX delegate payload of an ExecuTorch .pte
//   llm_decode --list PROGRAM.mlxg              its constants and how they would be drawn
//   llm_decode --instructions PROGRAM.mlxg      its main chain as WebGPU runs it (fused), slot by slot
//
// The program is an MLX delegate payload (.mlxg) of an ExecuTorch LLM export (input 0 token ids
// [1, T], input 1 cache positions, a logits output): a few hundred KB where the .pte holds GBs of
// weights. Its constants are drawn from the payload's own metadata (src/llm/random_constants.h,
// which `wgml bench` shares) into a .safetensors file (a temporary one, or --constants FILE, written when
// absent and reused when present), and a wgml::Session opens the payload with it.
//
// Each step is what wgml::Generator::forward does: Session::run on token ids [1, 1] and cache
// position [p] (the KV cache is zero, which does not change the work: attention covers p + 1 keys),
// then the last logits row read back as floats. With --ahead, each step is what greedy
// Generator::generate does instead: the token is picked on the device (Session::greedy_token) and
// fed to the next step, whose call is made before the host reads the token; a step's time then
// runs from one token read to the next (the last step's includes waiting for its own token).
// Generator itself cannot start at a position
// without a prefill, and a payload of an older export (transformers 5.4-5.23) returns per-layer
// cache positions before its logits, which only a .pte's method signature drops. After --warmup
// steps, a second of copies on the same device brings an idle GPU's clock up, then --steps steps
// are timed one by one. The copy bandwidth (a vec4 copy of --copy-mib, backend/webgpu/roofline.h;
// memcpy on --device cpu) is measured after them. past + warmup + steps must stay within the
// export's KV cache (2048 for the committed programs): the bench does not know the cache length,
// and a step beyond it is not reported as an error.
//
// Weights read per token: every constant (init-chain outputs at their computed size) except tables
// only gathered from (an untied embedding), so GB/s = those bytes / median ms per token.
// --profile opens a second session with GPU timestamps after the timed one is gone and prints the
// per-op times of one step (the timed steps never run with timestamps), one step ahead with --ahead.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <thread>

#include "backend/webgpu/roofline.h"
#include "core/elements.h"
#include "frontend/pte/pte_file.h"
#include "io/bytes.h"
#include "ir/payload.h"
#include "ir/slot_visit.h"
#include "llm/model_work.h"
#include "llm/random_constants.h"
#include "runtime/fusion.h"
#include "wgml/error.h"
#include "wgml/session.h"

namespace {

using namespace wgml;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string program;
  std::string device = "webgpu";
  std::string adapter;
  int64_t past = 1024;
  int steps = 64;
  int warmup = 4;
  std::string json_path;
  bool profile = false;
  std::string constants_path;
  uint64_t seed = 1;
  uint64_t copy_mib = 256;
  std::vector<std::string> tunables;
  uint32_t dispatches_per_submit = 0;
  bool ahead = false;
};

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

const char* const kUsage =
    "usage: llm_decode PROGRAM.mlxg [--device webgpu|cpu] [--adapter SEL] [--past 1024] [--steps 64] [--warmup 4]\n"
    "                  [--json OUT] [--profile] [--constants FILE.safetensors] [--seed N] [--copy-mib 256]\n"
    "                  [--tunable Op.NAME=V ...] [--dispatches-per-submit N] [--ahead]\n"
    "       llm_decode --extract MODEL.pte OUT.mlxg\n"
    "       llm_decode --list PROGRAM.mlxg\n"
    "       llm_decode --instructions PROGRAM.mlxg\n";

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--profile") {
      o.profile = true;
      continue;
    }
    if (flag == "--ahead") {
      o.ahead = true;
      continue;
    }
    if (flag.rfind("--", 0) != 0) {
      if (!o.program.empty()) throw Error(ErrorCode::InvalidArgument, "more than one program: " + flag);
      o.program = flag;
      continue;
    }
    if (i + 1 >= argc) throw Error(ErrorCode::InvalidArgument, flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--device")
      o.device = value;
    else if (flag == "--adapter")
      o.adapter = value;
    else if (flag == "--past")
      o.past = std::stoll(value);
    else if (flag == "--steps")
      o.steps = std::stoi(value);
    else if (flag == "--warmup")
      o.warmup = std::stoi(value);
    else if (flag == "--json")
      o.json_path = value;
    else if (flag == "--constants")
      o.constants_path = value;
    else if (flag == "--seed")
      o.seed = std::stoull(value);
    else if (flag == "--copy-mib")
      o.copy_mib = std::stoull(value);
    else if (flag == "--tunable")
      o.tunables.push_back(value);
    else if (flag == "--dispatches-per-submit")
      o.dispatches_per_submit = static_cast<uint32_t>(std::stoul(value));
    else
      throw Error(ErrorCode::InvalidArgument, "unknown option " + flag);
  }
  if (o.program.empty()) throw Error(ErrorCode::InvalidArgument, "no program given");
  if (o.device != "webgpu" && o.device != "cpu") throw Error(ErrorCode::InvalidArgument, "--device is webgpu or cpu");
  if (o.steps < 1 || o.warmup < 0 || o.past < 0) throw Error(ErrorCode::InvalidArgument, "--steps >= 1, --warmup, --past >= 0");
  return o;
}

ir::Program read_program(const std::string& path) {
  const io::ByteView file = io::map_file(path);
  if (!ir::looks_like_payload(file))
    throw Error(ErrorCode::InvalidFormat, path + ": expected an MLX delegate payload (.mlxg; --extract makes one from a .pte)");
  return ir::read_payload(file, path);
}

int extract(const std::string& pte_path, const std::string& out_path) {
  const frontend::PteContents pte = frontend::read_pte(io::map_file(pte_path), pte_path);
  const ir::Program program = ir::read_payload(pte.payload, pte.payload_name);
  std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(pte.payload.data), static_cast<std::streamsize>(pte.payload.size));
  if (!out.flush()) throw Error(ErrorCode::Io, out_path + ": write failed");
  std::printf("%s: %zu bytes of MLX payload (%u constants, %zu instructions in the main chain) from %s\n", out_path.c_str(),
              pte.payload.size, program.num_constant_tensors, program.chains[program.main_chain_idx].instructions.size(),
              pte_path.c_str());
  return 0;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// One line per instruction of the main chain as the WebGPU backend runs it (fused at load): its
// node or op, then each slot it reads (=tN, =vN) or writes (=>tN) with the field's name.
int list_instructions(const std::string& path) {
  ir::Program p = read_program(path);
  runtime::fuse_instructions(p);
  const auto& chain = p.chains[p.main_chain_idx].instructions;
  for (size_t i = 0; i < chain.size(); ++i) {
    std::string line = std::to_string(i) + " " + ir::instruction_name(chain[i]);
    ir::visit_slots(
        chain[i],
        [&](ir::Tid t, ir::FieldRole role, std::string_view field) {
          line += " " + std::string(field) + (role == ir::FieldRole::Write ? "=>t" : "=t") + std::to_string(t.idx);
        },
        [&](ir::Vid v, std::string_view field) { line += " " + std::string(field) + "=v" + std::to_string(v.idx); });
    std::printf("%s\n", line.c_str());
  }
  return 0;
}

int list_constants(const std::string& path) {
  const ir::Program program = read_program(path);
  const std::vector<llm::ConstantInfo> constants = llm::describe_constants(program);
  int width = 0;
  for (const llm::ConstantInfo& c : constants) width = std::max(width, static_cast<int>(c.name.size()));
  for (const llm::ConstantInfo& c : constants)
    std::printf("%-*s %-8s %-16s %12llu B%s%s  %s\n", width, c.name.c_str(), std::string(dtype_name(c.dtype)).c_str(),
                shape_text(c.shape).c_str(), static_cast<unsigned long long>(c.loaded_bytes),
                c.written_by_init ? " (init chain)" : "", c.gathered_only ? " (gathered)" : "", llm::fill_name(c.fill));
  const llm::ModelWork work = llm::model_work(program);
  std::printf("read per decode step: %llu B; matrix-product weight elements: %llu a token, %llu a call\n",
              static_cast<unsigned long long>(work.weight_bytes_per_step),
              static_cast<unsigned long long>(work.product_elements_per_token),
              static_cast<unsigned long long>(work.product_elements_per_call));
  return 0;
}

struct ConstantTotals {
  uint64_t count = 0, loaded_bytes = 0, streamed_bytes = 0, file_bytes = 0;
};

ConstantTotals totals_of(const std::vector<llm::ConstantInfo>& constants, const llm::ModelWork& work) {
  ConstantTotals t;
  for (const llm::ConstantInfo& c : constants) {
    ++t.count;
    t.file_bytes += c.bytes;
    t.loaded_bytes += c.loaded_bytes;
  }
  t.streamed_bytes = work.weight_bytes_per_step;
  return t;
}

// The constants file: --constants when it exists, else one written there or in the temp directory.
struct ConstantsFile {
  std::string path;
  bool temporary = false;
  double write_seconds = 0;
  ~ConstantsFile() {
    std::error_code ignored;
    if (temporary) std::filesystem::remove(path, ignored);
  }
  // How the printed results name it: committed results carry no machine paths, so a temporary file
  // shows as <tmp>/NAME and an absolute --constants path by its file name.
  std::string shown() const {
    const std::filesystem::path p(path);
    if (temporary) return "<tmp>/" + p.filename().string();
    return p.is_absolute() ? p.filename().string() : path;
  }
};

void prepare_constants(ConstantsFile& file, const Options& o, const std::vector<llm::ConstantInfo>& constants) {
  file.path = o.constants_path;
  if (!file.path.empty() && std::filesystem::exists(file.path)) {
    std::printf("constants: reusing %s\n", file.shown().c_str());
    return;
  }
  if (file.path.empty()) {
    file.path = (std::filesystem::temp_directory_path() /
                 ("llm_decode_" + std::to_string(std::chrono::system_clock::now().time_since_epoch().count()) + ".safetensors"))
                    .string();
    file.temporary = true;
  }
  const auto start = Clock::now();
  llm::write_random_constants(file.path, constants, o.seed, std::max(1u, std::thread::hardware_concurrency()));
  file.write_seconds = seconds_since(start);
  std::printf("constants: drawn into %s in %.1f s\n", file.shown().c_str(), file.write_seconds);
}

// The program's logits: its first float output whose last dim is static (an LLM payload's outputs
// also hold int64 copies of the per-layer cache positions).
size_t logits_output(const Session& session) {
  const std::vector<IoInfo>& in = session.inputs();
  if (in.size() != 2 || in[0].dtype != DType::Int64 || in[1].dtype != DType::Int64)
    throw Error(ErrorCode::InvalidArgument, "expected an LLM program: input 0 token ids, input 1 positions (int64)");
  const std::vector<IoInfo>& out = session.outputs();
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i].kind == "tensor" && is_floating(out[i].dtype) && !out[i].shape.empty() && out[i].shape.back() > 0) return i;
  throw Error(ErrorCode::InvalidArgument, "the program has no float output with a static last dim (logits)");
}

// One decode step as Generator::forward takes it: one token at `position`, the last logits row read.
std::vector<float> decode_step(Session& session, size_t logits_index, int64_t vocab, int64_t token, int64_t position) {
  Tensor ids(DType::Int64, {1, 1}), positions(DType::Int64, {1});
  ids.mutable_data_as<int64_t>()[0] = token;
  positions.mutable_data_as<int64_t>()[0] = position;
  const std::vector<Value> outputs = session.run({ids, positions});
  const Tensor& logits = std::get<Tensor>(outputs.at(logits_index));
  return to_floats(logits.flat_range(logits.numel() - vocab, vocab));
}

int64_t token_at(int64_t step, int64_t vocab) { return (step * 7919 + 13) % vocab; }

// Decode steps one token ahead, as greedy Generator::generate runs them: each step's token is
// picked on the device and fed to the next step, and is read only after that step's call.
class AheadDecoder {
 public:
  AheadDecoder(Session& session, size_t logits_index) : session_(session), logits_index_(logits_index) {}
  // One step at `position` from the token picked last (`first_token` at the start); returns once
  // the previous step's token has been read.
  void step(int64_t first_token, int64_t position) {
    Tensor ids = picked_;
    if (!ids.defined()) {
      ids = Tensor(DType::Int64, {1, 1});
      ids.mutable_data_as<int64_t>()[0] = first_token;
    }
    Tensor positions(DType::Int64, {1});
    positions.mutable_data_as<int64_t>()[0] = position;
    const std::vector<Value> outputs = session_.run({ids, positions});
    Tensor next = session_.greedy_token(std::get<Tensor>(outputs.at(logits_index_)));
    finish();
    picked_ = std::move(next);
  }
  // Reads the token picked last (waiting for its step).
  void finish() {
    if (picked_.defined()) picked_.data_as<int64_t>();
  }

 private:
  Session& session_;
  size_t logits_index_;
  Tensor picked_;
};

nlohmann::json stats_json(const RunStats& s, double per) {
  return {{"plans_made", s.plans_made / per},
          {"plan_keys_built", s.plan_keys_built / per},
          {"kernels_rendered", s.kernels_rendered / per},
          {"pipelines_compiled", s.pipelines_compiled / per},
          {"buffers_created", s.buffers_created / per},
          {"bind_groups_created", s.bind_groups_created / per},
          {"submits", s.submits / per},
          {"dispatches", s.dispatches / per},
          {"bytes_uploaded", s.bytes_uploaded / per},
          {"bytes_read", s.bytes_read / per}};
}

SessionOptions session_options(const Options& o, const std::string& constants_path, bool profile) {
  SessionOptions s;
  s.device = o.device;
  s.adapter = o.adapter;
  s.constants_path = constants_path;
  s.tunables = o.tunables;
  s.profile = profile;
  s.dispatches_per_submit = o.dispatches_per_submit;
  return s;
}

// The memory roofline beside the decode loop: a vec4 copy on the GPU, memcpy on the CPU (one thread).
struct Copy {
  std::string how;
  double gbps = 0;
};

std::unique_ptr<backend::webgpu::GpuContext> copy_context(const Options& o) {
  if (o.device != "webgpu") return nullptr;
  backend::webgpu::GpuOptions go;
  go.adapter = o.adapter;
  return std::make_unique<backend::webgpu::GpuContext>(go);
}

Copy measure_copy(const Options& o, backend::webgpu::GpuContext* gpu) {
  if (gpu) {
    const backend::webgpu::CopyKernel copy(*gpu, backend::webgpu::copy_bytes_within_limits(*gpu, o.copy_mib << 20));
    const double bps = backend::webgpu::copy_bandwidth(copy, *gpu, 10, 3, 0.5);
    return {"vec4 copy of " + std::to_string(copy.bytes() >> 20) + " MiB (read + write)", bps / 1e9};
  }
  std::vector<uint8_t> src(o.copy_mib << 20, 1), dst(o.copy_mib << 20);
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    const auto start = Clock::now();
    std::memcpy(dst.data(), src.data(), src.size());
    best = std::min(best, seconds_since(start));
  }
  return {"memcpy of " + std::to_string(o.copy_mib) + " MiB (read + write, one thread)", 2.0 * src.size() / best / 1e9};
}

// Keeps the GPU busy for a second so the timed steps start at its working clock.
void raise_clocks(backend::webgpu::GpuContext* gpu) {
  if (!gpu) return;
  const backend::webgpu::CopyKernel copy(*gpu, backend::webgpu::copy_bytes_within_limits(*gpu, uint64_t{64} << 20));
  backend::webgpu::keep_busy(copy, *gpu, 10, 1.0);
}

// The calling thread's CPU time: recording, planning and the driver's work on this thread, and any
// spinning while it waits for the GPU.
double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

nlohmann::json profile_step(const Options& o, const std::string& constants_path, int64_t position) {
  Session session(o.program, session_options(o, constants_path, true));
  const size_t logits = logits_output(session);
  const int64_t vocab = session.outputs()[logits].shape.back();
  // With --ahead each step is the timed steps' kind: the logits row stays on the GPU and the greedy
  // pick, which then runs every step, is in the profile.
  AheadDecoder ahead(session, logits);
  const auto one_step = [&](int k) {
    if (o.ahead) {
      ahead.step(token_at(k, vocab), position + k);
      ahead.finish();
    } else {
      decode_step(session, logits, vocab, token_at(k, vocab), position + k);
    }
  };
  for (int k = 0; k < 2; ++k) one_step(k);
  session.profile();
  one_step(2);
  const std::vector<OpProfile> ops = session.profile();
  const RunStats& stats = session.last_run_stats();
  std::printf("\nprofile of one step%s at position %lld (%s; %llu dispatches, %llu submits)\n%-36s %-7s %6s %10s  %s\n",
              o.ahead ? " and its greedy pick" : "", static_cast<long long>(position + 2), session.device_description().c_str(),
              static_cast<unsigned long long>(stats.dispatches), static_cast<unsigned long long>(stats.submits), "op", "device",
              "calls", "total ms", "note");
  nlohmann::json j = nlohmann::json::array();
  std::map<std::string, double> by_device;
  for (const OpProfile& p : ops) {
    std::printf("%-36s %-7s %6llu %10.3f  %s\n", p.op.c_str(), p.device.c_str(), static_cast<unsigned long long>(p.calls),
                p.total_ms, p.note.c_str());
    by_device[p.device] += p.total_ms;
    j.push_back({{"op", p.op}, {"device", p.device}, {"calls", p.calls}, {"total_ms", p.total_ms}, {"note", p.note}});
  }
  if (ops.empty()) std::printf("(no per-op times: the session records them on webgpu only)\n");
  for (const auto& [device, ms] : by_device) std::printf("  %s: %.3f ms\n", device.c_str(), ms);
  return {{"position", position + 2}, {"ops", j}, {"ms_by_device", by_device}};
}

// What the timed session did.
struct DecodeRun {
  std::string device;
  double load_seconds = 0;
  std::vector<double> warmup_ms, step_ms;
  std::vector<double> step_cpu_ms;  // the calling thread's CPU time per timed step
  RunStats warmup, timed;           // counters summed over the warm-up steps, over the timed steps
  int64_t first_position = 0, last_position = 0;
  Copy copy;
};

// Warm-up steps from position `past`, a second of copies, the timed steps, then the copy bandwidth.
DecodeRun run_decode(const Options& o, const std::string& constants_path) {
  DecodeRun run;
  const auto load_start = Clock::now();
  Session session(o.program, session_options(o, constants_path, false));
  run.load_seconds = seconds_since(load_start);
  run.device = session.device_description();
  const size_t logits = logits_output(session);
  const int64_t vocab = session.outputs()[logits].shape.back();
  std::printf("session: %s, loaded in %.1f s; logits: output %zu of %zu, vocab %lld\n", run.device.c_str(), run.load_seconds,
              logits, session.outputs().size(), static_cast<long long>(vocab));
  int64_t position = o.past, step = 0;
  std::vector<double> warmup_cpu_ms;
  AheadDecoder ahead(session, logits);
  const auto timed_steps = [&](int count, std::vector<double>& ms, std::vector<double>& cpu_ms) {
    const RunStats before = session.totals();
    for (int k = 0; k < count; ++k, ++step, ++position) {
      const auto start = Clock::now();
      const double cpu_start = thread_cpu_ms();
      if (o.ahead) {
        ahead.step(token_at(step, vocab), position);
        if (k + 1 == count) ahead.finish();
      } else {
        decode_step(session, logits, vocab, token_at(step, vocab), position);
      }
      cpu_ms.push_back(thread_cpu_ms() - cpu_start);
      ms.push_back(seconds_since(start) * 1e3);
    }
    return session.totals() - before;
  };
  run.warmup = timed_steps(o.warmup, run.warmup_ms, warmup_cpu_ms);
  const auto copy_gpu = copy_context(o);
  raise_clocks(copy_gpu.get());
  run.first_position = position;
  run.timed = timed_steps(o.steps, run.step_ms, run.step_cpu_ms);
  run.last_position = position - 1;
  run.copy = measure_copy(o, copy_gpu.get());
  return run;
}

struct Summary {
  double median_ms, mean_ms, min_ms, max_ms, weights_gbps, median_cpu_ms;
};

Summary summarise(const DecodeRun& run, const ConstantTotals& totals) {
  const std::vector<double>& ms = run.step_ms;
  Summary s{};
  s.median_ms = median(ms);
  s.median_cpu_ms = median(run.step_cpu_ms);
  s.mean_ms = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  s.min_ms = *std::min_element(ms.begin(), ms.end());
  s.max_ms = *std::max_element(ms.begin(), ms.end());
  s.weights_gbps = totals.streamed_bytes / (s.median_ms * 1e-3) / 1e9;
  return s;
}

void print_report(const Options& o, const ConstantTotals& totals, const DecodeRun& run, const Summary& s) {
  const double steps = o.steps;
  const RunStats& t = run.timed;
  std::printf("decode%s: past %lld, %d warm-up steps, %d timed steps at positions %lld..%lld\n",
              o.ahead ? " (greedy, one step ahead)" : "", static_cast<long long>(o.past), o.warmup, o.steps,
              static_cast<long long>(run.first_position), static_cast<long long>(run.last_position));
  std::printf("  ms per token: median %.3f, mean %.3f (min %.3f, max %.3f): %.1f tokens/s\n", s.median_ms, s.mean_ms, s.min_ms,
              s.max_ms, 1e3 / s.median_ms);
  std::printf("  calling thread's CPU time per token: median %.3f ms\n", s.median_cpu_ms);
  std::printf("  per token: %.1f dispatches, %.1f submits, %.0f B uploaded, %.0f B read\n", t.dispatches / steps,
              t.submits / steps, t.bytes_uploaded / steps, t.bytes_read / steps);
  const bool steady = t.pipelines_compiled == 0 && t.buffers_created == 0 && t.bind_groups_created == 0;
  std::printf(
      "  during the timed steps: %llu plans made, %llu plan keys built, %llu kernels rendered, %llu pipelines compiled, %llu "
      "buffers created, "
      "%llu bind groups created%s\n",
      static_cast<unsigned long long>(t.plans_made), static_cast<unsigned long long>(t.plan_keys_built),
      static_cast<unsigned long long>(t.kernels_rendered), static_cast<unsigned long long>(t.pipelines_compiled),
      static_cast<unsigned long long>(t.buffers_created), static_cast<unsigned long long>(t.bind_groups_created),
      steady ? "" : " (NOT STEADY: a decode step after warm-up should compile no pipeline, create no buffer or bind group)");
  std::printf("  weights: %.1f MB per token at the median: %.1f GB/s; copy %.1f GB/s (%s): %.1f%% of copy\n",
              totals.streamed_bytes / 1e6, s.weights_gbps, run.copy.gbps, run.copy.how.c_str(),
              100 * s.weights_gbps / run.copy.gbps);
}

nlohmann::json result_json(const Options& o, const ConstantTotals& totals, double write_seconds, const DecodeRun& run,
                           const Summary& s) {
  const RunStats& t = run.timed;
  return {{"program", std::filesystem::path(o.program).filename().string()},
          {"device", run.device},
          {"past", o.past},
          {"dispatches_per_submit", o.dispatches_per_submit},
          {"ahead", o.ahead},
          {"warmup_steps", o.warmup},
          {"steps", o.steps},
          {"positions", {run.first_position, run.last_position}},
          {"constants",
           {{"count", totals.count},
            {"loaded_bytes", totals.loaded_bytes},
            {"streamed_bytes_per_token", totals.streamed_bytes},
            {"file_bytes", totals.file_bytes},
            {"write_seconds", write_seconds}}},
          {"load_seconds", run.load_seconds},
          {"warmup_ms", run.warmup_ms},
          {"warmup_totals", stats_json(run.warmup, 1)},
          {"ms_per_token",
           {{"median", s.median_ms}, {"mean", s.mean_ms}, {"min", s.min_ms}, {"max", s.max_ms}, {"steps", run.step_ms}}},
          {"tokens_per_s", 1e3 / s.median_ms},
          {"thread_cpu_ms_per_token", {{"median", s.median_cpu_ms}, {"steps", run.step_cpu_ms}}},
          {"per_token", stats_json(t, o.steps)},
          {"after_warmup",
           {{"plans_made", t.plans_made},
            {"plan_keys_built", t.plan_keys_built},
            {"kernels_rendered", t.kernels_rendered},
            {"pipelines_compiled", t.pipelines_compiled},
            {"buffers_created", t.buffers_created},
            {"bind_groups_created", t.bind_groups_created}}},
          {"copy", {{"how", run.copy.how}, {"gbps", run.copy.gbps}}},
          {"weights_gbps", s.weights_gbps},
          {"ratio_to_copy", s.weights_gbps / run.copy.gbps}};
}

int bench_decode(const Options& o) {
  const ir::Program program = read_program(o.program);
  const std::vector<llm::ConstantInfo> constants = llm::describe_constants(program);
  const ConstantTotals totals = totals_of(constants, llm::model_work(program));
  std::printf("%s: %llu constants, %.1f MB as loaded, %.1f MB read per token (%.1f MB only gathered from)\n", o.program.c_str(),
              static_cast<unsigned long long>(totals.count), totals.loaded_bytes / 1e6, totals.streamed_bytes / 1e6,
              (totals.loaded_bytes - totals.streamed_bytes) / 1e6);
  ConstantsFile constants_file;
  prepare_constants(constants_file, o, constants);
  const DecodeRun run = run_decode(o, constants_file.path);
  const Summary summary = summarise(run, totals);
  print_report(o, totals, run, summary);
  nlohmann::json result = result_json(o, totals, constants_file.write_seconds, run, summary);
  if (o.profile) result["profile"] = profile_step(o, constants_file.path, o.past);
  if (!o.json_path.empty()) std::ofstream(o.json_path) << result.dump(2) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress shows as it happens, also into a file
  try {
    if (argc == 4 && std::string(argv[1]) == "--extract") return extract(argv[2], argv[3]);
    if (argc == 3 && std::string(argv[1]) == "--list") return list_constants(argv[2]);
    if (argc == 3 && std::string(argv[1]) == "--instructions") return list_instructions(argv[2]);
    if (argc < 2) {
      std::fputs(kUsage, stderr);
      return 2;
    }
    return bench_decode(parse(argc, argv));
  } catch (const Error& e) {
    std::fprintf(stderr, "llm_decode: %s\n%s", e.what(), e.code() == ErrorCode::InvalidArgument ? kUsage : "");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "llm_decode: %s\n", e.what());
    return 1;
  }
}
