#!/usr/bin/env python3
"""ONNX Runtime's contrib ops (com.microsoft) on small models built here with onnx.helper, through
`wgml run` and onnxruntime's CPU provider (the reference: these ops are defined by its docs).

    .venv/bin/python tools/onnx/compare_contrib_ops.py --wgml build/tools/cli/wgml [--device cpu|webgpu]

One model per op and variant: Gelu, FastGelu with and without its bias, BiasGelu, QuickGelu,
FusedMatMul (transA, transB, alpha, batched), SkipLayerNormalization (with beta and bias, the
input+skip sum output) and SkipSimplifiedLayerNormalization, SimplifiedLayerNormalization and
LayerNormalization before opset 17 (ai.onnx domain, as ONNX Runtime registers them), MatMulNBits
(4-bit with the default zero point and with packed uint8 zero points, 8-bit, 2-bit, a bias input;
block sizes 32 and 128), MatMulIntegerToFloat (uint8 and int8 operands, per-tensor and per-column
scales and zero points, a bias) and DynamicQuantizeMatMul (A quantized at run time; B per tensor or
per column, with and without zero points and bias), MultiHeadAttention (self attention with a bias,
cross attention with a key padding mask and an attention bias, key and value given as heads, a KV
cache with unidirectional masking and the present outputs), DynamicQuantizeLSTM (int8 and uint8
weights, per-direction and per-column scales, bidirectional). Inputs are random with a fixed seed.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_models import compare_built_models  # noqa: E402

FLOAT = TensorProto.FLOAT
MS = "com.microsoft"
RNG = np.random.default_rng(13)


def normal(*shape, scale=1.0):
    return (scale * RNG.normal(size=shape)).astype(np.float32)


def model(nodes, inputs, outputs, initializers=(), opset=17):
    """A model importing ai.onnx `opset` and com.microsoft 1; inputs/outputs are (name, shape) of float."""
    g = helper.make_graph(nodes, "contrib", [helper.make_tensor_value_info(n, FLOAT, s) for n, s in inputs],
                          [helper.make_tensor_value_info(n, FLOAT, None) for n in outputs],
                          [numpy_helper.from_array(v, n) for n, v in initializers])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)])
    m.ir_version = 8
    return m


def unary(op, shape, extra_inputs=(), **attrs):
    """op(x, *extra initializers) -> y."""
    names = ["x"] + [n for n, _ in extra_inputs]
    m = model([helper.make_node(op, names, ["y"], domain=MS, **attrs)], [("x", shape)], ["y"], extra_inputs)
    return m, {"x": normal(*shape, scale=2)}


def fused_mat_mul(trans_a, trans_b, alpha, a_shape, b_shape):
    node = helper.make_node("FusedMatMul", ["a", "b"], ["y"], domain=MS, transA=trans_a, transB=trans_b, alpha=alpha)
    return model([node], [("a", a_shape), ("b", b_shape)], ["y"]), {"a": normal(*a_shape), "b": normal(*b_shape)}


def skip_norm(op, with_beta):
    hidden = 16
    shape = [2, 3, hidden]
    params = [("gamma", normal(hidden)), ("beta", normal(hidden))] if with_beta else [("gamma", normal(hidden))]
    params.append(("bias", normal(hidden)))
    node = helper.make_node(op, ["x", "skip"] + [n for n, _ in params], ["y", "", "", "sum"], domain=MS, epsilon=1e-5)
    m = model([node], [("x", shape), ("skip", shape)], ["y", "sum"], params)
    return m, {"x": normal(*shape, scale=3), "skip": normal(*shape)}


def simplified_layer_norm():
    node = helper.make_node("SimplifiedLayerNormalization", ["x", "scale"], ["y"], axis=-1, epsilon=1e-6)
    return model([node], [("x", [2, 3, 16])], ["y"], [("scale", normal(16))]), {"x": normal(2, 3, 16, scale=3)}


def layer_norm_before_opset_17():
    """LayerNormalization at ai.onnx opset 13: ONNX Runtime's contrib registration of it."""
    node = helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["y"], axis=-1, epsilon=1e-5)
    params = [("scale", normal(16)), ("bias", normal(16))]
    return model([node], [("x", [2, 3, 16])], ["y"], params, opset=13), {"x": normal(2, 3, 16, scale=3)}


def quantized(k, n, bits, block, rng):
    """ONNX Runtime's MatMulNBits operands: packed B [N, K/block, block*bits/8] and scales."""
    q = rng.integers(0, 1 << bits, size=(n, k), dtype=np.uint8)
    per_byte = 8 // bits
    packed = np.zeros((n, k // per_byte), np.uint8)
    for j in range(per_byte):
        packed |= (q[:, j::per_byte] << (j * bits)).astype(np.uint8)
    scales = (rng.uniform(0.01, 0.1, size=(n * (k // block),))).astype(np.float32)
    return packed.reshape(n, k // block, block * bits // 8), scales


def packed_zero_points(n, blocks, bits, rng):
    zeros = rng.integers(0, 1 << bits, size=(n, blocks), dtype=np.uint8)
    per_byte = 8 // bits
    padded = np.zeros((n, -(-blocks // per_byte) * per_byte), np.uint8)
    padded[:, :blocks] = zeros
    packed = np.zeros((n, padded.shape[1] // per_byte), np.uint8)
    for j in range(per_byte):
        packed |= (padded[:, j::per_byte] << (j * bits)).astype(np.uint8)
    return packed


def mat_mul_n_bits(k, n, bits, block, zero_points=False, bias=False):
    rng = np.random.default_rng(k * n + bits + block)
    b, scales = quantized(k, n, bits, block, rng)
    params = [("b", b), ("scales", scales)]
    names = ["a", "b", "scales"]
    if zero_points:
        params.append(("zero_points", packed_zero_points(n, k // block, bits, rng)))
        names.append("zero_points")
    if bias:
        params.append(("bias", normal(n)))
        names += [""] * (5 - len(names)) + ["bias"]
    node = helper.make_node("MatMulNBits", names, ["y"], domain=MS, K=k, N=n, bits=bits, block_size=block)
    return model([node], [("a", [2, 3, k])], ["y"], params), {"a": normal(2, 3, k)}


def integer_matrix(dtype, *shape, rng):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, size=shape).astype(dtype)


def integer_b_operands(k, n, dtype, per_column, zero_point, bias, rng):
    """B [K, N] of `dtype` with b_scale (and b_zero_point, bias) per tensor or per column."""
    columns = (n,) if per_column else ()
    params = [("b", integer_matrix(dtype, k, n, rng=rng)),
              ("b_scale", rng.uniform(0.001, 0.01, size=columns).astype(np.float32))]
    params.append(("b_zero_point", integer_matrix(dtype, *columns, rng=rng) if zero_point else None))
    params.append(("bias", normal(n) if bias else None))
    return params


def node_inputs(params):
    """Input names in order, "" for an absent optional; the initializers that are present."""
    return [name if value is not None else "" for name, value in params], [(n, v) for n, v in params if v is not None]


def mat_mul_integer_to_float(a_dtype, b_dtype, per_column, zero_points, bias):
    rng = np.random.default_rng(7 + per_column + 2 * zero_points + 4 * bias)
    a_shape, k, n = [2, 3, 16], 16, 5
    b = integer_b_operands(k, n, b_dtype, per_column, zero_points, bias, rng)
    params = [b[0], ("a_scale", np.float32(0.02)), b[1],
              ("a_zero_point", integer_matrix(a_dtype, rng=rng) if zero_points else None), b[2], b[3]]
    names, initializers = node_inputs(params)
    node = helper.make_node("MatMulIntegerToFloat", ["a"] + names, ["y"], domain=MS)
    g = helper.make_graph([node], "contrib", [helper.make_tensor_value_info("a", helper.np_dtype_to_tensor_dtype(np.dtype(a_dtype)), a_shape)],
                          [helper.make_tensor_value_info("y", FLOAT, None)],
                          [numpy_helper.from_array(np.asarray(v), name) for name, v in initializers])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    m.ir_version = 8
    return m, {"a": integer_matrix(a_dtype, *a_shape, rng=rng)}


def dynamic_quantize_mat_mul(b_dtype, per_column, zero_point, bias):
    rng = np.random.default_rng(11 + per_column + 2 * zero_point + 4 * bias)
    k, n = 32, 6
    names, initializers = node_inputs(integer_b_operands(k, n, b_dtype, per_column, zero_point, bias, rng))
    node = helper.make_node("DynamicQuantizeMatMul", ["a"] + names, ["y"], domain=MS)
    initializers = [(name, np.asarray(v)) for name, v in initializers]
    return model([node], [("a", [2, 3, k])], ["y"], initializers), {"a": normal(2, 3, k, scale=2)}


def multi_head_attention(q_len, kv_shape, bias=False, key_mask=None, attention_bias=False, past=0, unidirectional=0):
    """MultiHeadAttention with 2 heads of size 8 over query [2, q_len, 16]; kv_shape is key's and
    value's ([2, L, 16], or [2, 2, L, 8] as heads); key_mask "lengths" ([B]) or "rows" ([B, L])."""
    batch, heads, size = 2, 2, 8
    keys = kv_shape[-2] if len(kv_shape) == 4 else kv_shape[1]
    inputs = {"query": normal(batch, q_len, heads * size), "key": normal(*kv_shape), "value": normal(*kv_shape)}
    params = []
    names = ["query", "key", "value"]
    if bias:
        params.append(("bias", normal(3 * heads * size)))
    names.append("bias" if bias else "")
    total = past + keys
    if key_mask == "lengths":
        params.append(("key_padding_mask", np.array([total, total - 2], np.int32)))
    elif key_mask == "rows":
        rows = np.ones((batch, total), np.int32)
        rows[1, -3:] = 0
        params.append(("key_padding_mask", rows))
    names.append("key_padding_mask" if key_mask else "")
    if attention_bias:
        params.append(("attention_bias", normal(1, heads, q_len, total)))
    names.append("attention_bias" if attention_bias else "")
    if past:
        inputs["past_key"] = normal(batch, heads, past, size)
        inputs["past_value"] = normal(batch, heads, past, size)
        names += ["past_key", "past_value"]
    outputs = ["y", "present_key", "present_value"] if past else ["y"]
    node = helper.make_node("MultiHeadAttention", names, outputs, domain=MS, num_heads=heads, unidirectional=unidirectional)
    return model([node], [(n, list(v.shape)) for n, v in inputs.items()], outputs, params), inputs


def dynamic_quantize_lstm(direction, weight_dtype, per_column, zero_points):
    """DynamicQuantizeLSTM (hidden 8, input 6, sequence 5, batch 1): W [dirs, input, 4H] and R
    [dirs, H, 4H] quantized per direction or per column, with a bias and initial states. One batch
    row: onnxruntime quantizes h over the rows each of its threads takes, so with several rows its
    result depends on its thread count (wgml quantizes each row on its own)."""
    rng = np.random.default_rng(23 + per_column + 2 * zero_points)
    dirs, hidden, size, seq, batch = (2 if direction == "bidirectional" else 1), 8, 6, 5, 1
    scale_shape = (dirs, 4 * hidden) if per_column else (dirs,)
    params = [("W", integer_matrix(weight_dtype, dirs, size, 4 * hidden, rng=rng)),
              ("R", integer_matrix(weight_dtype, dirs, hidden, 4 * hidden, rng=rng)),
              ("B", normal(dirs, 8 * hidden, scale=0.1))]
    w_scale = rng.uniform(0.002, 0.01, size=scale_shape).astype(np.float32)
    r_scale = rng.uniform(0.002, 0.01, size=scale_shape).astype(np.float32)
    # onnxruntime takes one zero point per weight (all equal; int8 weights' must be 0).
    w_zero = np.full(scale_shape, 128 if zero_points else 0, weight_dtype)
    r_zero = np.full(scale_shape, 120 if zero_points else 0, weight_dtype)
    params += [("W_scale", w_scale), ("W_zero_point", w_zero), ("R_scale", r_scale), ("R_zero_point", r_zero)]
    state = [dirs, batch, hidden]
    inputs = {"X": normal(seq, batch, size), "initial_h": normal(*state, scale=0.5), "initial_c": normal(*state, scale=0.5)}
    names = ["X", "W", "R", "B", "", "initial_h", "initial_c", "", "W_scale", "W_zero_point", "R_scale", "R_zero_point"]
    node = helper.make_node("DynamicQuantizeLSTM", names, ["Y", "Y_h", "Y_c"], domain=MS, hidden_size=hidden,
                            direction=direction)
    return model([node], [(n, list(v.shape)) for n, v in inputs.items()], ["Y", "Y_h", "Y_c"], params), inputs


def with_kind(case):
    model, inputs = case
    return model, {"random": inputs}


CASES = {
    "gelu": lambda: unary("Gelu", [2, 3, 8]),
    "fast_gelu": lambda: unary("FastGelu", [2, 3, 8]),
    "fast_gelu_bias": lambda: unary("FastGelu", [2, 3, 8], [("bias", normal(8))]),
    "bias_gelu": lambda: unary("BiasGelu", [2, 3, 8], [("bias", normal(8))]),
    "quick_gelu": lambda: unary("QuickGelu", [2, 3, 8]),
    "quick_gelu_alpha": lambda: unary("QuickGelu", [2, 3, 8], alpha=1.5),
    "fused_mat_mul": lambda: fused_mat_mul(0, 0, 1.0, [3, 4], [4, 5]),
    "fused_mat_mul_trans": lambda: fused_mat_mul(1, 1, 0.5, [2, 4, 3], [5, 4]),
    "fused_mat_mul_batched": lambda: fused_mat_mul(0, 1, 0.125, [2, 1, 3, 4], [3, 5, 4]),
    "skip_layer_norm": lambda: skip_norm("SkipLayerNormalization", True),
    "skip_simplified_layer_norm": lambda: skip_norm("SkipSimplifiedLayerNormalization", False),
    "simplified_layer_norm": simplified_layer_norm,
    "layer_norm_opset_13": layer_norm_before_opset_17,
    "mat_mul_4bit": lambda: mat_mul_n_bits(64, 8, 4, 32),
    "mat_mul_4bit_zero_points": lambda: mat_mul_n_bits(96, 8, 4, 32, zero_points=True),
    "mat_mul_4bit_block_128_bias": lambda: mat_mul_n_bits(256, 6, 4, 128, bias=True),
    "mat_mul_8bit_zero_points": lambda: mat_mul_n_bits(64, 8, 8, 32, zero_points=True),
    "mat_mul_2bit": lambda: mat_mul_n_bits(128, 4, 2, 64),
    "mat_mul_integer_to_float_u8": lambda: mat_mul_integer_to_float(np.uint8, np.uint8, False, True, False),
    "mat_mul_integer_to_float_s8_columns_bias": lambda: mat_mul_integer_to_float(np.uint8, np.int8, True, True, True),
    "mat_mul_integer_to_float_no_zero_points": lambda: mat_mul_integer_to_float(np.int8, np.int8, True, False, False),
    "dynamic_quantize_mat_mul": lambda: dynamic_quantize_mat_mul(np.int8, False, False, False),
    "dynamic_quantize_mat_mul_columns_bias": lambda: dynamic_quantize_mat_mul(np.int8, True, False, True),
    "dynamic_quantize_mat_mul_u8_zero_points": lambda: dynamic_quantize_mat_mul(np.uint8, True, True, True),
    "dynamic_quantize_lstm": lambda: dynamic_quantize_lstm("forward", np.int8, False, False),
    "dynamic_quantize_lstm_u8_columns_zero_points": lambda: dynamic_quantize_lstm("forward", np.uint8, True, True),
    "dynamic_quantize_lstm_bidirectional": lambda: dynamic_quantize_lstm("bidirectional", np.int8, True, False),
    "multi_head_attention_bias": lambda: multi_head_attention(4, [2, 4, 16], bias=True),
    "multi_head_attention_cross_masks": lambda: multi_head_attention(3, [2, 5, 16], key_mask="rows", attention_bias=True),
    "multi_head_attention_key_lengths": lambda: multi_head_attention(3, [2, 6, 16], bias=True, key_mask="lengths"),
    "multi_head_attention_heads_kv": lambda: multi_head_attention(3, [2, 2, 5, 8]),
    "multi_head_attention_past": lambda: multi_head_attention(2, [2, 2, 16], bias=True, past=3, unidirectional=1),
}


def main():
    compare_built_models(((name, *with_kind(make())) for name, make in CASES.items()), 1e-4, __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
