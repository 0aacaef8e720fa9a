# Sourced by the run_*.sh of this folder on the H200 (device tool, carry ["build-h200kit"]): installs
# the Vulkan loader and its kin from the kit's .debs and the wgpu-native library, points the loader at
# the NVIDIA driver and wgml at the checkout's kernels. Sets K (the kit) and P (the payloads).
K=build-h200kit
for f in $K/*.deb; do dpkg -x $f / ; done
cp $K/libwgpu_native-release.so /usr/local/lib/ && ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json WGML_KERNELS_DIR=$PWD/kernels LD_LIBRARY_PATH=$PWD/$K
P=bench/llm_decode/programs

# decode BUILD PAYLOAD [FLAGS...]: the kit's llm_decode_BUILD on a payload's decode steps at past
# 1024 (64 timed after 4 warm-up), its random constants drawn once into /tmp and read by every run
# after; stopped after LIMIT seconds where LIMIT is set.
decode() {
  local build=$1 m=$2 limit=()
  shift 2
  [[ -n ${LIMIT:-} ]] && limit=(timeout "$LIMIT")
  "${limit[@]}" $K/llm_decode_$build $P/$m.mlxg --past 1024 --steps 64 --warmup 4 --constants /tmp/$m.safetensors "$@"
}
# ... | summary LABEL FILE: the lines of a decode run that the rounds compare, each after LABEL, to
# stdout and appended to FILE.
summary() { grep -E 'ms per token|CPU time|per token:|during the timed|rror' | sed "s/^/$1: /" | tee -a "$2"; }
# Seconds left before DEADLINE (seconds since the call began, default 560), by when the runs must
# stop for the device to return what they wrote.
left() { echo $((${DEADLINE:-560} - SECONDS)); }
