#!/usr/bin/env bash
# One H200 call: kernel_bench's cases whose label holds ONLY, under each setting of OP's tunables,
# each setting its own process, against a copy measured in the same run.
#   run_tunable_sweep.sh OP ONLY SETTING...
# A setting is NAME=V pairs joined by commas, "" for the defaults, e.g.
#   run_tunable_sweep.sh Addmm "GEMV bfloat16" "" GEMV_LOADS=16 GEMV_LOADS=32,GEMV_GROUPS=4
#   run_tunable_sweep.sh QuantizedMatmul "QMV 4-bit g64 bfloat16" "" QMV_THREADS=64 QMV_OUTPUTS=16
# (Addmm's GEMV tunables: loads in flight per invocation, column groups per workgroup; QMV's:
# invocations and outputs per workgroup.) Lines go to stdout and to $OUT/0_sweep.txt.
set -u
. "$(dirname "$0")/../../llm_decode/h200/setup.sh"
op=$1 only=$2
shift 2
for setting in "$@"; do
  args=()
  IFS=, read -ra pairs <<< "$setting"
  for p in "${pairs[@]}"; do args+=(--tunable "$op.$p"); done
  name=${setting:-default}
  $K/kernel_bench --mib 256 --reps 10 --runs 3 --only "$only" "${args[@]}" --json "$OUT/h200_${op}_${name//[=,]/_}.json" 2>&1 |
    grep -E "^(Matmul|QuantizedMatmul)|run_plan|copy roofline|differs|rror" | sed "s/^/[$name] /" | tee -a "$OUT/0_sweep.txt"
done
