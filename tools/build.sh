#!/usr/bin/env bash
# Configures and builds one flavour of wgml with Ninja (ccache shared across build dirs).
#
#   tools/build.sh release|asan|fuzz|tsan [extra cmake args...]
#
# tsan (ThreadSanitizer) is meant for the threading test alone:
#   WGML_BUILD_TARGETS=wgml_session_concurrency_test tools/build.sh tsan && build-tsan/tests/api/wgml_session_concurrency_test
#
# WGML_BUILD_TARGETS (space-separated) limits what ninja builds; empty builds everything.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
flavour="${1:-release}"; shift || true
export CCACHE_BASEDIR="$repo"
case "$flavour" in
  release) args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo) ;;
  asan)    args=(-DCMAKE_BUILD_TYPE=Debug -DWGML_SANITIZE=ON) ;;
  tsan)    args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DWGML_TSAN=ON -DWGML_BUILD_BENCH=OFF) ;;
  fuzz)    args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DWGML_FUZZ=ON -DWGML_BUILD_TESTS=OFF) ;;
  *) echo "build.sh: unknown flavour '$flavour'" >&2; exit 2 ;;
esac
dir="$repo/build-$flavour"
[[ "$flavour" == release ]] && dir="$repo/build"
cmake -S "$repo" -B "$dir" -G Ninja "${args[@]}" "$@" >/dev/null
# shellcheck disable=SC2086  # the targets are meant to split into words
ninja -C "$dir" ${WGML_BUILD_TARGETS:-}
