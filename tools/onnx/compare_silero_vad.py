#!/usr/bin/env python3
"""Runs every ONNX model the silero-vad PyPI package ships through `wgml run` and onnxruntime.

    .venv/bin/python tools/onnx/compare_silero_vad.py --wgml build/tools/cli/wgml --models DIR \\
        [--device cpu|webgpu]

DIR is what fetch_silero_vad.sh filled. Each model gets the input its Python wrapper gives it (a
chunk of 512 samples at 16 kHz or 256 at 8 kHz after 64 or 32 samples of context) on a
speech-like signal and on noise, with a zero and a nonzero recurrent state; the models with an `sr`
input run at both rates (the `If` on it picks the 16 kHz or 8 kHz network). A model file the
script has no inputs for fails, so a new variant in a new release is not skipped silently. Exit
status 77 (a skip for CTest) when DIR holds no models.
"""
import argparse
import glob
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_models import compare_cases  # noqa: E402

RATES = {16000: (512, 64), 8000: (256, 32)}  # samples per chunk, samples of context


def speech_like(samples, rate, seed):
    """A voiced sound: a 140 Hz fundamental with formant-like harmonics, an envelope and noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(samples) / rate
    voiced = sum(a * np.sin(2 * np.pi * f * t) for a, f in ((0.3, 140), (0.2, 280), (0.15, 700), (0.08, 1200)))
    return (voiced * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t)) + rng.normal(0, 0.01, samples)).astype(np.float32)


def chunks(rate, batch, seed):
    """{kind: audio [batch, context + chunk]} for one rate."""
    chunk, context = RATES[rate]
    rng = np.random.default_rng(seed)
    speech = np.stack([speech_like(context + chunk, rate, seed + b) for b in range(batch)])
    noise = rng.normal(0, 0.05, (batch, context + chunk)).astype(np.float32)
    return {"speech": speech, "noise": noise}


def states(shape, seed):
    return {"zero state": np.zeros(shape, np.float32),
            "running state": np.random.default_rng(seed).normal(0, 0.5, shape).astype(np.float32)}


def stateful_inputs(rates, batch, with_sr):
    out = {}
    for rate in rates:
        for audio_kind, audio in chunks(rate, batch, rate).items():
            for state_kind, state in states((2, batch, 128), rate + 1).items():
                inputs = {"input": audio, "state": state}
                if with_sr:
                    inputs["sr"] = np.array(rate, np.int64)
                out[f"{rate} Hz, batch {batch}, {audio_kind}, {state_kind}"] = inputs
    return out


def sequence_inputs():
    """silero_vad_16k_sequence: a sequence of 16 kHz windows [n, 576] and the LSTM's h and c."""
    out = {}
    for audio_kind, audio in chunks(16000, 3, 7).items():
        for state_kind, state in states((2, 1, 1, 128), 8).items():
            out[f"3 windows, {audio_kind}, {state_kind}"] = {"input": audio, "h": state[0], "c": state[1]}
    return out


def inputs_for(model):
    """The inputs of each shipped variant, by file name (None for a file this script does not know)."""
    return {
        "silero_vad.onnx": stateful_inputs((16000, 8000), 1, True) | stateful_inputs((16000,), 2, True),
        "silero_vad_16k_op15.onnx": stateful_inputs((16000,), 1, True) | stateful_inputs((16000,), 2, True),
        "silero_vad_op18_ifless.onnx": stateful_inputs((16000, 8000), 1, True),
        "silero_vad_half.onnx": stateful_inputs((16000,), 1, False),
        "silero_vad_openvino_16k.onnx": stateful_inputs((16000,), 1, False),
        "silero_vad_16k_sequence.onnx": sequence_inputs(),
    }.get(model)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wgml", required=True)
    parser.add_argument("--models", required=True, help="directory filled by fetch_silero_vad.sh")
    parser.add_argument("--tolerance", type=float, default=1e-4)
    parser.add_argument("--device", default="cpu", choices=["cpu", "webgpu"])
    args = parser.parse_args()
    models = sorted(glob.glob(os.path.join(args.models, "*.onnx")))
    if not models:
        print(f"skipped: no silero-vad models in {args.models} (tools/setup.sh fetches them)")
        sys.exit(77)
    unknown = [os.path.basename(m) for m in models if inputs_for(os.path.basename(m)) is None]
    for name in unknown:
        print(f"FAIL {name}: a variant this script has no inputs for")
    cases = [(os.path.basename(m), m, inputs_for(os.path.basename(m))) for m in models
             if os.path.basename(m) not in unknown]
    # The recurrent state and a few kept ops stay on the CPU on WebGPU: correctness is the bar here.
    failures = compare_cases(cases, args.wgml, args.device, args.tolerance, allowed_cpu_ops=None)
    sys.exit(1 if failures or unknown else 0)


if __name__ == "__main__":
    main()
