// Convolutions with MLX's layout: input [N, *spatial, C_in], weight [C_out, *kernel, C_in/groups],
// output [N, *spatial_out, C_out]. 1-D and 2-D run as 3-D with unit leading spatial dims.
// Convolution is cross-correlation (no kernel flip); the transposed form scatters each input
// element through the kernel: out[i*stride - pad + k*dilation] += x[i] * w[k]. Accumulates in
// double, rounds once to the output dtype.
#include <array>
#include <vector>

#include "backend/cpu/broadcast.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/working_memory.h"
#include "core/elements.h"

namespace wgml::backend::cpu {
namespace {

using runtime::ExecContext;
using runtime::fail;

constexpr int kDims = 3;
using Triple = std::array<int64_t, kDims>;

struct ConvParams {
  Triple stride{1, 1, 1}, padding{0, 0, 0}, dilation{1, 1, 1}, output_padding{0, 0, 0};
  int64_t groups = 1;
  bool transposed = false;
};

// Geometry of one convolution, spatial dims padded to three.
struct ConvShape {
  int64_t batch = 0, cin = 0, cout = 0;
  Triple in{1, 1, 1}, kernel{1, 1, 1}, out{1, 1, 1};
};

std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = load_as_double(t.dtype(), t.data(), i);
  return v;
}

// One spatial extent of the output, computed in 128 bits (int32 attributes times extents up to
// 2^40 can pass int64): past 2^40 it is no tensor's dimension.
int64_t output_extent(__int128 extent) {
  if (extent < 0 || extent > (__int128{1} << 40))
    fail("convolution: the kernel is larger than the padded input, or the output extent is past 2^40");
  return static_cast<int64_t>(extent);
}

ConvShape conv_shape(const Tensor& x, const Tensor& w, int nd, const ConvParams& p) {
  if (x.rank() != nd + 2 || w.rank() != nd + 2)
    fail("convolution: expected input and weight of rank " + std::to_string(nd + 2) + " (channels last), found " +
         std::to_string(x.rank()) + " and " + std::to_string(w.rank()));
  if (p.groups < 1) fail("convolution: groups must be >= 1");
  if (nd == 3 && p.groups != 1) fail("convolution: MLX handles groups != 1 in 1D or 2D only");
  ConvShape s;
  s.batch = x.dim(0);
  s.cin = x.dim(nd + 1);
  s.cout = w.dim(0);
  if (w.dim(nd + 1) * p.groups != s.cin || s.cout % p.groups != 0)
    fail("convolution: weight has " + std::to_string(w.dim(nd + 1)) + " input channels for " + std::to_string(s.cin) +
         " channels in " + std::to_string(p.groups) + " groups");
  for (int d = 0; d < nd; ++d) {
    const int k = kDims - nd + d;
    if (p.stride[k] < 1 || p.dilation[k] < 1 || p.output_padding[k] < 0)
      fail("convolution: strides and dilations must be >= 1 and output padding >= 0");
    s.in[k] = x.dim(d + 1);
    s.kernel[k] = w.dim(d + 1);
    const __int128 span = __int128{p.dilation[k]} * (s.kernel[k] - 1), in = s.in[k], padding = p.padding[k];
    if (p.transposed) {
      s.out[k] = output_extent((in - 1) * p.stride[k] - 2 * padding + span + p.output_padding[k] + 1);
    } else {
      const __int128 reach = in + 2 * padding - span - 1;
      s.out[k] = output_extent(reach < 0 ? reach : reach / p.stride[k] + 1);
    }
  }
  return s;
}

// Calls f(output position, input position, kernel position) for every pair that contributes.
template <class F>
void for_each_tap(const ConvShape& s, const ConvParams& p, F f) {
  Triple o, i, k;
  const Triple& outer = p.transposed ? s.in : s.out;
  for (o[0] = 0; o[0] < outer[0]; ++o[0])
    for (o[1] = 0; o[1] < outer[1]; ++o[1])
      for (o[2] = 0; o[2] < outer[2]; ++o[2])
        for (k[0] = 0; k[0] < s.kernel[0]; ++k[0])
          for (k[1] = 0; k[1] < s.kernel[1]; ++k[1])
            for (k[2] = 0; k[2] < s.kernel[2]; ++k[2]) {
              bool inside = true;
              for (int d = 0; d < kDims; ++d) {
                // Forward: input = out*stride - pad + k*dil. Transposed: out = in*stride - pad + k*dil.
                i[d] = o[d] * p.stride[d] - p.padding[d] + k[d] * p.dilation[d];
                const int64_t limit = p.transposed ? s.out[d] : s.in[d];
                inside = inside && i[d] >= 0 && i[d] < limit;
              }
              if (inside) p.transposed ? f(i, o, k) : f(o, i, k);
            }
}

int64_t flat(const Triple& pos, const Triple& dims) { return (pos[0] * dims[1] + pos[1]) * dims[2] + pos[2]; }

Tensor convolve(const Tensor& x, const Tensor& w, int nd, const ConvParams& p) {
  const ConvShape s = conv_shape(x, w, nd, p);
  // Refuses an output past the memory limit (or 2^40 elements) before any product of its extents.
  WorkingDoubles working = working_doubles({s.batch, s.out[0], s.out[1], s.out[2], s.cout});
  std::vector<double>& acc = working.values;
  const std::vector<double> xv = to_doubles(x), wv = to_doubles(w);
  const int64_t cin_g = s.cin / p.groups, cout_g = s.cout / p.groups;
  const int64_t out_spatial = s.out[0] * s.out[1] * s.out[2];
  const int64_t in_spatial = s.in[0] * s.in[1] * s.in[2];
  for (int64_t n = 0; n < s.batch; ++n)
    for_each_tap(s, p, [&](const Triple& o, const Triple& i, const Triple& k) {
      const double* xin = xv.data() + (n * in_spatial + flat(i, s.in)) * s.cin;
      double* y = acc.data() + (n * out_spatial + flat(o, s.out)) * s.cout;
      const int64_t kpos = flat(k, s.kernel);
      for (int64_t co = 0; co < s.cout; ++co) {
        const int64_t g = co / cout_g;
        const double* wk = wv.data() + (co * s.kernel[0] * s.kernel[1] * s.kernel[2] + kpos) * cin_g;
        for (int64_t c = 0; c < cin_g; ++c) y[co] += xin[g * cin_g + c] * wk[c];
      }
    });
  Shape shape{s.batch};
  for (int d = kDims - nd; d < kDims; ++d) shape.push_back(s.out[d]);
  shape.push_back(s.cout);
  const DType t = promote_types(x.dtype(), w.dtype());
  Tensor out(t, shape);
  uint8_t* dst = out.mutable_data();
  for (int64_t j = 0; j < out.numel(); ++j) store_double(t, dst, j, acc[j]);
  return out;
}

// Fills the last nd entries of a Triple.
Triple spatial(std::initializer_list<int32_t> values, int64_t fill) {
  Triple t{fill, fill, fill};
  int d = kDims - static_cast<int>(values.size());
  for (int32_t v : values) t[d++] = v;
  return t;
}

void conv1d(const ir::Conv1DNode& n, ExecContext& ctx) {
  ConvParams p{spatial({n.stride}, 1), spatial({n.padding}, 0), spatial({n.dilation}, 1), {}, n.groups};
  ctx.set_tensor(n.out, convolve(ctx.tensor(n.x), ctx.tensor(n.w), 1, p));
}

void conv2d(const ir::Conv2DNode& n, ExecContext& ctx) {
  ConvParams p{spatial({n.stride_h, n.stride_w}, 1),
               spatial({n.padding_h, n.padding_w}, 0),
               spatial({n.dilation_h, n.dilation_w}, 1),
               {},
               n.groups};
  ctx.set_tensor(n.out, convolve(ctx.tensor(n.x), ctx.tensor(n.w), 2, p));
}

void conv3d(const ir::Conv3DNode& n, ExecContext& ctx) {
  ConvParams p{spatial({n.stride_d, n.stride_h, n.stride_w}, 1),
               spatial({n.padding_d, n.padding_h, n.padding_w}, 0),
               spatial({n.dilation_d, n.dilation_h, n.dilation_w}, 1),
               {},
               n.groups};
  ctx.set_tensor(n.out, convolve(ctx.tensor(n.x), ctx.tensor(n.w), 3, p));
}

void conv_transpose1d(const ir::ConvTranspose1DNode& n, ExecContext& ctx) {
  ConvParams p{
      spatial({n.stride}, 1), spatial({n.padding}, 0), spatial({n.dilation}, 1), spatial({n.output_padding}, 0), n.groups, true};
  ctx.set_tensor(n.out, convolve(ctx.tensor(n.x), ctx.tensor(n.w), 1, p));
}

void conv_transpose2d(const ir::ConvTranspose2DNode& n, ExecContext& ctx) {
  ConvParams p{spatial({n.stride_h, n.stride_w}, 1),
               spatial({n.padding_h, n.padding_w}, 0),
               spatial({n.dilation_h, n.dilation_w}, 1),
               spatial({n.output_padding_h, n.output_padding_w}, 0),
               n.groups,
               true};
  ctx.set_tensor(n.out, convolve(ctx.tensor(n.x), ctx.tensor(n.w), 2, p));
}

void conv_transpose3d(const ir::ConvTranspose3DNode& n, ExecContext& ctx) {
  ConvParams p{spatial({n.stride_d, n.stride_h, n.stride_w}, 1),
               spatial({n.padding_d, n.padding_h, n.padding_w}, 0),
               spatial({n.dilation_d, n.dilation_h, n.dilation_w}, 1),
               spatial({n.output_padding_d, n.output_padding_h, n.output_padding_w}, 0),
               n.groups,
               true};
  ctx.set_tensor(n.out, convolve(ctx.tensor(n.x), ctx.tensor(n.w), 3, p));
}

}  // namespace

void register_conv_ops(runtime::KernelTable& t) {
  t.add<ir::Conv1DNode, conv1d>();
  t.add<ir::Conv2DNode, conv2d>();
  t.add<ir::Conv3DNode, conv3d>();
  t.add<ir::ConvTranspose1DNode, conv_transpose1d>();
  t.add<ir::ConvTranspose2DNode, conv_transpose2d>();
  t.add<ir::ConvTranspose3DNode, conv_transpose3d>();
}

}  // namespace wgml::backend::cpu
