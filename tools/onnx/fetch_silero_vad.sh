#!/usr/bin/env bash
# Fetches the official silero-vad ONNX models (every variant the PyPI package ships) into OUT/,
# once: `pip download` of a pinned wheel, checked against its sha256, models unzipped, nothing
# installed. The models are not committed (about 10 MB); tools/setup.sh fills .cache/silero-vad.
#   tools/onnx/fetch_silero_vad.sh OUT
set -euo pipefail
out=${1:?usage: fetch_silero_vad.sh OUT}
version=6.2.3
wheel=silero_vad-$version-py3-none-any.whl
sha256=7b7f5436cfcb02fae583a05b512ea96467fd449fe54cb49a5e4f06c51a1e43b8
[[ -f "$out/.complete-$version" ]] && exit 0
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
download=$(mktemp -d)
trap 'rm -rf "$download"' EXIT
"$repo/.venv/bin/pip" download -q --no-deps "silero-vad==$version" -d "$download"
echo "$sha256  $download/$wheel" | sha256sum -c --quiet
rm -rf "$out"
mkdir -p "$out"
"$repo/.venv/bin/python" - "$download/$wheel" "$out" <<'PY'
import os, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    for name in wheel.namelist():
        if name.startswith("silero_vad/data/") and name.endswith(".onnx"):
            with open(os.path.join(sys.argv[2], os.path.basename(name)), "wb") as f:
                f.write(wheel.read(name))
PY
touch "$out/.complete-$version"
