#!/usr/bin/env python3
"""LLM decoders as ONNX Runtime's model builder exports them, through `wgml run` and onnxruntime's
CPU provider, and the com.microsoft ops they use on small models built here.

    .venv/bin/python tools/onnx/compare_llm_decoder.py --wgml build/tools/cli/wgml [--device cpu|webgpu]

The decoders (tests/fixtures/onnx-llm, made by tools/onnx/make_llm_decoders.py with
onnxruntime-genai's builder: int4 MatMulNBits, GroupQueryAttention with a KV cache and rotary
embedding, SkipSimplifiedLayerNormalization, GatherBlockQuantized) run a prompt and then several
decode steps of one token each, every step's present KV cache fed back as the next step's past,
each runtime fed its own cache; every step's logits and presents are compared. The next token is
onnxruntime's argmax, so both see the same tokens. The builder sets accuracy_level 4 on MatMulNBits,
which lets onnxruntime's CPU kernel quantize the activations to int8 (about 1e-2 off the exact
product); the reference runs the same graph with accuracy_level 1 (float32 arithmetic), the
definition wgml computes.

The op cases: GroupQueryAttention (packed and separate Q/K/V, prompt, decode and a chunked prompt
after a cache, per-batch cache lengths with padded past buffers, grouped heads 2:1 and 4:1,
interleaved and partial rotary, a local window, an explicit scale, softcap, smooth_softmax, attention_bias, head_sink), RotaryEmbedding (3-D with and
without num_heads, 4-D, one start position or [batch, sequence] ids, interleaved, partial) and
GatherBlockQuantized (4- and 8-bit, packed zero points, int32 and int64 indices).
With --device webgpu a run also fails where an op other than those in ALLOWED_CPU_OPS runs on the
CPU (the profile says which).
"""
import json
import os
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_models import compare_arguments, compare_cases, compare_outputs, op_models, run_wgml, saved_cases  # noqa: E402

FLOAT = TensorProto.FLOAT
MS = "com.microsoft"
RNG = np.random.default_rng(17)
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(REPO, "tests", "fixtures", "onnx-llm")
TOLERANCE = 1e-4
PROMPT_LENGTH = 5
DECODE_STEPS = 4
# What still runs on the CPU in a WebGPU run: none of the arithmetic.
ALLOWED_CPU_OPS = frozenset()


def normal(*shape, scale=1.0):
    return (scale * RNG.normal(size=shape)).astype(np.float32)


def model(nodes, inputs, outputs, initializers=()):
    """ai.onnx 17 and com.microsoft 1; inputs are (name, elem_type, shape), outputs names."""
    g = helper.make_graph(nodes, "decoder_ops", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [helper.make_tensor_value_info(n, FLOAT, None) for n in outputs],
                          [numpy_helper.from_array(v, n) for n, v in initializers])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    m.ir_version = 8
    return m


def rotary_caches(positions, half):
    """cos and sin [positions, half] of angles p / 10000^(i / half), as the builder writes them."""
    inv = 1.0 / (10000 ** (np.arange(half) / half))
    angles = np.outer(np.arange(positions), inv)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def gqa(batch, seq, heads, kv_heads, head, past, seqlens, total, packed=False, rotary=None, bias=None, sink=False,
        **attrs):
    """One GroupQueryAttention node; rotary = (cache width, interleaved) or None. `past` is the past
    buffers' length; seqlens_k and total_sequence_length as given; bias: the attention_bias shape."""
    names = ["query", "", ""] if packed else ["query", "key", "value"]
    names += ["past_key", "past_value", "seqlens_k", "total_sequence_length"]
    inputs = {"query": normal(batch, seq, (heads + 2 * kv_heads if packed else heads) * head)}
    if not packed:
        inputs["key"] = normal(batch, seq, kv_heads * head)
        inputs["value"] = normal(batch, seq, kv_heads * head)
    inputs["past_key"] = normal(batch, kv_heads, past, head)
    inputs["past_value"] = normal(batch, kv_heads, past, head)
    inputs["seqlens_k"] = np.array(seqlens, np.int32)
    inputs["total_sequence_length"] = np.array(total, np.int32)
    initializers = []
    if rotary:
        width, interleaved = rotary
        cos, sin = rotary_caches(64, width)
        initializers = [("cos_cache", cos), ("sin_cache", sin)]
        names += ["cos_cache", "sin_cache"]
        attrs.update(do_rotary=1, rotary_interleaved=int(interleaved))
    if bias or sink:
        names += [""] * (9 - len(names)) + ["", "attention_bias" if bias else "", "head_sink" if sink else ""]
    if bias:
        inputs["attention_bias"] = normal(*bias)
    if sink:
        inputs["head_sink"] = normal(heads)
    node = helper.make_node("GroupQueryAttention", names, ["output", "present_key", "present_value"], domain=MS,
                            num_heads=heads, kv_num_heads=kv_heads, **attrs)
    types = {"seqlens_k": TensorProto.INT32, "total_sequence_length": TensorProto.INT32}
    graph_inputs = [(n, types.get(n, FLOAT), list(v.shape)) for n, v in inputs.items()]
    return model([node], graph_inputs, ["output", "present_key", "present_value"], initializers), inputs


def rotary_embedding(shape, positions, width, **attrs):
    """com.microsoft RotaryEmbedding of x `shape` at position_ids `positions` (int64)."""
    cos, sin = rotary_caches(32, width)
    node = helper.make_node("RotaryEmbedding", ["x", "position_ids", "cos_cache", "sin_cache"], ["y"], domain=MS,
                            **attrs)
    ids = np.array(positions, np.int64)
    m = model([node], [("x", FLOAT, shape), ("position_ids", TensorProto.INT64, list(ids.shape))], ["y"],
              [("cos_cache", cos), ("sin_cache", sin)])
    return m, {"x": normal(*shape), "position_ids": ids}


def packed_nibbles(values, bits):
    per_byte = 8 // bits
    out = np.zeros(values.shape[:-1] + (values.shape[-1] // per_byte,), np.uint8)
    for j in range(per_byte):
        out |= (values[..., j::per_byte] << (j * bits)).astype(np.uint8)
    return out


def gather_block_quantized(rows, k, bits, block, index_type, zero_points=False):
    rng = np.random.default_rng(rows * k + bits)
    data = packed_nibbles(rng.integers(0, 1 << bits, size=(rows, k), dtype=np.uint8), bits)
    scales = rng.uniform(0.01, 0.1, size=(rows, k // block)).astype(np.float32)
    initializers = [("data", data), ("scales", scales)]
    names = ["data", "indices", "scales"]
    if zero_points:
        blocks = k // block
        zeros = rng.integers(0, 1 << bits, size=(rows, -(-blocks * bits // 8) * 8 // bits), dtype=np.uint8)
        initializers.append(("zero_points", packed_nibbles(zeros, bits)))
        names.append("zero_points")
    node = helper.make_node("GatherBlockQuantized", names, ["y"], domain=MS, bits=bits, block_size=block,
                            gather_axis=0, quantize_axis=1)
    indices = rng.integers(0, rows, size=(2, 3)).astype(np.int64 if index_type == TensorProto.INT64 else np.int32)
    return model([node], [("indices", index_type, [2, 3])], ["y"], initializers), {"indices": indices}


OP_CASES = {
    "gqa_prompt_rotary": lambda: gqa(1, 5, 4, 2, 16, 0, [4], 5, rotary=(8, False)),
    "gqa_prompt_packed_window": lambda: gqa(1, 6, 2, 2, 16, 0, [5], 6, packed=True, local_window_size=2),
    "gqa_decode_interleaved": lambda: gqa(1, 1, 4, 1, 16, 6, [6], 7, rotary=(8, True)),
    "gqa_decode_packed_scale": lambda: gqa(1, 1, 4, 2, 16, 3, [3], 4, packed=True, rotary=(8, False), scale=0.3),
    "gqa_chunked_prompt": lambda: gqa(1, 3, 4, 2, 16, 4, [6], 7, rotary=(8, False)),
    "gqa_batch_padded_partial_rotary": lambda: gqa(2, 1, 2, 1, 32, 6, [6, 3], 7, rotary=(8, False)),
    "gqa_softcap": lambda: gqa(1, 4, 4, 2, 16, 3, [6], 7, rotary=(8, False), softcap=2.0),
    "gqa_smooth_softmax_window": lambda: gqa(1, 5, 4, 1, 16, 0, [4], 5, smooth_softmax=1, local_window_size=3),
    "gqa_softcap_smooth_decode": lambda: gqa(2, 1, 2, 2, 16, 4, [4, 2], 5, packed=True, softcap=1.5, smooth_softmax=1),
    "gqa_attention_bias": lambda: gqa(2, 1, 4, 2, 16, 6, [6, 4], 7, rotary=(8, False), bias=[2, 1, 1, 7]),
    "gqa_head_sink_bias_softcap": lambda: gqa(1, 4, 4, 2, 16, 3, [6], 7, bias=[1, 4, 4, 7], sink=True, softcap=3.0),
    "gqa_head_sink_decode": lambda: gqa(1, 1, 4, 1, 16, 5, [5], 6, packed=True, sink=True),
    "rope_3d_num_heads": lambda: rotary_embedding([2, 3, 64], [[0, 1, 2], [5, 6, 7]], 8, num_heads=4),
    "rope_3d_one_head": lambda: rotary_embedding([1, 3, 16], [2], 8),
    "rope_4d_interleaved": lambda: rotary_embedding([1, 2, 5, 16], [3], 8, interleaved=1),
    "rope_partial": lambda: rotary_embedding([1, 4, 64], [[1, 2, 3, 4]], 8, num_heads=2, rotary_embedding_dim=16),
    "gather_block_quantized_4bit": lambda: gather_block_quantized(32, 64, 4, 32, TensorProto.INT64),
    "gather_block_quantized_4bit_zero_points": lambda: gather_block_quantized(32, 96, 4, 32, TensorProto.INT32, True),
    "gather_block_quantized_8bit": lambda: gather_block_quantized(16, 128, 8, 64, TensorProto.INT64, True),
}


def float32_reference(path):
    """An onnxruntime session on the model with MatMulNBits' accuracy_level 1 (float32 arithmetic)."""
    import onnx
    import onnxruntime as ort

    m = onnx.load(path)
    for node in m.graph.node:
        for a in node.attribute:
            if node.op_type == "MatMulNBits" and a.name == "accuracy_level":
                a.i = 1
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])


def decoder_failures(name, wgml, device):
    """Prompt then DECODE_STEPS steps, each runtime fed its own present caches; returns failures."""
    folder = os.path.join(FIXTURES, name)
    path = os.path.join(folder, "model.onnx")
    with open(os.path.join(folder, "genai_config.json")) as f:
        decoder = json.load(f)["model"]["decoder"]
    layers, kv_heads, head = decoder["num_hidden_layers"], decoder["num_key_value_heads"], decoder["head_size"]
    session = float32_reference(path)
    output_names = [o.name for o in session.get_outputs()]
    rng = np.random.default_rng(len(name))
    tokens = rng.integers(3, 256, size=(1, PROMPT_LENGTH)).astype(np.int64)
    empty = np.zeros((1, kv_heads, 0, head), np.float32)
    cache = {f"past_key_values.{i}.{kind}": empty for i in range(layers) for kind in ("key", "value")}
    ours, theirs = dict(cache), dict(cache)
    total, failures = 0, 0
    for step in range(DECODE_STEPS + 1):
        total += tokens.shape[1]
        feeds = {"input_ids": tokens, "attention_mask": np.ones((1, total), np.int64)}
        expected = dict(zip(output_names, session.run(None, {**feeds, **theirs})))
        label = f"{name} ({'prompt' if step == 0 else f'decode step {step}'}, {total} tokens)"
        try:
            got, seconds, fallbacks = run_wgml(wgml, path, {**feeds, **ours}, device)
        except RuntimeError as e:
            print(f"FAIL {label}: wgml failed: {e}")
            return failures + 1
        fallbacks = [op for op in fallbacks if op not in ALLOWED_CPU_OPS]
        if fallbacks:
            print(f"FAIL {label}: on the CPU instead of the GPU: {', '.join(fallbacks)}")
            failures += 1
        failures += compare_outputs(label, expected, got, TOLERANCE, f"wgml {seconds:.2f} s")
        for key in cache:
            present = key.replace("past_key_values", "present")
            theirs[key] = expected[present]
            ours[key] = got.get(present, expected[present])
        tokens = np.array([[int(np.argmax(expected["logits"][0, -1]))]], np.int64)
    return failures


def main():
    args = compare_arguments(__doc__.splitlines()[0], "run only cases and decoders whose name contains this")
    with tempfile.TemporaryDirectory(prefix="wgml_decoder_ops_") as work:
        cases = saved_cases(op_models(OP_CASES), work)
        failures = compare_cases(cases, args.wgml, args.device, TOLERANCE, args.only, ALLOWED_CPU_OPS)
    for name in sorted(os.listdir(FIXTURES)):
        if args.only in name:
            failures += decoder_failures(name, args.wgml, args.device)
    print(f"{'FAILED' if failures else 'passed'}: {failures} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
