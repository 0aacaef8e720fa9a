#!/usr/bin/env python3
"""Peak memory of `wgml run` against onnxruntime on the real ONNX models (issue 16).

    .venv/bin/python tools/onnx/memory_compare.py --wgml build/tools/cli/wgml --models DIR \\
        [--device cpu|webgpu ...] [--only NAME] [--max-ratio 1.5] [--markdown]

DIR is what fetch_models.sh filled. Each model of compare_models.py runs on its realistic input in
a process of its own: `wgml run` on each --device, and a Python process that imports numpy and
onnxruntime, opens an InferenceSession (CPU provider, default options) and runs it once. A
process's peak resident memory (VmHWM, what the kernel reports as ru_maxrss when it exits) covers
everything it mapped and allocated: libraries, the model, intermediates, and on lavapipe the GPU
buffers, which are host memory there. The table also gives wgml's own peaks from `--profile` (host
tensor bytes, GPU buffers). With --max-ratio, exit status 1 when a wgml process peaks above that
multiple of onnxruntime's on the same model and input.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_models import cases  # noqa: E402  (the same models and inputs as the accuracy test)

ORT_RUN = """
import sys
import numpy as np
import onnxruntime as ort
inputs = dict(np.load(sys.argv[2]))
session = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
session.run(None, inputs)
"""


def peak_kib(command):
    """Runs `command`; returns its peak resident memory in KiB and its stderr."""
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read().decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: exit {proc.returncode}: {text.strip()[-2000:]}")
    return usage.ru_maxrss, text


def mib(value, unit):
    number = float(value) * {"KiB": 1 / 1024, "MiB": 1, "GiB": 1024}[unit]
    return number


def profiled_peaks(stderr):
    """wgml --profile's 'peak memory of the last run' line: host tensors and GPU buffers, MiB."""
    match = re.search(r"host tensors ([\d.]+) (MiB), GPU buffers ([\d.]+) (MiB)", stderr)
    return (mib(match.group(1), match.group(2)), mib(match.group(3), match.group(4))) if match else (None, None)


def measure(wgml, name, path, inputs, devices, work):
    npz = os.path.join(work, f"{name}.npz")
    np.savez(npz, **inputs)
    arguments = []
    for input_name, array in inputs.items():
        file = os.path.join(work, f"{name}_{len(arguments)}.npy")
        np.save(file, array)
        arguments += ["--input", f"{input_name}={file}"]
    ort_kib, _ = peak_kib([sys.executable, "-c", ORT_RUN, path, npz])
    rows = []
    for device in devices:
        command = [wgml, "run", path, "--device", device] + arguments
        wgml_kib, _ = peak_kib(command)
        _, profile = peak_kib(command + ["--profile"])
        host, gpu = profiled_peaks(profile)
        rows.append((device, wgml_kib / 1024, ort_kib / 1024, host, gpu))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wgml", required=True)
    parser.add_argument("--models", required=True, help="directory filled by fetch_models.sh")
    parser.add_argument("--device", action="append", choices=["cpu", "webgpu"], help="default: cpu and webgpu")
    parser.add_argument("--only", default="", help="run only models whose name contains this")
    parser.add_argument("--max-ratio", type=float, default=0, help="fail when wgml peaks above this x onnxruntime")
    args = parser.parse_args()
    devices = args.device or ["cpu", "webgpu"]

    print("| model | input | device | wgml VmHWM | onnxruntime VmHWM | ratio | wgml host tensors | wgml GPU buffers |")
    print("|---|---|---|---|---|---|---|---|")
    failures = 0
    with tempfile.TemporaryDirectory(prefix="wgml_memory_") as work:
        for name, path, inputs_by_kind in cases(args.models):
            if args.only not in name:
                continue
            kind, inputs = list(inputs_by_kind.items())[-1]  # the realistic input
            shape = "x".join(str(d) for d in next(iter(inputs.values())).shape)
            for device, wgml_mib, ort_mib, host, gpu in measure(args.wgml, name, path, inputs, devices, work):
                ratio = wgml_mib / ort_mib
                over = args.max_ratio and ratio > args.max_ratio
                failures += bool(over)
                peaks = [f"{v:.1f} MiB" if v is not None else "?" for v in (host, gpu)]
                print(f"| {name} | {kind} [{shape}] | {device} | {wgml_mib:.1f} MiB | {ort_mib:.1f} MiB | "
                      f"{ratio:.2f}{' (over the bound)' if over else ''} | {peaks[0]} | {peaks[1]} |", flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
