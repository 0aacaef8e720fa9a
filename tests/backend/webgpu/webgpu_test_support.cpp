#include "webgpu_test_support.h"

#include <cmath>

#include "core/elements.h"
#include "gpu/gpu_error.h"
#include "wgml/error.h"

namespace wgml::backend::webgpu::testing {
namespace {

struct Shared {
  std::unique_ptr<WebGpuBackend> backend;
  std::string skip_reason;
};

Shared& shared() {
  static Shared s = [] {
    Shared made;
    try {
      GpuOptions options;
      options.small_values_on_host = false;  // the cases' small inputs must run the kernels under test
      made.backend = std::make_unique<WebGpuBackend>(options);
    } catch (const gpu::GpuError& e) {
      if (e.kind() != gpu::GpuErrorKind::LibraryNotFound && e.kind() != gpu::GpuErrorKind::NoAdapter) throw;
      made.skip_reason = std::string("no WebGPU device: ") + e.what();
    }
    return made;
  }();
  return s;
}

}  // namespace

WebGpuBackend* shared_backend() { return shared().backend.get(); }
const std::string& skip_reason() { return shared().skip_reason; }

Tensor random_tensor(DType dtype, const Shape& shape, std::mt19937& rng) {
  Tensor t(dtype, shape);
  uint8_t* data = t.mutable_data();
  std::uniform_real_distribution<double> real(-4.0, 4.0);
  std::uniform_int_distribution<int64_t> small(-100, 100);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (is_floating(dtype))
      store_double(dtype, data, i, real(rng));
    else if (dtype == DType::Bool)
      store_int64(dtype, data, i, small(rng) & 1);
    else if (is_signed_integral(dtype))
      store_int64(dtype, data, i, small(rng));
    else
      store_int64(dtype, data, i, small(rng) + 100);
  }
  return t;
}

std::string testing_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no wgml::Error was thrown";
  return "";
}

void expect_same_tensor(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(dtype_name(got.dtype()), dtype_name(want.dtype())) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  int reported = 0;
  for (int64_t i = 0; i < got.numel() && reported < 4; ++i) {
    const double g = load_as_double(got.dtype(), got.data(), i), w = load_as_double(want.dtype(), want.data(), i);
    if (g == w || (std::isnan(g) && std::isnan(w))) continue;
    ++reported;
    ADD_FAILURE() << what << ": element " << i << ": got " << g << ", expected " << w;
  }
}

}  // namespace wgml::backend::webgpu::testing
