#!/usr/bin/env bash
# Fetches onnxruntime-node (onnxruntime's Node.js binding, whose Linux x64 library has the WebGPU
# execution provider built in: Dawn over Vulkan, lavapipe where there is no GPU) into
# OUT/node_modules, once: `npm pack` of pinned versions, no install scripts run (onnxruntime-node's
# would download CUDA providers from NuGet). Only the Linux x64 binaries are kept.
#   tools/onnx/fetch_onnxruntime_node.sh OUT
set -euo pipefail
out=${1:?usage: fetch_onnxruntime_node.sh OUT}
[[ -f "$out/.complete" ]] && exit 0
rm -rf "$out"
mkdir -p "$out/node_modules"
for package in onnxruntime-common@1.30.0 onnxruntime-node@1.30.0; do
  dir="$out/node_modules/${package%@*}"
  mkdir -p "$dir"
  tarball=$(cd "$out" && npm pack --silent "$package")
  tar -xzf "$out/$tarball" -C "$dir" --strip-components=1
  rm "$out/$tarball"
done
find "$out/node_modules/onnxruntime-node/bin/napi-v6" -mindepth 2 -maxdepth 2 -type d ! -path '*/linux/x64' -exec rm -rf {} +
touch "$out/.complete"
