#!/usr/bin/env bash
# Installs everything wgml builds and tests with, from Debian's packages and PyPI.
# Idempotent and quick when everything is present (it checks before it installs).
#
#   tools/setup.sh            # as root (CI and the dev machines run as root)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log() { echo "setup: $*" >&2; }

debian_packages=(
  cmake ninja-build g++ clang clang-format libclang-rt-14-dev ccache python3 python3-venv python3-dev
  flatbuffers-compiler libflatbuffers-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev googletest libprotobuf-dev protobuf-compiler
  pkg-config curl patch libre2-dev libpcre2-dev libcpp-httplib-dev
)

missing=()
for p in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Mesa lavapipe 25 (bookworm-backports): the Vulkan device GPU tests use where no GPU exists.
if ! dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null | grep -q '^25'; then
  log "installing Mesa lavapipe from bookworm-backports"
  "$repo/tools/webgpu/install_lavapipe.sh"
fi

# naga 30 (wgpu's WGSL front end, crates.io naga-cli): tests/spec validates every rendered kernel.
if ! command -v naga >/dev/null && command -v cargo >/dev/null; then
  log "installing naga-cli 30.0.1 with cargo"
  cargo install --locked --root /usr/local naga-cli@30.0.1
fi

# Python packages the tests and fixture checks use, in the project's own venv.
venv="$repo/.venv"
if [[ ! -x "$venv/bin/python" ]]; then
  log "creating $venv"
  python3 -m venv "$venv"
fi
# Reinstalls whenever requirements-test.txt changed since the last install.
requirements="$repo/tools/requirements-test.txt"
stamp="$venv/.requirements-test.txt"
if ! cmp -s "$requirements" "$stamp"; then
  log "installing Python test packages"
  "$venv/bin/pip" install -q -r "$requirements"
  cp "$requirements" "$stamp"
fi

# ONNX's own schema (onnx-ml.proto, proto2) from the onnx wheel pinned in requirements-test.txt:
# the ONNX frontend's protobuf parser is generated from it at build time, never committed.
onnx_proto="$repo/.cache/onnx/onnx-ml.proto"
onnx_wheel_proto="$("$venv/bin/python" -c 'import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), "onnx-ml.proto"))')"
if ! cmp -s "$onnx_wheel_proto" "$onnx_proto"; then
  log "copying onnx-ml.proto from the onnx wheel to $onnx_proto"
  mkdir -p "$(dirname "$onnx_proto")"
  cp "$onnx_wheel_proto" "$onnx_proto"
fi

# wgpu-native, the WebGPU implementation wgml opens at run time, from the PyPI wheel `wgpu` into
# .cache/webgpu (the build records its path there; nothing is fetched when it is already present).
"$repo/tools/webgpu/fetch_webgpu.sh" >/dev/null

# pytorch/tokenizers (ExecuTorch's tokenizer library), the PyPI sdist's C++ sources, into
# .cache/tokenizers: src/llm builds them against the Debian packages above.
"$repo/tools/llm/fetch_tokenizers.sh" >/dev/null
# SentencePiece, the PyPI sdist's C++ sources, into .cache/sentencepiece: src/llm builds them
# against the system protobuf (Debian's libsentencepiece carries a protobuf of its own).
"$repo/tools/llm/fetch_sentencepiece.sh" >/dev/null
# The official silero-vad ONNX models (PyPI silero-vad, pinned) into .cache/silero-vad: the
# CTests onnx_silero_vad* compare every shipped variant with onnxruntime.
"$repo/tools/onnx/fetch_silero_vad.sh" "$repo/.cache/silero-vad"
log "ready"
