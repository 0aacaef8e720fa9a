#!/usr/bin/env bash
# Fetch the C++ sources of pytorch/tokenizers, the tokenizer library ExecuTorch's LLM runner uses,
# from its package registry (PyPI sdist `pytorch_tokenizers`).
#
#   tools/llm/fetch_tokenizers.sh [CACHE_DIR]      (default: <repo>/.cache/tokenizers)
#
# Only the parts the build compiles are unpacked: include/, src/, the bundled llama.cpp-unicode and
# the licence. Its other bundled libraries (abseil, re2, pcre2, sentencepiece, nlohmann json) come
# from Debian's packages instead (tools/setup.sh installs them; see docs/dependencies.md).
# tools/llm/pytorch_tokenizers-<version>.patch, when there is one, is applied to the unpacked
# sources: fixes of bugs that change token ids (docs/llm.md, "Tokenizers").
# Idempotent: a version already unpacked (with the same patch) is not fetched again. Prints the
# source directory as a KEY=VALUE line on stdout.
set -euo pipefail

VERSION="${WGML_PYTORCH_TOKENIZERS_VERSION:-1.0.1}"
# The sdist's address and sha256 (from PyPI's JSON API for this version). Set all three
# variables to fetch another version.
URL="${WGML_PYTORCH_TOKENIZERS_URL:-https://files.pythonhosted.org/packages/0c/a7/d07ebde1011d704e4ab5c8fcb46fc71cb72fdf2c393f85202f7dfb8fd669/pytorch_tokenizers-1.0.1.tar.gz}"
SHA256="${WGML_PYTORCH_TOKENIZERS_SHA256:-19938c0efd5348fb0589610094c1c6bf6e055b20889f6250068d2b552a0b137b}"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache="${1:-$repo_root/.cache/tokenizers}"
mkdir -p "$cache"
cache="$(cd "$cache" && pwd)"
log() { echo "fetch_tokenizers: $*" >&2; }

name="pytorch_tokenizers-$VERSION"
dir="$cache/$name"
patch_file="$repo_root/tools/llm/$name.patch"
stamp="$SHA256"
[[ -f "$patch_file" ]] && stamp+=" $(sha256sum "$patch_file" | cut -d' ' -f1)"
if [[ "$(cat "$dir/.done" 2>/dev/null)" != "$stamp" ]]; then
  log "fetching $name.tar.gz from PyPI"
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  curl --fail --silent --show-error --location --retry 3 -o "$tmp/$name.tar.gz" "$URL"
  got="$(sha256sum "$tmp/$name.tar.gz" | cut -d' ' -f1)"
  if [[ "$got" != "$SHA256" ]]; then
    log "$name.tar.gz has sha256 $got, expected $SHA256"
    exit 1
  fi
  rm -rf "$dir"
  # --touch: a re-fetch (a changed patch) makes the build recompile every file.
  tar --touch --no-same-owner -xzf "$tmp/$name.tar.gz" -C "$cache" \
    "$name/LICENSE" "$name/include" "$name/src" "$name/third-party/llama.cpp-unicode"
  if [[ -f "$patch_file" ]]; then
    log "applying $(basename "$patch_file")"
    patch --quiet --directory="$dir" --strip=1 <"$patch_file"
  fi
  echo "$stamp" >"$dir/.done"
fi
echo "PYTORCH_TOKENIZERS_DIR=$dir"
