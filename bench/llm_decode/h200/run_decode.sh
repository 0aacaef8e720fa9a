#!/usr/bin/env bash
# One H200 call: the decode benchmark of each payload named (docs/performance.md, issue 11).
set -u
. "$(dirname "$0")/setup.sh"
for m in "$@"; do
  $K/llm_decode $P/$m.mlxg --past 1024 --steps 64 --warmup 4 --profile --json $OUT/h200_$m.json 2>&1 | tee $OUT/h200_$m.txt
done
