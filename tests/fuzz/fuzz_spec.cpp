// libFuzzer target: arbitrary bytes as a kernel spec file (JSON, a single spec or a family) up to
// the first NUL byte; the bytes after it choose a request. Each spec is parsed and checked with its
// templates (kernels/wgsl), as `wgml spec check` does, then planned and rendered for the request,
// as `wgml spec render` does. Any input must end in a plan or a wgml::Error.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "kernel/engine.h"
#include "wgml/error.h"

namespace {

// Reads request choices from the bytes after the JSON text; zeros once they run out.
class Choices {
 public:
  Choices(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t next() { return at_ < size_ ? data_[at_++] : 0; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

// Every input present, of its type variable's first allowed dtype (or its literal dtype), with a
// rank of 0-3 and dims of 1-4 taken from `choices`.
wgml::kernel::KernelRequest choose_request(const wgml::kernel::KernelSpec& spec, Choices& choices) {
  wgml::kernel::KernelRequest request;
  for (const wgml::kernel::TensorSpec& t : spec.inputs) {
    const auto constraint = spec.type_constraints.find(t.dtype);
    const auto dtype = constraint != spec.type_constraints.end() && !constraint->second.empty()
                           ? std::optional(constraint->second.front())
                           : wgml::dtype_from_name(t.dtype);
    wgml::Shape shape(choices.next() % 4);
    for (int64_t& d : shape) d = choices.next() % 4 + 1;
    request.inputs[t.name] = {dtype.value_or(wgml::DType::Float32), shape};
  }
  return request;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const size_t json_size = std::find(data, data + size, uint8_t{0}) - data;
  const std::string json(reinterpret_cast<const char*>(data), json_size);
  Choices choices(data + std::min(size, json_size + 1), size - std::min(size, json_size + 1));
  // One engine for every input: it keeps the templates it compiled, so an input costs its own
  // parsing and planning only (a spec added later replaces one of the same name).
  static wgml::kernel::Engine engine(WGML_KERNELS_DIR "/wgsl");
  try {
    for (wgml::kernel::KernelSpec& parsed : wgml::kernel::parse_specs(json, "fuzz.json")) {
      const auto spec = engine.add(std::move(parsed));
      wgml::kernel::DeviceCaps device;
      const uint8_t caps = choices.next();
      device.shader_f16 = caps & 1;
      device.subgroups = caps & 2;
      try {
        (void)engine.plan(*spec, choose_request(*spec, choices), device);
      } catch (const wgml::Error&) {  // a request the spec refuses: the next spec may take its own
      }
    }
  } catch (const wgml::Error&) {
  }
  return 0;
}
