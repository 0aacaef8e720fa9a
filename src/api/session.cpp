#include "wgml/session.h"

#include "backend/cpu/cpu_backend.h"
#include "frontend/summary.h"
#include "runtime/executor.h"

namespace wgml {
namespace {

std::vector<IoInfo> io_infos(const std::vector<frontend::IoSummary>& list) {
  std::vector<IoInfo> out;
  for (const auto& s : list) {
    IoInfo info{s.name, s.kind, dtype_from_name(s.dtype).value_or(DType::Float32), {}};
    for (const ir::Dim& d : s.shape) info.shape.push_back(d.is_static() ? d.value : -1);
    out.push_back(std::move(info));
  }
  return out;
}

std::unique_ptr<runtime::Backend> make_backend(const std::string& device) {
  if (device == "cpu") return std::make_unique<backend::cpu::CpuBackend>();
  throw Error(ErrorCode::Unsupported,
              "device \"" + device + "\": this build runs programs on \"cpu\" only");
}

}  // namespace

struct Session::Impl {
  std::unique_ptr<runtime::Backend> backend;
  std::unique_ptr<runtime::Executor> executor;
  std::vector<IoInfo> inputs, outputs;
};

Session::Session(const std::string& path, SessionOptions options) : impl_(std::make_unique<Impl>()) {
  auto model = std::make_shared<frontend::Model>(
      frontend::load_model(path, frontend::LoadOptions{options.constants_path}));
  const frontend::ModelSummary summary = frontend::summarize(*model);
  impl_->inputs = io_infos(summary.inputs);
  impl_->outputs = io_infos(summary.outputs);
  impl_->backend = make_backend(options.device);
  impl_->executor = std::make_unique<runtime::Executor>(std::move(model), *impl_->backend);
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

const std::vector<IoInfo>& Session::inputs() const { return impl_->inputs; }
const std::vector<IoInfo>& Session::outputs() const { return impl_->outputs; }

std::vector<Value> Session::run(const std::vector<Value>& inputs) {
  return impl_->executor->run(inputs);
}

}  // namespace wgml
