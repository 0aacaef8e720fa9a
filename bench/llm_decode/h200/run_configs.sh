#!/usr/bin/env bash
# One H200 call: configurations of the kit alternated ROUNDS times (default 2) on one payload, so
# that all see the same machine state. A configuration is BUILD:KERNELS[:FLAGS]: the kit's
# llm_decode_BUILD, run with the kit's kernels_KERNELS folder ("checkout" for the checkout's
# kernels/) and extra llm_decode flags. FLAGS adds flags to every run (e.g. --ahead). E.g.
#   FLAGS=--ahead run_configs.sh llama-8b-bf16-4w new:checkout norm:checkout "new:checkout:--tunable QuantizedMatmul.QMV_PARTS=1"
# Every run's lines go to stdout and to $OUT/0_configs.txt; DEADLINE stops the runs in time
# (setup.sh's `left`).
set -u
. "$(dirname "$0")/setup.sh"
m=$1
shift
for round in $(seq "${ROUNDS:-2}"); do
  for config in "$@"; do
    build=${config%%:*} rest=${config#*:}
    kernels=${rest%%:*} extra=""
    [[ $rest == *:* ]] && extra=${rest#*:}
    dir=$PWD/kernels
    [[ $kernels == checkout ]] || dir=$PWD/$K/kernels_$kernels
    (( $(left) > 0 )) || exit 0
    WGML_KERNELS_DIR=$dir LIMIT=$(left) decode $build $m ${FLAGS:-} $extra 2>&1 |
      summary "$m [$config] round $round" $OUT/0_configs.txt
  done
done
