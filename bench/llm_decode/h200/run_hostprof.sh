#!/usr/bin/env bash
# One H200 call: where a decode step's host time goes (gperftools CPU profile of llm_decode).
# Arguments: PROGRAM:DISPATCHES_PER_SUBMIT ...
set -u
. "$(dirname "$0")/setup.sh"
LIB=$(ls /usr/lib/x86_64-linux-gnu/libprofiler.so* | head -1)
for a in "$@"; do
  m=${a%%:*}; n=${a##*:}
  CPUPROFILE=$OUT/$m.prof CPUPROFILE_FREQUENCY=2000 LD_PRELOAD=$LIB $K/llm_decode $P/$m.mlxg --past 1024 --steps 400 --warmup 4 --dispatches-per-submit $n 2>&1 | grep -E 'ms per token|CPU time'
done
