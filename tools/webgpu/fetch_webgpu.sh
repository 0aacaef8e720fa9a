#!/usr/bin/env bash
# Fetch wgpu-native, the WebGPU implementation wgml loads, from its package registry (PyPI).
#
#   tools/webgpu/fetch_webgpu.sh [--dawn] [CACHE_DIR]      (default: <repo>/.cache/webgpu)
#
# wgpu-native: PyPI package wgpu; its wheel carries libwgpu_native-release.so and the webgpu.h /
#              wgpu.h it implements, which src/gpu compiles against. The configure step of the
#              build finds both there.
# --dawn:      also Dawn, npm package bun-webgpu-linux-x64 (libwebgpu_wrapper.so, no header), for
#              bench/gpu_micro/raw, which compares the two implementations. Needs npm.
#
# Idempotent: a package already unpacked in the cache is not fetched again. pip comes from the
# project's venv (.venv, made by tools/setup.sh) when there is one, else from python3.
# Prints the paths as KEY=VALUE lines on stdout.
set -euo pipefail

WGPU_PY_VERSION="${WGML_WGPU_PY_VERSION:-0.32.0}"
# sha256 of wgpu-0.32.0-py3-none-manylinux_2_28_x86_64.whl (checked when the default version is
# fetched; set WGML_WGPU_PY_SHA256 with WGML_WGPU_PY_VERSION to fetch another).
WGPU_PY_SHA256="${WGML_WGPU_PY_SHA256:-6499a31b5a29a10b4f1089fea4a0806411f42605fa86b6c0b543a07ca0de8568}"
DAWN_NPM_PKG="bun-webgpu-linux-x64"
DAWN_NPM_VERSION="${WGML_DAWN_NPM_VERSION:-0.1.7}"

with_dawn=0
if [[ "${1:-}" == "--dawn" ]]; then with_dawn=1; shift; fi
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache="${1:-$repo_root/.cache/webgpu}"
mkdir -p "$cache"
cache="$(cd "$cache" && pwd)"
python="$repo_root/.venv/bin/python"
[[ -x "$python" ]] || python=python3

log() { echo "fetch_webgpu: $*" >&2; }

# ---- wgpu-native (PyPI wheel) ----------------------------------------------
wgpu_dir="$cache/wgpu-native-py$WGPU_PY_VERSION"
if [[ ! -f "$wgpu_dir/.done" ]]; then
  log "fetching wgpu==$WGPU_PY_VERSION (wheel) from PyPI"
  tmp="$(mktemp -d)"
  "$python" -m pip download --quiet --no-deps --only-binary=:all: \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --python-version 3.12 \
    -d "$tmp" "wgpu==$WGPU_PY_VERSION"
  got="$(sha256sum "$tmp"/*.whl | cut -d' ' -f1)"
  if [[ "$got" != "$WGPU_PY_SHA256" ]]; then
    log "wheel $(basename "$tmp"/*.whl) has sha256 $got, expected $WGPU_PY_SHA256"
    rm -rf "$tmp"
    exit 1
  fi
  rm -rf "$wgpu_dir" && mkdir -p "$wgpu_dir"
  "$python" - "$tmp" "$wgpu_dir" <<'PY'
import glob, sys, zipfile
whl = glob.glob(sys.argv[1] + "/*.whl")[0]
zipfile.ZipFile(whl).extractall(sys.argv[2])
PY
  rm -rf "$tmp"
  touch "$wgpu_dir/.done"
fi
wgpu_lib="$(find "$wgpu_dir" -name 'libwgpu_native*.so' -print -quit)"
[[ -n "$wgpu_lib" ]] || { log "libwgpu_native*.so not found in $wgpu_dir"; exit 1; }
wgpu_hdr="$(dirname "$(find "$wgpu_dir" -name 'webgpu.h' -print -quit)")"
echo "WGPU_NATIVE_LIBRARY=$wgpu_lib"
echo "WGPU_NATIVE_INCLUDE=$wgpu_hdr"

# ---- Dawn (npm), only for the implementation comparison ---------------------
if ((with_dawn)); then
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
  echo "DAWN_LIBRARY=$dawn_lib"
fi
