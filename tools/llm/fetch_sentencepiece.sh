#!/usr/bin/env bash
# Fetch the C++ sources of SentencePiece from its package registry (the PyPI sdist `sentencepiece`,
# which carries them under sentencepiece/), for src/llm to build against the system protobuf.
#
#   tools/llm/fetch_sentencepiece.sh [CACHE_DIR]      (default: <repo>/.cache/sentencepiece)
#
# Why not Debian's libsentencepiece: it carries its own protobuf-lite 3.14, and a process that also
# links the system protobuf (the ONNX frontend's) then aborts or fails to read any model
# (docs/llm.md, "Tokenizers"). Only the encoder's sources, the .proto files, the bundled absl and
# darts-clone headers and the licence are unpacked; its bundled protobuf-lite is not.
# Idempotent: a version already unpacked is not fetched again. Prints the source directory as a
# KEY=VALUE line on stdout.
set -euo pipefail

VERSION="${WGML_SENTENCEPIECE_VERSION:-0.2.1}"
# The sdist's sha256 (PyPI lists it beside the file). Set both variables to fetch another version.
SHA256="${WGML_SENTENCEPIECE_SHA256:-8138cec27c2f2282f4a34d9a016e3374cd40e5c6e9cb335063db66a0a3b71fad}"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache="${1:-$repo_root/.cache/sentencepiece}"
mkdir -p "$cache"
cache="$(cd "$cache" && pwd)"
log() { echo "fetch_sentencepiece: $*" >&2; }

name="sentencepiece-$VERSION"
dir="$cache/$name"
if [[ "$(cat "$dir/.done" 2>/dev/null)" != "$SHA256" ]]; then
  python="$repo_root/.venv/bin/python"
  [[ -x "$python" ]] || python=python3
  log "fetching the $name sdist from PyPI"
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  "$python" -m pip download --quiet --no-binary :all: --no-deps --dest "$tmp" "sentencepiece==$VERSION"
  got="$(sha256sum "$tmp/$name.tar.gz" | cut -d' ' -f1)"
  if [[ "$got" != "$SHA256" ]]; then
    log "$name.tar.gz has sha256 $got, expected $SHA256"
    exit 1
  fi
  rm -rf "$dir"
  # --touch: a re-fetch makes the build recompile every file.
  tar --touch --no-same-owner -xzf "$tmp/$name.tar.gz" -C "$cache" --exclude='*_test.cc' \
    "$name/sentencepiece/LICENSE" "$name/sentencepiece/VERSION.txt" "$name/sentencepiece/config.h.in" "$name/sentencepiece/src" \
    "$name/sentencepiece/third_party/absl" "$name/sentencepiece/third_party/darts_clone"
  rm -rf "$dir/sentencepiece/src/builtin_pb"
  echo "$SHA256" >"$dir/.done"
fi
echo "SENTENCEPIECE_DIR=$dir/sentencepiece"
