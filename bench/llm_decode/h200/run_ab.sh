#!/usr/bin/env bash
# One H200 call: two builds of llm_decode (the kit's llm_decode_old and llm_decode_new), alternated
# ROUNDS times (default 3) on each payload named, so that both see the same machine state
# (docs/performance.md: the spread between processes is larger than most single changes). A build
# with a kernels folder of its own in the kit (kernels_old, kernels_new) runs with those kernels.
# Each payload's random constants are drawn once, into /tmp, and read by every process after.
# PROFILE=0 leaves out the per-op profile of the new build (with NEW_FLAGS) after each payload's rounds.
# OLD_FLAGS and NEW_FLAGS add llm_decode options to each build's runs (the same binary in both
# slots with NEW_FLAGS=--ahead compares reading each step's logits with greedy decoding ahead).
# Every round's lines also go to $OUT/0_rounds.txt, which sorts first among the files that come back
# (the device tool returns a few files a call).
set -u
. "$(dirname "$0")/setup.sh"
for m in "$@"; do
  for round in $(seq "${ROUNDS:-3}"); do
    for build in old new; do
      kernels=$WGML_KERNELS_DIR
      [[ -d $K/kernels_$build ]] && kernels=$PWD/$K/kernels_$build
      flags=OLD_FLAGS; [[ $build == new ]] && flags=NEW_FLAGS
      WGML_KERNELS_DIR=$kernels decode $build $m ${!flags:-} --json $OUT/h200_${m}_${build}_$round.json 2>&1 |
        summary "$m $build round $round" $OUT/0_rounds.txt
    done
  done
  [[ ${PROFILE:-1} == 1 ]] || continue
  decode new $m ${NEW_FLAGS:-} --profile 2>&1 | tee $OUT/h200_${m}_new_profile.txt | sed -n '/^profile/,/^$/p' | head -24
done
