#!/usr/bin/env bash
# Fetch the two candidate WebGPU implementations from their package registries.
#
#   tools/webgpu/fetch_webgpu.sh [CACHE_DIR]      (default: <repo>/.cache/webgpu)
#
# Dawn:        npm package bun-webgpu-linux-x64 (libwebgpu_wrapper.so, C API exported, no header)
# wgpu-native: PyPI package wgpu (wheel carries libwgpu_native-*.so plus webgpu.h / wgpu.h)
#
# Idempotent: a package already unpacked in the cache is not fetched again.
# Prints the library (and header) paths as KEY=VALUE lines on stdout.
set -euo pipefail

DAWN_NPM_PKG="bun-webgpu-linux-x64"
DAWN_NPM_VERSION="${WGML_DAWN_NPM_VERSION:-0.1.7}"
WGPU_PY_VERSION="${WGML_WGPU_PY_VERSION:-0.32.0}"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache="${1:-$repo_root/.cache/webgpu}"
mkdir -p "$cache"
cache="$(cd "$cache" && pwd)"

log() { echo "fetch_webgpu: $*" >&2; }

# ---- Dawn (npm) -------------------------------------------------------------
dawn_dir="$cache/dawn-$DAWN_NPM_VERSION"
if [[ ! -f "$dawn_dir/.done" ]]; then
  command -v npm >/dev/null || { log "npm not found"; exit 1; }
  log "fetching $DAWN_NPM_PKG@$DAWN_NPM_VERSION from npm"
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent "$DAWN_NPM_PKG@$DAWN_NPM_VERSION" >/dev/null)
  rm -rf "$dawn_dir" && mkdir -p "$dawn_dir"
  tar -xzf "$tmp"/*.tgz -C "$dawn_dir"
  rm -rf "$tmp"
  touch "$dawn_dir/.done"
fi
dawn_lib="$(find "$dawn_dir" -name 'libwebgpu_wrapper.so' -print -quit)"
[[ -n "$dawn_lib" ]] || { log "libwebgpu_wrapper.so not found in $dawn_dir"; exit 1; }

# ---- wgpu-native (PyPI wheel) ----------------------------------------------
wgpu_dir="$cache/wgpu-native-py$WGPU_PY_VERSION"
if [[ ! -f "$wgpu_dir/.done" ]]; then
  log "fetching wgpu==$WGPU_PY_VERSION (wheel) from PyPI"
  tmp="$(mktemp -d)"
  python3 -m pip download --quiet --no-deps --only-binary=:all: \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --python-version 3.12 \
    -d "$tmp" "wgpu==$WGPU_PY_VERSION"
  rm -rf "$wgpu_dir" && mkdir -p "$wgpu_dir"
  python3 - "$tmp" "$wgpu_dir" <<'PY'
import glob, sys, zipfile
whl = glob.glob(sys.argv[1] + "/*.whl")[0]
zipfile.ZipFile(whl).extractall(sys.argv[2])
PY
  rm -rf "$tmp"
  touch "$wgpu_dir/.done"
fi
wgpu_lib="$(find "$wgpu_dir" -name 'libwgpu_native*.so' -print -quit)"
wgpu_hdr="$(dirname "$(find "$wgpu_dir" -name 'webgpu.h' -print -quit)")"
[[ -n "$wgpu_lib" ]] || { log "libwgpu_native*.so not found in $wgpu_dir"; exit 1; }

echo "DAWN_LIBRARY=$dawn_lib"
echo "WGPU_NATIVE_LIBRARY=$wgpu_lib"
echo "WGPU_NATIVE_INCLUDE=$wgpu_hdr"
