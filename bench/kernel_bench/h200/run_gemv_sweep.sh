#!/usr/bin/env bash
# One H200 call: the bfloat16 GEMVs of Llama's decode (8B and 1B shapes) under each setting of the
# GEMV tunables (Addmm.GEMV_LOADS: loads in flight per invocation; Addmm.GEMV_GROUPS: column groups
# per workgroup), each setting its own process, against a copy measured in the same run.
# Settings are given as arguments, e.g. "" "GEMV_LOADS=16" "GEMV_LOADS=32,GEMV_GROUPS=4".
set -u
. "$(dirname "$0")/../../llm_decode/h200/setup.sh"
for setting in "$@"; do
  args=()
  IFS=, read -ra pairs <<< "$setting"
  for p in "${pairs[@]}"; do args+=(--tunable "Addmm.$p"); done
  name=${setting:-default}
  $K/kernel_bench --mib 256 --reps 10 --runs 3 --only "GEMV bfloat16" "${args[@]}" --json "$OUT/h200_gemv_${name//[=,]/_}.json" 2>&1 |
    grep -E "^Matmul|run_plan|copy roofline" | sed "s/^/[$name] /"
done
