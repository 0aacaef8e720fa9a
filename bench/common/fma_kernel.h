#pragma once
// The f32 FMA kernel the benchmark programs measure the compute ceiling with (gpu_micro reports it;
// kernel_bench runs it beside compute-bound ops): thread i starts four vec4 chains at 1e-7 i.
namespace wgml::bench {

// 4 independent vec4 chains, unrolled 4 times: 16 vec4 FMAs = 128 flop per thread per trip.
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

// Flop per thread per loop trip of kFmaWgsl.
inline constexpr double kFmaFlopPerTrip = 128.0;

}  // namespace wgml::bench
