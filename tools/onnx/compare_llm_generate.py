#!/usr/bin/env python3
"""`wgml generate` on ONNX decoders from onnxruntime-genai's builder against onnxruntime-genai's greedy search.

    .venv/bin/python tools/onnx/compare_llm_generate.py --wgml build/tools/cli/wgml [--device cpu|webgpu]

Each decoder of tests/fixtures/onnx-llm (random weights, genai_config.json, no tokenizer) generates
greedily from a fixed prompt of ids (--prompt-ids, --ids) until an eos id of its genai_config.json
or its context (context_length 128) ends it, and must give onnxruntime-genai's tokens. The
reference runs on a copy whose MatMulNBits have accuracy_level 1 (float32 arithmetic, what wgml
computes; the builder's 4 lets onnxruntime quantize the activations to int8). At the context's end
onnxruntime-genai stops once the sequence holds max_length tokens; wgml, like its ExecuTorch path,
also samples from the last position's logits, one token more, and says that the context is full.
On webgpu the KV cache must stay on the GPU between steps (--stats' transfers per decode token): a
decode step reads back one logits row, not the cache. Also: without genai_config.json
the decoder is recognised by its input names (no context limit), and a malformed genai_config.json
is refused naming the field.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(REPO, "tests", "fixtures", "onnx-llm")
PROMPT_LENGTH = 5
MAX_NEW_TOKENS = 200  # beyond the context: the context or an eos id ends generation


def float32_copy(folder, work):
    """The decoder folder with accuracy_level 1 on every MatMulNBits, genai_config.json beside it."""
    os.makedirs(work)
    model = onnx.load(os.path.join(folder, "model.onnx"))
    for node in model.graph.node:
        for a in node.attribute:
            if node.op_type == "MatMulNBits" and a.name == "accuracy_level":
                a.i = 1
    onnx.save(model, os.path.join(work, "model.onnx"), save_as_external_data=True, location="model.onnx.data")
    shutil.copy(os.path.join(folder, "genai_config.json"), work)
    return work


def genai_tokens(folder, prompt, max_length):
    """onnxruntime-genai's greedy tokens after `prompt`, until an eos id or max_length tokens in all."""
    import onnxruntime_genai as og

    model = og.Model(folder)
    params = og.GeneratorParams(model)
    params.set_search_options(do_sample=False, max_length=max_length)
    generator = og.Generator(model, params)
    generator.append_tokens(prompt)
    tokens = []
    while not generator.is_done():
        generator.generate_next_token()
        tokens.append(int(generator.get_next_tokens()[0]))
    return tokens


def wgml_generate(wgml, model, prompt, device, *extra):
    command = [wgml, "generate", model, "--device", device, "--prompt-ids", ",".join(map(str, prompt)), "--ids",
               "--stats", *extra]
    proc = subprocess.run(command, capture_output=True, text=True)
    tokens = [int(line) for line in proc.stdout.split()] if proc.returncode == 0 else []
    return proc.returncode, tokens, proc.stderr


def transfers_per_decode_token(stderr):
    """(bytes uploaded, bytes read) per decode token from --stats, or None."""
    found = re.search(r"per decode token: .*?([\d.]+) bytes uploaded, ([\d.]+) bytes read", stderr)
    return (float(found.group(1)), float(found.group(2))) if found else None


def cache_failures(label, stderr, config, prompt_length, generated):
    """On webgpu: a decode step reads back one logits row, never the cache (which a re-upload would need
    first), and uploads less than 1.5 times the cache it attends to (the GroupQueryAttention lowering
    uploads an int32 scatter index of the cache's size each step; the cache itself is not uploaded)."""
    transfers = transfers_per_decode_token(stderr)
    if transfers is None:
        print(f"FAIL {label}: no per-decode-token transfers in --stats:\n{stderr}")
        return 1
    decoder = config["model"]["decoder"]
    mean_positions = prompt_length + generated / 2
    cache_bytes = 2 * decoder["num_hidden_layers"] * decoder["num_key_value_heads"] * decoder["head_size"] * 4 * mean_positions
    inputs_bytes = 8 * (prompt_length + generated + 1)  # token id and attention mask (int64s)
    upload_bound = 1.5 * cache_bytes + inputs_bytes
    read_bound = 4 * config["model"]["vocab_size"]
    uploaded, read = transfers
    print(f"{label}: per decode token {uploaded:.0f} bytes uploaded, {read:.0f} bytes read "
          f"(the cache: {cache_bytes:.0f} bytes at the mean step)")
    if uploaded > upload_bound or read > read_bound:
        print(f"FAIL {label}: the cache moved between host and GPU (bounds: {upload_bound:.0f} uploaded, {read_bound} read)")
        return 1
    return 0


def decoder_failures(name, wgml, device, work):
    folder = os.path.join(FIXTURES, name)
    with open(os.path.join(folder, "genai_config.json")) as f:
        config = json.load(f)
    reference = float32_copy(folder, os.path.join(work, name))
    prompt = [int(t) for t in np.random.default_rng(len(name)).integers(3, 256, size=PROMPT_LENGTH)]
    expected = genai_tokens(reference, prompt, config["model"]["context_length"])
    failures = generation_failures(name, folder, wgml, device, config, prompt, expected)
    failures += without_config_failures(name, wgml, device, work, prompt, expected)
    # The random weights make no eos id before the context ends: a token they make stands in for one.
    first_new = next((i for i in range(8, len(expected)) if expected[i] not in expected[:i]), None)
    if first_new is not None:
        config["model"]["eos_token_id"] = [config["model"]["eos_token_id"], expected[first_new]]
        stopping = os.path.join(work, name + "_eos")
        shutil.copytree(folder, stopping)
        for copy in (stopping, reference):
            with open(os.path.join(copy, "genai_config.json"), "w") as f:
                json.dump(config, f)
        expected = genai_tokens(reference, prompt, config["model"]["context_length"])
        failures += generation_failures(name + " (eos list)", stopping, wgml, device, config, prompt, expected)
    return failures


def generation_failures(name, folder, wgml, device, config, prompt, expected):
    """wgml generate with genai_config.json against onnxruntime-genai's `expected` tokens."""
    context = config["model"]["context_length"]
    eos = config["model"]["eos_token_id"]
    eos = set(eos if isinstance(eos, list) else [eos])
    label = f"{name} ({device}, prompt {prompt})"
    status, got, stderr = wgml_generate(wgml, os.path.join(folder, "model.onnx"), prompt, device,
                                        "--max-new-tokens", str(MAX_NEW_TOKENS))
    if status != 0:
        print(f"FAIL {label}: wgml generate failed:\n{stderr}")
        return 1
    context_full = expected[-1] not in eos
    want_length = len(expected) + (1 if context_full else 0)
    failures = 0
    if got[:len(expected)] != expected or len(got) != want_length:
        print(f"FAIL {label}: wgml made {len(got)} tokens {got}\n  onnxruntime-genai {len(expected)} {expected}"
              f"\n  expected {want_length} tokens from wgml")
        failures += 1
    full_note = f"the context of {context} positions is full ({PROMPT_LENGTH} prompt tokens, {want_length} new tokens)"
    if context_full and full_note not in stderr:
        print(f"FAIL {label}: wgml did not say '{full_note}':\n{stderr}")
        failures += 1
    if device == "webgpu":
        failures += cache_failures(label, stderr, config, PROMPT_LENGTH, len(got))
    if not failures:
        ending = "the context" if context_full else "an eos id"
        print(f"ok {label}: {len(got)} tokens, as onnxruntime-genai's {len(expected)} until {ending}")
    return failures


def without_config_failures(name, wgml, device, work, prompt, expected):
    """The decoder alone in a folder: recognised by its input names; no context limit, no eos id."""
    alone = os.path.join(work, name + "_alone")
    os.makedirs(alone, exist_ok=True)
    for f in ("model.onnx", "model.onnx.data"):
        shutil.copy(os.path.join(FIXTURES, name, f), alone)
    count = min(8, len(expected))
    status, got, stderr = wgml_generate(wgml, os.path.join(alone, "model.onnx"), prompt, device,
                                        "--max-new-tokens", str(count))
    if status != 0 or got != expected[:count]:
        print(f"FAIL {name} without genai_config.json ({device}): status {status}, {got}, expected {expected[:count]}\n{stderr}")
        return 1
    print(f"ok {name} without genai_config.json ({device}): {got}")
    return 0


def malformed_config_failures(wgml, device, work):
    """A genai_config.json whose context_length is not a number is refused, naming the file and the field."""
    folder = os.path.join(work, "malformed")
    shutil.copytree(os.path.join(FIXTURES, "llama_int4"), folder)
    path = os.path.join(folder, "genai_config.json")
    with open(path) as f:
        config = json.load(f)
    config["model"]["context_length"] = "long"
    with open(path, "w") as f:
        json.dump(config, f)
    status, _, stderr = wgml_generate(wgml, os.path.join(folder, "model.onnx"), [1, 2, 3], device)
    want = f"{path}: model.context_length: expected a positive integer"
    if status == 0 or want not in stderr:
        print(f"FAIL malformed genai_config.json ({device}): status {status}, expected '{want}' in:\n{stderr}")
        return 1
    print(f"ok malformed genai_config.json ({device}): {stderr.strip()}")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wgml", required=True)
    parser.add_argument("--device", default="cpu", choices=["cpu", "webgpu"])
    args = parser.parse_args()
    failures = 0
    with tempfile.TemporaryDirectory(prefix="wgml_llm_generate_") as work:
        for name in sorted(os.listdir(FIXTURES)):
            failures += decoder_failures(name, args.wgml, args.device, work)
        failures += malformed_config_failures(args.wgml, args.device, work)
    print(f"{'FAILED' if failures else 'passed'}: {failures} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
