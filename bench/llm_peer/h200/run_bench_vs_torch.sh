#!/usr/bin/env bash
# One device call: `wgml bench --roofline` on each payload named, and torch_bench.py on the same
# shapes right after it (PyTorch CUDA graph and eager, bf16), then compare.py's table. Each argument
# is PAYLOAD:CONFIG (bench/llm_decode/programs/PAYLOAD.mlxg, tools/llm_shapes.py's CONFIG; no
# CONFIG: no peer). The kit (device tool, carry ["build-h200kit"]) holds a stripped `wgml`, the
# wgpu-native library and the Vulkan loader .debs (docs/performance.md). SIZES: wgml bench's size
# flags (default "-p 512 -n 128 -r 3"); ROUNDS: processes of each, alternated (default 1).
set -u
. "$(dirname "$0")/../../llm_decode/h200/setup.sh"
SIZES=${SIZES:-"-p 512 -n 128 -r 3"}
pairs=()
for round in $(seq 1 "${ROUNDS:-1}"); do
  for arg in "$@"; do
    payload=${arg%%:*}; config=${arg#*:}; [[ "$config" == "$arg" ]] && config=""
    ours=$OUT/wgml_${payload}_$round.json
    $K/wgml bench $P/$payload.mlxg --device webgpu $SIZES --roofline --json > "$ours" 2> "$OUT/wgml_${payload}_$round.err"
    tail -3 "$OUT/wgml_${payload}_$round.err"
    theirs=""
    if [[ -n "$config" ]]; then
      theirs=$OUT/torch_${config}_$round.json
      python3 bench/llm_peer/torch_bench.py "$config" --dtype bf16 $SIZES --json "$theirs" 2>&1 | tail -8
    fi
    pairs+=("$ours:$theirs")
  done
done
python3 bench/llm_peer/compare.py "${pairs[@]}" | tee "$OUT/0_compare.txt"
