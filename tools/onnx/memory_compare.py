#!/usr/bin/env python3
"""Peak memory of `wgml run` against onnxruntime on the real ONNX models (issue 16).

    .venv/bin/python tools/onnx/memory_compare.py --wgml build/tools/cli/wgml --models DIR \\
        --onnxruntime-node ORT_DIR [--device cpu|webgpu ...] [--only NAME] [--max-ratio 1.5]

DIR is what fetch_models.sh filled, ORT_DIR what fetch_onnxruntime_node.sh filled. Each model of
compare_models.py runs on its realistic input in processes of their own: `wgml run --profile` on
each --device, and onnxruntime on the same device: for cpu, a Python process that imports numpy
and onnxruntime and runs an InferenceSession on the CPU provider; for webgpu, a Node.js process
that runs onnxruntime-node's WebGPU execution provider (Dawn over the same Vulkan driver: lavapipe
where there is no GPU). Each process reports its own peak resident memory (VmHWM of
/proc/self/status): everything it mapped and allocated, libraries and the WebGPU implementation
included, and on lavapipe the GPU buffers, which are host memory there. A baseline model (Identity
of one float) shows what each process costs before any model. The table also gives wgml's own
peaks from the profile (host tensor bytes, GPU buffers allocated). With --max-ratio, exit status 1
when wgml's VmHWM exceeds the ratio times onnxruntime's on the same device, model and input.
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
ORT_NODE_RUN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ort_node_run.js")
PEERS = {"cpu": "onnxruntime CPU provider (Python)", "webgpu": "onnxruntime WebGPU EP (Node.js)"}
UNITS_MIB = {"B": 1 / 1024 / 1024, "KiB": 1 / 1024, "MiB": 1, "GiB": 1024}


def run(command):
    """Runs `command`; returns its stderr. The peak resident memory is each process's own VmHWM from
    /proc/self/status (the rusage of a child counts what its parent held before exec)."""
    proc = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: exit {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return proc.stderr


def peak_mib(stderr):
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
    # IR version 8: onnxruntime-node 1.30 reads IR versions up to 13, newer onnx writes 14.
    onnx.save(helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path, {"x": np.zeros(1, dtype=np.float32)}


def peer_peak_mib(device, path, npz, arguments, ort_node):
    """onnxruntime's VmHWM on `device`: its CPU provider from Python, its WebGPU EP from Node.js."""
    if device == "cpu":
        return peak_mib(run([sys.executable, "-c", ORT_RUN, path, npz]))
    return peak_mib(run(["node", ORT_NODE_RUN, os.path.join(ort_node, "node_modules"), path, "webgpu"] + arguments))


def measure(wgml, name, path, inputs, devices, work, ort_node):
    npz = os.path.join(work, f"{name}.npz")
    np.savez(npz, **inputs)
    arguments = []
    for input_name, array in inputs.items():
        file = os.path.join(work, f"{name}_{len(arguments)}.npy")
        np.save(file, array)
        arguments.append(f"{input_name}={file}")
    rows = []
    for device in devices:
        wgml_command = [wgml, "run", path, "--device", device, "--profile"]
        for argument in arguments:
            wgml_command += ["--input", argument]
        wgml_mib, host, gpu = wgml_peaks_mib(run(wgml_command))
        rows.append((device, wgml_mib, peer_peak_mib(device, path, npz, arguments, ort_node), host, gpu))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wgml", required=True)
    parser.add_argument("--models", required=True, help="directory filled by fetch_models.sh")
    parser.add_argument("--onnxruntime-node", required=True, help="directory filled by fetch_onnxruntime_node.sh")
    parser.add_argument("--device", action="append", choices=["cpu", "webgpu"], help="default: cpu and webgpu")
    parser.add_argument("--only", default="", help="run only models whose name contains this")
    parser.add_argument("--max-ratio", type=float, default=0, help="fail when wgml peaks above this x onnxruntime")
    args = parser.parse_args()
    devices = args.device or ["cpu", "webgpu"]
    print("| model | input | device | wgml VmHWM | onnxruntime on the same device | its VmHWM | ratio | "
          "wgml host tensors | wgml GPU buffers |")
    print("|---|---|---|---|---|---|---|---|---|")
    failures = 0
    with tempfile.TemporaryDirectory(prefix="wgml_memory_") as work:
        empty, empty_inputs = baseline_model(work)
        for device, wgml_mib, ort_mib, _, _ in measure(args.wgml, "baseline", empty, empty_inputs, devices, work,
                                                       args.onnxruntime_node):
            print(f"| (baseline: Identity of one float) | | {device} | {wgml_mib:.1f} MiB | {PEERS[device]} | "
                  f"{ort_mib:.1f} MiB | {wgml_mib / ort_mib:.2f} | | |")
        for name, path, inputs_by_kind in cases(args.models):
            if args.only not in name:
                continue
            kind, inputs = list(inputs_by_kind.items())[-1]  # the realistic input
            shape = "x".join(str(d) for d in next(iter(inputs.values())).shape)
            for device, wgml_mib, ort_mib, host, gpu in measure(args.wgml, name, path, inputs, devices, work,
                                                                args.onnxruntime_node):
                ratio = wgml_mib / ort_mib
                over = args.max_ratio and ratio > args.max_ratio
                failures += bool(over)
                print(f"| {name} | {kind} [{shape}] | {device} | {wgml_mib:.1f} MiB | {PEERS[device]} | {ort_mib:.1f} MiB | "
                      f"{ratio:.2f}{' (over the bound)' if over else ''} | {host:.1f} MiB | {gpu:.1f} MiB |", flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
