#!/usr/bin/env python3
"""Peak memory of `wgml run` against onnxruntime on the real ONNX models (issue 16).

    .venv/bin/python tools/onnx/memory_compare.py --wgml build/tools/cli/wgml --models DIR \\
        [--device cpu|webgpu ...] [--only NAME] [--max-ratio 1.5]

DIR is what fetch_models.sh filled. Each model of compare_models.py runs on its realistic input in
a process of its own: `wgml run --profile` on each --device, and a Python process that imports
numpy and onnxruntime, opens an InferenceSession (CPU provider, default options) and runs it once.
Each process reports its own peak resident memory (VmHWM of /proc/self/status): everything it
mapped and allocated, libraries included, and on lavapipe the GPU buffers, which are host memory
there. A baseline model (Identity of one float) measures what each process costs before any model
of substance: the libraries (onnxruntime's Python, numpy; wgml's WebGPU stack, lavapipe's LLVM).
"Above its baseline" is the model's own memory: constants, intermediates, compiled kernels. The
table also gives wgml's own peaks from the profile (host tensor bytes, GPU buffers allocated).
With --max-ratio, exit status 1 when wgml's memory above its baseline exceeds that multiple of
onnxruntime's above its own on the same model and input.
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
print(next(line for line in open("/proc/self/status") if line.startswith("VmHWM:")), file=sys.stderr)
"""
UNITS_MIB = {"B": 1 / 1024 / 1024, "KiB": 1 / 1024, "MiB": 1, "GiB": 1024}


def run(command):
    """Runs `command`; returns its stderr. The peak resident memory is each process's own VmHWM from
    /proc/self/status (the rusage of a child counts what its parent held before exec)."""
    proc = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: exit {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return proc.stderr


def ort_peak_mib(stderr):
    return int(re.search(r"VmHWM:\s*(\d+) kB", stderr).group(1)) / 1024


def wgml_peaks_mib(stderr):
    """wgml --profile's VmHWM, and its last run's host tensor and GPU buffer peaks, in MiB."""
    size = r"([\d.]+) (B|KiB|MiB|GiB)"
    process = re.search(r"\(VmHWM\): " + size, stderr)
    peaks = re.search(r"host tensors " + size + ", GPU buffers " + size, stderr)
    return (float(process.group(1)) * UNITS_MIB[process.group(2)], float(peaks.group(1)) * UNITS_MIB[peaks.group(2)],
            float(peaks.group(3)) * UNITS_MIB[peaks.group(4)])


def baseline_model(work):
    """An ONNX model that does nothing (Identity of one float): what a process costs before a model's own memory."""
    import onnx
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "baseline",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    path = os.path.join(work, "baseline.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path, {"x": np.zeros(1, dtype=np.float32)}


def measure(wgml, name, path, inputs, devices, work):
    npz = os.path.join(work, f"{name}.npz")
    np.savez(npz, **inputs)
    arguments = []
    for input_name, array in inputs.items():
        file = os.path.join(work, f"{name}_{len(arguments)}.npy")
        np.save(file, array)
        arguments += ["--input", f"{input_name}={file}"]
    ort_mib = ort_peak_mib(run([sys.executable, "-c", ORT_RUN, path, npz]))
    rows = []
    for device in devices:
        wgml_mib, host, gpu = wgml_peaks_mib(run([wgml, "run", path, "--device", device, "--profile"] + arguments))
        rows.append((device, wgml_mib, ort_mib, host, gpu))
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

    print("| model | input | device | wgml VmHWM | onnxruntime VmHWM | ratio | wgml above its baseline | "
          "onnxruntime above its baseline | ratio | wgml host tensors | wgml GPU buffers |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    failures = 0
    with tempfile.TemporaryDirectory(prefix="wgml_memory_") as work:
        empty, empty_inputs = baseline_model(work)
        baselines = {device: row for device, *row in measure(args.wgml, "baseline", empty, empty_inputs, devices, work)}
        for device, (wgml_base, ort_base, _, _) in baselines.items():
            print(f"| (baseline: Identity of one float) | | {device} | {wgml_base:.1f} MiB | {ort_base:.1f} MiB | "
                  f"{wgml_base / ort_base:.2f} | | | | | |")
        for name, path, inputs_by_kind in cases(args.models):
            if args.only not in name:
                continue
            kind, inputs = list(inputs_by_kind.items())[-1]  # the realistic input
            shape = "x".join(str(d) for d in next(iter(inputs.values())).shape)
            for device, wgml_mib, ort_mib, host, gpu in measure(args.wgml, name, path, inputs, devices, work):
                wgml_base, ort_base, _, _ = baselines[device]
                wgml_own, ort_own = wgml_mib - wgml_base, max(ort_mib - ort_base, 0.1)
                ratio, own_ratio = wgml_mib / ort_mib, wgml_own / ort_own
                over = args.max_ratio and own_ratio > args.max_ratio
                failures += bool(over)
                peaks = [f"{v:.1f} MiB" for v in (host, gpu)]
                print(f"| {name} | {kind} [{shape}] | {device} | {wgml_mib:.1f} MiB | {ort_mib:.1f} MiB | {ratio:.2f} | "
                      f"{wgml_own:.1f} MiB | {ort_own:.1f} MiB | {own_ratio:.2f}{' (over the bound)' if over else ''} | "
                      f"{peaks[0]} | {peaks[1]} |", flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
