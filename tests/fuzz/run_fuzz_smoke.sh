#!/usr/bin/env bash
# Runs every libFuzzer target on a scratch copy of its seed corpus and fails on any finding (crash,
# sanitizer report, leak, timeout, out-of-memory). The loaders (payload, pte, onnx) run SECONDS
# each (default 60), the newer targets (execute, spec, npy, safetensors, tensor_proto) half of it:
# 2.5 minutes together at the default. Inputs saved under regressions/<target>/ (past findings)
# are replayed first and must not crash.
#   tests/fuzz/run_fuzz_smoke.sh BUILD_DIR [SECONDS]
# BUILD_DIR is a clang build configured with -DWGML_FUZZ=ON.
set -euo pipefail

build=${1:?usage: run_fuzz_smoke.sh BUILD_DIR [SECONDS]}
seconds=${2:-60}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/wgml_fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT

# target  seconds  max_len  seed folders (under the repository)
targets=(
  "payload      $seconds        8192  tests/fuzz/corpus/payload"
  "pte          $seconds        8192  tests/fuzz/corpus/pte"
  "onnx         $seconds        8192  tests/fuzz/corpus/onnx"
  "execute      $((seconds / 2)) 8192  tests/fuzz/corpus/payload tests/fuzz/corpus/pte tests/fuzz/corpus/onnx"
  "spec         $((seconds / 2)) 16384 kernels/specs/mlx kernels/specs/ai.onnx"
  "npy          $((seconds / 2)) 4096  tests/fuzz/corpus/npy"
  "safetensors  $((seconds / 2)) 4096  tests/fuzz/corpus/safetensors"
  "tensor_proto $((seconds / 2)) 4096  tests/fuzz/corpus/tensor_proto"
)

status=0
for entry in "${targets[@]}"; do
  read -r target target_seconds max_len seeds <<<"$entry"
  bin="$build/tests/fuzz/fuzz_$target"
  if [[ ! -x "$bin" ]]; then
    echo "run_fuzz_smoke: $bin not found (configure with -DWGML_FUZZ=ON and build it)" >&2
    exit 2
  fi
  # Inputs that once crashed a target (regressions/<target>/) must replay cleanly first.
  if compgen -G "$here/regressions/$target/*" >/dev/null; then
    if ! "$bin" -runs=1 "$here/regressions/$target/"* >"$work/$target.replay.log" 2>&1; then
      echo "run_fuzz_smoke: fuzz_$target crashes on a saved regression input:" >&2
      sed -n '/ERROR: \|runtime error\|deadly signal/,$p' "$work/$target.replay.log" |
        head -n 40 >&2
      status=1
      continue
    fi
  fi
  mkdir -p "$work/$target/corpus" "$work/$target/artifacts"
  for seed in $seeds; do
    [[ -d "$repo/$seed" ]] && find "$repo/$seed" -type f -exec cp {} "$work/$target/corpus/" \;
  done
  echo "== fuzz_$target: ${target_seconds}s"
  set +e
  "$bin" -max_total_time="$target_seconds" -timeout=10 -rss_limit_mb=2048 -max_len="$max_len" \
    -print_final_stats=1 -artifact_prefix="$work/$target/artifacts/" \
    -dict="$here/wgml.dict" "$work/$target/corpus" >"$work/$target/log" 2>&1
  rc=$?
  set -e
  if [[ $rc -ne 0 ]] || compgen -G "$work/$target/artifacts/*" >/dev/null; then
    echo "run_fuzz_smoke: fuzz_$target FAILED (exit $rc)" >&2
    # The report: from the first sanitizer/libFuzzer error line on.
    sed -n '/ERROR: \|runtime error\|deadly signal\|ALARM\|out-of-memory/,$p' "$work/$target/log" |
      head -n 60 >&2
    mkdir -p "$build/fuzz-findings/$target"
    for f in "$work/$target/artifacts/"*; do
      [[ -e "$f" ]] || continue
      cp "$f" "$build/fuzz-findings/$target/"
      echo "  reproducer: $build/fuzz-findings/$target/$(basename "$f")" >&2
    done
    status=1
  else
    grep '^stat::\|^Done' "$work/$target/log" || true
    echo "fuzz_$target: no findings"
  fi
done
exit $status
