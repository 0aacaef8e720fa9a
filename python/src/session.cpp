#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>

#include "api/op_support.h"
#include "api/open_session.h"
#include "bindings.h"
#include "gpu/device.h"
#include "gpu/gpu_error.h"

namespace wgml::python {
namespace {

using namespace nb::literals;

// Dims as Python sees them: None where a dimension is dynamic (or unbounded, in max_shape).
std::vector<std::optional<int64_t>> dims(const Shape& shape) {
  std::vector<std::optional<int64_t>> out;
  for (int64_t d : shape) out.push_back(d < 0 ? std::nullopt : std::optional(d));
  return out;
}

nb::list run(SessionHandle& handle, const nb::list& feeds) {
  std::vector<Value> inputs;
  for (nb::handle item : feeds) inputs.push_back(value_from_python(item));
  std::vector<Value> outputs = with_session(handle, [&](Session& session) {
    std::vector<Value> values = session.run(inputs);
    for (Value& v : values) materialize(v);
    return values;
  });
  nb::list out;
  for (Value& v : outputs) out.append(value_to_python(std::move(v)));
  return out;
}

// Every WebGPU adapter; none where the machine has no WebGPU library.
std::vector<gpu::AdapterDescription> adapters() {
  try {
    return gpu::list_adapters();
  } catch (const gpu::GpuError& e) {
    if (e.kind() == gpu::GpuErrorKind::LibraryNotFound) return {};
    throw;
  }
}

void bind_io_info(nb::module_& m) {
  nb::class_<IoInfo>(m, "IoInfo", "One program input or output as the model declares it.")
      .def_ro("name", &IoInfo::name)
      .def_ro("kind", &IoInfo::kind, "'tensor', or 'int', 'float', 'bool' for a value input")
      .def_prop_ro(
          "dtype", [](const IoInfo& info) { return std::string(dtype_name(info.dtype)); }, "wgml's dtype name ('bfloat16', ...)")
      .def_prop_ro(
          "shape", [](const IoInfo& info) { return dims(info.shape); }, "the dims, None where dynamic")
      .def_prop_ro(
          "max_shape", [](const IoInfo& info) { return dims(info.max_shape); }, "each dim's upper bound, None where unbounded")
      .def("__repr__", [](const IoInfo& info) {
        return nb::str("IoInfo(name={!r}, kind={!r}, dtype={!r}, shape={!r})")
            .format(info.name, info.kind, std::string(dtype_name(info.dtype)), dims(info.shape));
      });
}

void bind_run_stats(nb::module_& m) {
  nb::class_<RunStats>(m, "RunStats", "What one run did on the GPU besides computing (zero on the CPU).")
      .def_ro("plans_made", &RunStats::plans_made, "kernel plans made for requests not seen before")
      .def_ro("plan_keys_built", &RunStats::plan_keys_built,
              "plan-cache lookups by a key holding the whole request (a bound call needs none)")
      .def_ro("kernels_rendered", &RunStats::kernels_rendered, "WGSL rendered from templates")
      .def_ro("pipelines_compiled", &RunStats::pipelines_compiled)
      .def_ro("buffers_created", &RunStats::buffers_created, "GPU buffers created (not reused from the pool)")
      .def_ro("bind_groups_created", &RunStats::bind_groups_created, "GPU bind groups created (not found in the cache)")
      .def_ro("submits", &RunStats::submits, "queue submissions")
      .def_ro("dispatches", &RunStats::dispatches, "compute dispatches")
      .def_ro("bytes_uploaded", &RunStats::bytes_uploaded, "host to GPU")
      .def_ro("bytes_read", &RunStats::bytes_read, "GPU to host");
}

void bind_profile(nb::module_& m) {
  nb::class_<OpProfile>(m, "OpProfile", "Time spent on one op kind since the last Session.profile() call.")
      .def_ro("op", &OpProfile::op)
      .def_ro("device", &OpProfile::device, "'webgpu', 'cpu' (a fallback), 'host' or 'view'")
      .def_ro("calls", &OpProfile::calls)
      .def_ro("total_ms", &OpProfile::total_ms, "GPU time from timestamp queries; wall time on the CPU")
      .def_ro("note", &OpProfile::note, "for an op run on the CPU instead of the GPU: why")
      .def("__repr__", [](const OpProfile& p) {
        return nb::str("OpProfile(op={!r}, device={!r}, calls={}, total_ms={:.3f})").format(p.op, p.device, p.calls, p.total_ms);
      });
}

void bind_adapter(nb::module_& m) {
  nb::class_<gpu::AdapterDescription>(m, "Adapter", "A WebGPU adapter the implementation offers.")
      .def_ro("index", &gpu::AdapterDescription::index, "its position: Session(adapter=str(index)) picks it")
      .def_ro("name", &gpu::AdapterDescription::name)
      .def_ro("vendor", &gpu::AdapterDescription::vendor)
      .def_ro("driver", &gpu::AdapterDescription::driver)
      .def_ro("backend", &gpu::AdapterDescription::backend, "'Vulkan', 'Metal', ...")
      .def_prop_ro(
          "kind", [](const gpu::AdapterDescription& a) { return std::string(gpu::adapter_kind_name(a.kind)); },
          "discrete GPU, integrated GPU, CPU or other")
      .def_ro("usable", &gpu::AdapterDescription::real_device, "False for null or unknown backends, which wgml refuses")
      .def("__repr__", [](const gpu::AdapterDescription& a) { return "Adapter(" + a.summary() + ")"; });
}

}  // namespace

void bind_session(nb::module_& m) {
  bind_io_info(m);
  bind_run_stats(m);
  bind_profile(m);
  bind_adapter(m);
  nb::class_<SessionHandle>(m, "Session", "A loaded model (the wgml.Session wrapper's native half).")
      .def(
          "__init__",
          [](SessionHandle* self, const std::string& path, const std::string& device, const std::string& adapter,
             const std::vector<std::string>& tunables, const std::string& tunables_file, const std::string& constants,
             bool profile) {
            const SessionOptions options{.device = device,
                                         .constants_path = constants,
                                         .adapter = adapter,
                                         .tunables = tunables,
                                         .tunables_file = tunables_file,
                                         .profile = profile};
            nb::gil_scoped_release released;
            new (self) SessionHandle{api::open_session(path, options), {}};
          },
          "path"_a, "device"_a = "auto", "adapter"_a = "", "tunables"_a = std::vector<std::string>{}, "tunables_file"_a = "",
          "constants"_a = "", "profile"_a = false)
      .def_prop_ro("inputs", [](const SessionHandle& h) { return h.session.inputs(); })
      .def_prop_ro("outputs", [](const SessionHandle& h) { return h.session.outputs(); })
      .def_prop_ro("device", [](const SessionHandle& h) { return h.session.device_description(); })
      .def("run", &run, "feeds"_a,
           "Runs the program once on positional inputs: (dtype, shape, bytes) tuples or Python scalars. Returns the outputs: "
           "(dtype, array) tuples or scalars. Releases the GIL.")
      .def(
          "reset", [](SessionHandle& h) { with_session(h, [](Session& session) { session.reset(); }); },
          "Zeroes the mutable buffers (a KV cache), as after loading.")
      .def(
          "profile",
          [](SessionHandle& h, const std::string& trace_path) {
            return with_session(h, [&](Session& session) { return session.profile(trace_path); });
          },
          "trace_path"_a = "", "Per-op times since the last call, slowest first.")
      .def_prop_ro("last_run_stats",
                   [](SessionHandle& h) { return with_session(h, [](Session& session) { return session.last_run_stats(); }); });

  m.def("devices", &adapters, "Every WebGPU adapter on this machine; none without a WebGPU library.");
  m.def(
      "ops_json", [] { return api::op_support().dump(); }, "What `wgml ops --json` prints.");
}

}  // namespace wgml::python
