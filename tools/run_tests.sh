#!/usr/bin/env bash
# Sets up, builds and runs every test: the GoogleTest suites under ASan+UBSan, the Python package's
# pytest suite, then each libFuzzer target for WGML_FUZZ_SECONDS (default 60) on its seed corpus.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$repo/tools/setup.sh"
"$repo/tools/build.sh" asan
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd "$repo/build-asan" && ctest --output-on-failure -j2)
# The Python package (docs/python.md): `pip install .` into the venv, a release build of the module
# and the libraries it needs in build-python/ (ccache shared with the other builds), then pytest;
# WebGPU tests must not skip (lavapipe is there).
CCACHE_BASEDIR="$repo" "$repo/.venv/bin/pip" install -q --no-build-isolation "$repo"
(cd "$repo" && WGML_REQUIRE_WEBGPU=1 .venv/bin/python -m pytest -q python/tests)
# Only the fuzz targets: the rest is covered by the ASan build above.
WGML_BUILD_TARGETS="fuzz_payload fuzz_pte fuzz_onnx fuzz_execute fuzz_spec fuzz_npy fuzz_safetensors fuzz_tensor_proto" \
  "$repo/tools/build.sh" fuzz
"$repo/tests/fuzz/run_fuzz_smoke.sh" "$repo/build-fuzz" "${WGML_FUZZ_SECONDS:-60}"
