#!/usr/bin/env bash
# One H200 call: decode time against how often the recorder submits (docs/performance.md).
set -u
. "$(dirname "$0")/setup.sh"
for m in llama-1b-bf16 llama-1b-bf16-4w; do
  for n in ${SWEEP:-256 64 32 16 8}; do
    $K/llm_decode $P/$m.mlxg --past 1024 --steps 64 --warmup 4 --dispatches-per-submit $n --json $OUT/h200_${m}_dps$n.json 2>&1 | grep -E 'ms per token|CPU time|per token:' | sed "s/^/$m dps=$n /"
  done
done
