#!/usr/bin/env bash
# One H200 call: the decode benchmark on both 1B payloads (docs/performance.md, issue 11).
set -u
K=build-h200kit
for f in $K/*.deb; do dpkg -x $f / ; done
cp $K/libwgpu_native-release.so /usr/local/lib/ && ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json WGML_KERNELS_DIR=$PWD/kernels LD_LIBRARY_PATH=$PWD/$K
P=bench/llm_decode/programs
for m in "$@"; do
  $K/llm_decode $P/$m.mlxg --past 1024 --steps 64 --warmup 4 --profile --json $OUT/h200_$m.json 2>&1 | tee $OUT/h200_$m.txt
done
