#!/usr/bin/env bash
# Sets up, builds, then inspects and runs a real ExecuTorch MLX-delegate export (an RMSNorm + RoPE +
# causal GQA attention block) on the bundled example inputs, writing the outputs as .npy. It runs on
# the best WebGPU adapter (lavapipe where there is no GPU) and prints where each op ran.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$repo/tools/setup.sh"
"$repo/tools/build.sh" release
example="$repo/tests/fixtures/pte/attention_block"
wgml="$repo/build/tools/cli/wgml"
"$wgml" inspect "$example/model.pte"
mkdir -p "$repo/build/example-out"
"$wgml" run "$example/model.pte" --input "x=$example/step0_input_0.npy" \
  --input "input_pos=$example/step0_input_1.npy" --output-dir "$repo/build/example-out" --profile
