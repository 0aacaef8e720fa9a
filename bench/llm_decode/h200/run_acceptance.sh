#!/usr/bin/env bash
# One H200 call: issue 24's table. Each payload named (default: the four of programs/) decoded by
# the kit's llm_decode_BUILD (default new) one token ahead, ROUNDS processes each (default 3), the
# payloads alternated round by round so that all see the same machine state. Every run's lines go
# to $OUT/0_acceptance.txt; then one line a payload: each process's ms per token, their median,
# tokens/s, the median of the processes' thread CPU ms per token, and the goal in tokens/s.
# DEADLINE stops the runs in time (setup.sh's `left`).
set -u
. "$(dirname "$0")/setup.sh"
payloads=("$@")
((${#payloads[@]})) || payloads=(llama-1b-bf16 llama-1b-bf16-4w llama-8b-bf16 llama-8b-bf16-4w)
declare -A goal=([llama-1b-bf16]=540 [llama-1b-bf16-4w]=600 [llama-8b-bf16]=141 [llama-8b-bf16-4w]=250)
log=$OUT/0_acceptance.txt
for round in $(seq "${ROUNDS:-3}"); do
  for m in "${payloads[@]}"; do
    (($(left) > 0)) || break 2
    LIMIT=$(left) decode ${BUILD:-new} $m --ahead 2>&1 | summary "$m round $round" $log
  done
done
# The median of a payload's per-process medians, from its "ms per token" and "CPU time" lines.
for m in "${payloads[@]}"; do
  grep "^$m round" $log | awk -v m=$m -v goal=${goal[$m]:-0} '
    function median(a, n,   i, j, t) {
      for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    /ms per token: median/ { for (i = 1; i <= NF; i++) if ($i == "median") ms[++n] = $(i + 1) + 0 }
    /CPU time per token: median/ { for (i = 1; i <= NF; i++) if ($i == "median") cpu[++c] = $(i + 1) + 0 }
    END {
      if (!n) { print m ": no run finished"; exit }
      line = ""; for (i = 1; i <= n; i++) line = line sprintf(" %.3f", ms[i])
      mid = median(ms, n)
      printf "%s: %d processes (ms per token:%s): median %.3f ms, %.1f tokens/s; thread CPU %.3f ms per token; goal %d tokens/s: %s\n",
             m, n, line, mid, 1000 / mid, c ? median(cpu, c) : -1, goal, (1000 / mid >= goal ? "met" : "short")
    }' | tee -a $log
done
