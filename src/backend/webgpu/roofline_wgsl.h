#pragma once
// The two roofline kernels' WGSL, on its own (no includes) so that programs outside wgml's device
// layer measure with the same kernels: backend/webgpu/roofline.h runs them through the layer,
// bench/gpu_micro/raw/gpu_micro_raw.cpp through each WebGPU implementation's C API.

namespace wgml::backend::webgpu {

// The copy: thread i copies vec4 i (a 2-D grid folded into one index).
inline constexpr const char* kCopyWgsl = R"(@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let i = id.x + id.y * n.x * 256u;
  if (i < arrayLength(&dst)) { dst[i] = src[i]; }
})";

// The FMA kernel: thread i starts four vec4 chains at 1e-7 i (4 independent chains, unrolled 4
// times: 16 vec4 FMAs = 128 flop per thread per loop trip); params.iters trips.
inline constexpr const char* kFmaWgsl = R"(
struct Params { iters : u32 }
@group(0) @binding(0) var<storage, read_write> out : array<vec4<f32>>;
@group(0) @binding(1) var<uniform> params : Params;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid : vec3<u32>) {
  let s = f32(gid.x) * 1.0e-7;
  var a = vec4<f32>(s, s + 1.0, s + 2.0, s + 3.0);
  var b = a + vec4<f32>(0.5);
  var c = a + vec4<f32>(0.25);
  var d = a + vec4<f32>(0.125);
  let m = vec4<f32>(0.9999, 0.9998, 0.9997, 0.9996);
  let k = vec4<f32>(1.0e-4, 2.0e-4, 3.0e-4, 4.0e-4);
  for (var i = 0u; i < params.iters; i = i + 1u) {
    a = fma(a, m, k); b = fma(b, m, k); c = fma(c, m, k); d = fma(d, m, k);
    a = fma(a, m, k); b = fma(b, m, k); c = fma(c, m, k); d = fma(d, m, k);
    a = fma(a, m, k); b = fma(b, m, k); c = fma(c, m, k); d = fma(d, m, k);
    a = fma(a, m, k); b = fma(b, m, k); c = fma(c, m, k); d = fma(d, m, k);
  }
  out[gid.x] = a + b + c + d;
}
)";

}  // namespace wgml::backend::webgpu
