# Sourced by the run_*.sh of this folder on the H200 (device tool, carry ["build-h200kit"]): installs
# the Vulkan loader and its kin from the kit's .debs and the wgpu-native library, points the loader at
# the NVIDIA driver and wgml at the checkout's kernels. Sets K (the kit) and P (the payloads).
K=build-h200kit
for f in $K/*.deb; do dpkg -x $f / ; done
cp $K/libwgpu_native-release.so /usr/local/lib/ && ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json WGML_KERNELS_DIR=$PWD/kernels LD_LIBRARY_PATH=$PWD/$K
P=bench/llm_decode/programs
