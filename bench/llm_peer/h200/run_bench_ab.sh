#!/usr/bin/env bash
# One device call: `wgml bench` with two kernels folders, the kit's kernels_old and the checkout's
# kernels/, alternated ROUNDS times (default 2) on each payload named (bench/llm_decode/programs),
# so that both see the same machine state. SIZES: wgml bench's size flags (default
# "-p 512 -n 32 -r 3"). Each process's pp and tg medians go to $OUT/0_rounds.txt.
set -u
. "$(dirname "$0")/../../llm_decode/h200/setup.sh"
SIZES=${SIZES:-"-p 512 -n 32 -r 3"}
for m in "$@"; do
  for round in $(seq "${ROUNDS:-2}"); do
    for build in old new; do
      kernels=$PWD/kernels; [[ $build == old ]] && kernels=$PWD/$K/kernels_old
      json=$OUT/${m}_${build}_$round.json
      WGML_KERNELS_DIR=$kernels $K/wgml bench $P/$m.mlxg --device webgpu $SIZES --json > "$json" 2>/dev/null
      python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print(' '.join(f\"{t['test']} {t['tokens_per_s']['median']:.1f} t/s\" for t in d['tests']))" "$json" |
        sed "s/^/$m $build round $round: /" | tee -a "$OUT/0_rounds.txt"
    done
  done
done
