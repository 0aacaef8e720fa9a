#!/usr/bin/env python3
"""A BERT-style encoder optimised by ONNX Runtime's transformer optimizer, through `wgml run` and
onnxruntime's CPU provider, and the com.microsoft ops such encoders use on small models built here.

    .venv/bin/python tools/onnx/compare_ort_encoder.py --wgml build/tools/cli/wgml [--device cpu|webgpu]

The encoder (tests/fixtures/onnx-encoder, made by tools/onnx/make_ort_optimised_encoder.py:
EmbedLayerNormalization, Attention with packed QKV and the 1-D mask_index it computes,
SkipLayerNormalization, BiasGelu) runs random token batches with right padding, a mask with holes
(which the fused graph reads as a count of ones, as onnxruntime does) and mixed token types; both
outputs are compared. The op cases: Attention with 1-D end and end-plus-start mask_index, 2-D and
3-D raw masks, unidirectional, unequal V heads (qkv_hidden_sizes), an explicit scale,
mask_filter_value and attention_bias; EmbedLayerNormalization without segments or a mask, with
position_ids, and its embedding_sum output. With --device webgpu a run also fails where an op
other than those in ALLOWED_CPU_OPS runs on the CPU (the profile says which).
"""
import os
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_models import compare_arguments, compare_cases, op_models, saved_cases  # noqa: E402

FLOAT, INT32, INT64 = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64
MS = "com.microsoft"
RNG = np.random.default_rng(29)
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENCODER = os.path.join(REPO, "tests", "fixtures", "onnx-encoder", "bert_tiny_ort_optimised.onnx")
VOCAB = 100
TOLERANCE = 1e-4
# What still runs on the CPU in a WebGPU run: none of the arithmetic.
ALLOWED_CPU_OPS = frozenset()


def normal(*shape, scale=1.0):
    return (scale * RNG.normal(size=shape)).astype(np.float32)


def model(nodes, inputs, outputs, initializers=()):
    """ai.onnx 17 and com.microsoft 1; inputs are (name, elem_type, shape), outputs names (float
    but for mask_index)."""
    g = helper.make_graph(nodes, "encoder_ops", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [helper.make_tensor_value_info(n, INT32 if n == "mask_index" else FLOAT, None) for n in outputs],
                          [numpy_helper.from_array(v, n) for n, v in initializers])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    m.ir_version = 8
    return m


def encoder_batch(lengths, sequence, token_types=False, holes=False):
    """input_ids, attention_mask (1 for the first `lengths[b]` tokens) and token_type_ids."""
    batch = len(lengths)
    mask = (np.arange(sequence)[None, :] < np.array(lengths)[:, None]).astype(np.int64)
    if holes:
        mask[:, 1::3] = 0
    types = (np.arange(sequence)[None, :] >= sequence // 2).astype(np.int64).repeat(batch, 0) if token_types else \
        np.zeros((batch, sequence), np.int64)
    return {"input_ids": RNG.integers(0, VOCAB, size=(batch, sequence)).astype(np.int64),
            "attention_mask": mask, "token_type_ids": types}


def attention(batch, seq, heads, hidden, mask=None, v_hidden=None, bias=False, **attrs):
    """One Attention node on input [batch, seq, hidden]; mask: (kind, array) for mask_index."""
    v_hidden = v_hidden or hidden
    if v_hidden != hidden:
        attrs["qkv_hidden_sizes"] = [hidden, hidden, v_hidden]
    width = 2 * hidden + v_hidden
    names = ["input", "weights", "bias", "mask_index" if mask is not None else ""]
    inputs = {"input": normal(batch, seq, hidden)}
    graph_inputs = [("input", FLOAT, [batch, seq, hidden])]
    if mask is not None:
        inputs["mask_index"] = mask.astype(np.int32)
        graph_inputs.append(("mask_index", INT32, list(mask.shape)))
    if bias:
        names += ["", "attention_bias"]
        inputs["attention_bias"] = normal(1, heads, seq, seq)
        graph_inputs.append(("attention_bias", FLOAT, [1, heads, seq, seq]))
    node = helper.make_node("Attention", names, ["output"], domain=MS, num_heads=heads, **attrs)
    initializers = [("weights", normal(hidden, width, scale=hidden ** -0.5)), ("bias", normal(width, scale=0.1))]
    return model([node], graph_inputs, ["output"], initializers), inputs


def embed_layer_norm(batch, seq, segments=True, mask=True, position_ids=False, embedding_sum=False):
    hidden = 32
    names = ["input_ids", "segment_ids" if segments else "", "word", "position", "segment" if segments else "",
             "gamma", "beta", "mask" if mask else ""]
    inputs = {"input_ids": RNG.integers(0, 50, size=(batch, seq)).astype(np.int32)}
    if segments:
        inputs["segment_ids"] = RNG.integers(0, 2, size=(batch, seq)).astype(np.int32)
    if mask:
        inputs["mask"] = (np.arange(seq)[None, :] < RNG.integers(1, seq + 1, size=(batch, 1))).astype(np.int32)
    if position_ids:
        names.append("position_ids")
        inputs["position_ids"] = RNG.integers(0, 16, size=(batch, seq)).astype(np.int32)
    initializers = [("word", normal(50, hidden)), ("position", normal(16, hidden)), ("gamma", 1 + normal(hidden, scale=0.1)),
                    ("beta", normal(hidden, scale=0.1))]
    if segments:
        initializers.append(("segment", normal(2, hidden)))
    outputs = ["output", "mask_index"] + (["embedding_sum"] if embedding_sum else [])
    node = helper.make_node("EmbedLayerNormalization", names, outputs, domain=MS, epsilon=1e-5)
    graph_inputs = [(n, INT32, list(v.shape)) for n, v in inputs.items()]
    return model([node], graph_inputs, outputs, initializers), inputs


OP_CASES = {
    "attention_mask_1d_ends": lambda: attention(2, 6, 4, 32, np.array([6, 3])),
    "attention_mask_1d_ends_starts": lambda: attention(2, 6, 2, 32, np.array([6, 5, 1, 2])),
    "attention_mask_2d": lambda: attention(2, 5, 4, 32, np.array([[1, 1, 0, 1, 0], [0, 1, 1, 1, 1]])),
    "attention_mask_3d_unidirectional": lambda: attention(1, 4, 2, 16, RNG.integers(0, 2, size=(1, 4, 4)) | np.eye(4, dtype=np.int64),
                                                          unidirectional=1),
    "attention_unidirectional_v_heads": lambda: attention(2, 5, 2, 32, v_hidden=16, unidirectional=1),
    "attention_scale_filter_bias": lambda: attention(2, 4, 2, 16, np.array([4, 2]), bias=True, scale=0.2,
                                                     mask_filter_value=-300.0),
    "embed_layer_norm_segments_mask": lambda: embed_layer_norm(2, 7),
    "embed_layer_norm_plain": lambda: embed_layer_norm(3, 5, segments=False, mask=False),
    "embed_layer_norm_position_ids_sum": lambda: embed_layer_norm(2, 6, position_ids=True, embedding_sum=True),
}


def main():
    args = compare_arguments(__doc__.splitlines()[0])
    encoder_inputs = {"right padding": encoder_batch([8, 5], 8),
                      "mixed lengths and token types": encoder_batch([11, 3, 7], 11, token_types=True),
                      "mask with holes": encoder_batch([6, 4], 6, holes=True)}
    with tempfile.TemporaryDirectory(prefix="wgml_encoder_ops_") as work:
        cases = [("bert_tiny_ort_optimised", ENCODER, encoder_inputs)] + saved_cases(op_models(OP_CASES), work)
        failures = compare_cases(cases, args.wgml, args.device, TOLERANCE, args.only, ALLOWED_CPU_OPS)
    print(f"{'FAILED' if failures else 'passed'}: {failures} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
