#!/usr/bin/env bash
# One H200 call: the kit's llm_decode_new on one payload under each setting, a setting being extra
# llm_decode flags ("" for none), the settings alternated ROUNDS times (default 2) so that all see
# the same machine state. FLAGS adds flags to every run. E.g.
#   run_sweep.sh llama-1b-bf16-4w "" "--dispatches-per-submit 64"
#   FLAGS=--ahead run_sweep.sh llama-1b-bf16-4w "" "--tunable QuantizedSwiGlu.QMV_OUTPUTS=2"
# Every run's lines go to stdout and to $OUT/0_sweep.txt.
set -u
. "$(dirname "$0")/setup.sh"
m=$1
shift
for round in $(seq "${ROUNDS:-2}"); do
  for setting in "$@"; do
    decode new $m ${FLAGS:-} $setting 2>&1 | summary "$m [${setting:-default}] round $round" $OUT/0_sweep.txt
  done
done
