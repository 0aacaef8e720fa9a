"""Neural-network nodes: Addmm, norms, Softmax, Rope, Sdpa, UpdateAndAttend, convolutions."""
import mlx.core as mx

from data import Data
from program import Case, scalar_type


def addmm_cases():
    d = Data("Addmm")
    out = []
    for name, a, b, bias, alpha, beta in (
            ("no_bias", d.floats((3, 4)), d.floats((4, 5)), None, 1.0, 1.0),
            ("bias_vector", d.floats((2, 3)), d.floats((3, 4)), d.floats((4,)), 1.0, 1.0),
            ("alpha_beta", d.floats((2, 3)), d.floats((3, 2)), d.floats((2, 2)), 0.5, 2.0),
            ("f16", d.floats((3, 8), mx.float16), d.floats((8, 2), mx.float16), d.floats((2,), mx.float16), 1.0, 1.0),
            ("batched_no_bias", d.floats((2, 3, 4)), d.floats((4, 2)), None, 1.0, 1.0),
            ("no_bias_alpha_ignored", d.floats((2, 2)), d.floats((2, 2)), None, 3.0, 1.0),
            ("empty_k", d.floats((2, 0)), d.floats((0, 3)), d.floats((3,)), 1.0, 1.0)):
        c = Case(name)
        ia, ib = c.input(a), c.input(b)
        ibias = c.input(bias) if bias is not None else None
        expected = mx.addmm(bias, a, b, alpha=alpha, beta=beta) if bias is not None else mx.matmul(a, b)
        c.node("AddmmNode", mat1=ia, mat2=ib, out=c.output(expected), bias=ibias, alpha=alpha, beta=beta)
        out.append(c)
    return out


def norm_cases(kind):
    d = Data(kind)
    out = []
    for name, x, with_w, with_b, eps in (("f32", d.floats((3, 8)), True, True, 1e-5),
                                         ("no_weight", d.floats((2, 3, 6)), False, False, 1e-6),
                                         ("f16", d.floats((4, 16), mx.float16), True, True, 1e-5),
                                         ("bf16", d.floats((2, 32), mx.bfloat16), True, False, 1e-5),
                                         ("large_eps", d.floats((2, 5)), True, True, 0.5),
                                         ("row_of_one", d.floats((3, 1)), True, True, 1e-5),
                                         # Rows longer than a workgroup: vec4 rows, odd rows.
                                         ("long_row", d.floats((3, 1000)), True, True, 1e-5),
                                         ("odd_long_row", d.floats((2, 1027)), True, True, 1e-5),
                                         ("f16_long_row", d.floats((2, 2048), mx.float16), True, False, 1e-5),
                                         ("f16_odd_no_weight", d.floats((3, 13), mx.float16), False, False, 1e-5),
                                         ("weight_only", d.floats((5, 24)), True, False, 1e-5),
                                         # A mean away from zero (as far as MLX's own f32 sums stay accurate): no cancellation.
                                         ("mean_of_five", d.floats((4, 512), lo=4.0, hi=6.0), True, True, 1e-5)):
        dim = x.shape[-1]
        w = d.floats((dim,), x.dtype) if with_w else None
        b = d.floats((dim,), x.dtype) if with_b else None
        c = Case(name)
        ix = c.input(x)
        iw = c.input(w) if w is not None else None
        if kind == "RMSNormNode":
            c.node(kind, x=ix, weight=iw, out=c.output(mx.fast.rms_norm(x, w, eps)), eps=eps)
        else:
            ib = c.input(b) if b is not None else None
            c.node(kind, x=ix, out=c.output(mx.fast.layer_norm(x, w, b, eps)), weight=iw, bias=ib, eps=eps)
        out.append(c)
    # Rows of a transposed (non-contiguous in MLX) input.
    x, w = d.floats((12, 6)), d.floats((12,))
    c = Case("transposed_rows")
    ix, iw, t = c.input(x), c.input(w), c.temp()
    c.node("TransposeNode", x=ix, out=t, perm=[1, 0])
    if kind == "RMSNormNode":
        c.node(kind, x=t, weight=iw, out=c.output(mx.fast.rms_norm(x.T, w, 1e-5)), eps=1e-5)
    else:
        c.node(kind, x=t, out=c.output(mx.fast.layer_norm(x.T, w, None, 1e-5)), weight=iw, eps=1e-5)
    return out + [c]


def softmax_cases():
    d = Data("Softmax")
    out = []
    for name, x, axis, precise in (("last", d.floats((3, 7), lo=-5, hi=5), -1, False),
                                   ("axis0", d.floats((4, 3)), 0, False),
                                   ("f16", d.floats((2, 9), mx.float16, -5, 5), -1, False),
                                   ("f16_precise", d.floats((2, 9), mx.float16, -5, 5), -1, True),
                                   ("bf16", d.floats((3, 5), mx.bfloat16, -5, 5), 1, False),
                                   ("neg_inf", mx.array([[0.0, -float("inf"), 1.0], [-float("inf"), 2.0, 2.0]]), -1, False),
                                   ("middle_axis", d.floats((2, 3, 4)), 1, True),
                                   ("long_rows", d.floats((4, 4096), lo=-8, hi=8), -1, False),
                                   ("odd_rows", d.floats((3, 1023), lo=-8, hi=8), -1, False),
                                   ("axis0", d.floats((300, 7)), 0, False),
                                   ("f16_long_rows", d.floats((2, 3000), mx.float16, -5, 5), -1, False)):
        c = Case(name)
        ix = c.input(x)
        c.node("SoftmaxNode", x=ix, out=c.output(mx.softmax(x, axis, precise=precise)), axis=axis, precise=precise)
        out.append(c)
    return out


def rope_cases():
    d = Data("Rope")
    out = []
    for name, shape, dims, trad, base, scale, offset, dtype, with_freqs in (
            ("default", (1, 2, 5, 8), 8, False, 10000.0, 1.0, 3, mx.float32, False),
            ("traditional", (2, 1, 4, 6), 6, True, 10000.0, 1.0, 0, mx.float32, False),
            ("partial_dims", (1, 2, 3, 10), 4, False, 500000.0, 1.0, 7, mx.float32, False),
            ("scaled_f16", (1, 1, 6, 8), 8, False, 10000.0, 0.5, 100, mx.float16, False),
            ("bf16_traditional", (1, 2, 4, 8), 8, True, 10000.0, 1.0, 2, mx.bfloat16, False),
            ("freqs", (1, 2, 3, 8), 8, False, 0.0, 1.0, 1, mx.float32, True),
            ("rank3", (2, 4, 6), 6, False, 10000.0, 1.0, 5, mx.float32, False),
            ("head_dim_64", (1, 4, 7, 64), 64, False, 10000.0, 1.0, 12, mx.float32, False),
            ("head_dim_128_f16", (1, 2, 5, 128), 128, False, 500000.0, 1.0, 3, mx.float16, False),
            ("traditional_partial", (2, 2, 3, 16), 8, True, 10000.0, 1.0, 4, mx.float32, False),
            ("large_offset", (1, 2, 3, 32), 32, False, 10000.0, 1.0, 250, mx.float32, False),
            ("f16_traditional_freqs", (1, 2, 4, 8), 8, True, 0.0, 2.0, 6, mx.float16, True)):
        x = d.floats(shape, dtype)
        freqs = d.floats((dims // 2,), mx.float32, 1.0, 100.0) if with_freqs else None
        expected = mx.fast.rope(x, dims, traditional=trad, base=None if with_freqs else base, scale=scale,
                                offset=offset, freqs=freqs)
        c = Case(name)
        ix = c.input(x)
        v = c.int_input(offset)
        ifreqs = c.input(freqs) if freqs is not None else None
        c.node("RopeNode", x=ix, out=c.output(expected), dims=dims, offset={"vid": v, "is_vid": True}, freqs=ifreqs,
               traditional=trad, base=base, scale=scale)
        out.append(c)
    c = Case("tensor_offset")
    x = d.floats((1, 2, 3, 4))
    expected = mx.fast.rope(x, 4, traditional=False, base=10000.0, scale=1.0, offset=mx.array(2))
    ix, io = c.input(x), c.input(mx.array(2, mx.int32))
    c.node("RopeNode", x=ix, out=c.output(expected), dims=4, offset={"tid": io}, base=10000.0)
    out.append(c)
    # An offset per batch element (MLX: offset of shape [B]), int64, f16 x.
    c = Case("tensor_offset_per_batch")
    x = d.floats((3, 2, 4, 16), mx.float16)
    offsets = mx.array([0, 5, 17], mx.int64)
    expected = mx.fast.rope(x, 16, traditional=False, base=10000.0, scale=1.0, offset=offsets.astype(mx.int32))
    ix, io = c.input(x), c.input(offsets)
    c.node("RopeNode", x=ix, out=c.output(expected), dims=16, offset={"tid": io}, base=10000.0)
    return out + [c]


def sdpa_reference(q, k, v, scale, mask=None, causal=False):
    if mask is not None and mask.dtype != mx.bool_ and mask.dtype != q.dtype:
        mask = mask.astype(q.dtype)
    mode = "causal" if causal else mask
    return mx.fast.scaled_dot_product_attention(q, k, v, scale=scale, mask=mode)


def sdpa_cases():
    d = Data("Sdpa")
    out = []
    for name, B, Hq, Hkv, Lq, Lk, D, dtype, mask_kind, causal in (
            ("plain", 1, 2, 2, 3, 3, 8, mx.float32, None, False),
            ("causal_prefill", 2, 2, 1, 4, 4, 8, mx.float32, None, True),
            ("causal_bottom_right", 1, 4, 2, 2, 5, 16, mx.float32, None, True),
            ("bool_mask", 1, 2, 2, 3, 4, 8, mx.float32, "bool", False),
            ("additive_mask_f16", 1, 2, 1, 2, 6, 8, mx.float16, "float", False),
            ("decode_gqa_bf16", 1, 4, 1, 1, 7, 16, mx.bfloat16, None, False),
            ("f16_causal", 1, 2, 2, 5, 5, 32, mx.float16, None, True),
            ("head_dim_64_one_key", 1, 2, 2, 3, 1, 64, mx.float32, None, False),
            ("head_dim_128_keys_300", 1, 2, 1, 5, 300, 128, mx.float32, None, False),
            ("gqa_8_2_decode_f16", 1, 8, 2, 1, 300, 64, mx.float16, None, False),
            ("decode_long_kv", 1, 4, 1, 1, 1500, 64, mx.float32, None, False),
            ("decode_batch2_d128_f16", 2, 4, 2, 1, 257, 128, mx.float16, None, False),
            ("causal_prefill_37", 1, 4, 2, 37, 37, 64, mx.float32, None, True),
            ("causal_prefill_37_f16", 1, 8, 2, 37, 37, 128, mx.float16, None, True),
            ("causal_chunk_4_of_300", 1, 4, 2, 4, 300, 64, mx.float16, None, True),
            ("bool_mask_keys_300", 1, 2, 2, 4, 300, 64, mx.float32, "bool", False),
            ("additive_mask_4d", 2, 2, 2, 3, 40, 32, mx.float32, "float4d", False),
            ("odd_head_dim_causal", 1, 2, 1, 3, 33, 6, mx.float32, None, True),
            ("head_dim_256", 1, 2, 2, 9, 20, 256, mx.float32, None, False),
            # decode variant: chunks of several steps of 32 keys (the last ragged), many blocks of rows
            ("decode_multi_step_chunks_f16", 2, 32, 8, 1, 2001, 64, mx.float16, None, False),
            ("decode_d256_causal", 1, 8, 2, 3, 333, 256, mx.float32, None, True),
            ("decode_d100_bool_mask", 1, 8, 8, 2, 3000, 100, mx.float16, "bool", False),
            ("decode_d70_scalar_rows", 1, 12, 2, 2, 1100, 70, mx.float32, None, True)):
        q, k, v = d.floats((B, Hq, Lq, D), dtype), d.floats((B, Hkv, Lk, D), dtype), d.floats((B, Hkv, Lk, D), dtype)
        scale = D ** -0.5
        mask = None
        if mask_kind == "bool":
            mask = d.ints((1, 1, Lq, Lk), mx.bool_)
            mask[..., 0] = True
        elif mask_kind == "float":
            mask = d.floats((Lq, Lk), mx.float32, -2, 0)
        elif mask_kind == "float4d":
            mask = d.floats((B, 1, Lq, Lk), mx.float32, -3, 1)
        c = Case(name)
        iq, ik, iv_ = c.input(q), c.input(k), c.input(v)
        im = c.input(mask) if mask is not None else None
        c.node("SdpaNode", q=iq, k=ik, v=iv_, out=c.output(sdpa_reference(q, k, v, scale, mask, causal)), scale=scale,
               mask=im, causal=causal)
        out.append(c)
    return out


def update_and_attend_cases():
    """The CPU backend's off-graph KV cache is a flat history per layer: step writes K/V at
    [position, position + T) and attends over [0, position + T), causally when T > 1."""
    d = Data("UpdateAndAttend")
    out = []
    for name, Hq, Hkv, D, steps, dtype, out_dtype in (
            ("prefill_then_decode", 2, 2, 8, [3, 1, 1], mx.float32, None),
            ("gqa_chunks", 4, 2, 8, [2, 2, 1], mx.float32, None),
            ("f16_out_f32", 2, 1, 16, [4, 1], mx.float16, mx.float32),
            ("single_decode_steps", 2, 2, 4, [1, 1, 1, 1], mx.float32, None),
            ("bf16", 2, 2, 8, [2, 1], mx.bfloat16, None),
            # Past the cache's length again and again (the GPU's grows by doubling), then a chunk.
            ("long_decode", 4, 2, 8, [5] + [1] * 16 + [3], mx.float32, None)):
        # Attention computed in `dtype` and cast is only as close as `dtype`.
        c = Case(name, compare="close" if out_dtype is None else f"close:{str(dtype).split('.')[-1]}")
        scale = D ** -0.5
        ks, vs, position = [], [], 0
        for i, T in enumerate(steps):
            q, k, v = d.floats((1, Hq, T, D), dtype), d.floats((1, Hkv, T, D), dtype), d.floats((1, Hkv, T, D), dtype)
            ks.append(k)
            vs.append(v)
            K, V = mx.concatenate(ks, 2), mx.concatenate(vs, 2)
            res = sdpa_reference(q, K, V, scale, causal=T > 1)
            if out_dtype is not None:
                res = res.astype(out_dtype)
            pos = mx.array([position], mx.int64)
            if i == 0:
                # The sequence axis changes between steps: dynamic in the metadata.
                iq, ik, iv_ = (c.input(a, dynamic_dims=[2]) for a in (q, k, v))
                ip = c.input(pos)
                c.node("UpdateAndAttendNode", q=iq, k=ik, v=iv_, position=ip, out=c.output(res), layer_id=0, scale=scale,
                       out_dtype=scalar_type(out_dtype) if out_dtype is not None else None)
            else:
                c.add_step([q, k, v, pos], [res])
            position += T
        out.append(c)
    return out


def conv_cases(kind, nd, transpose):
    d = Data(kind)
    axes = {1: [""], 2: ["_h", "_w"], 3: ["_d", "_h", "_w"]}[nd]
    out = []
    configs = (("plain", 1, 0, 1, 0, 1, mx.float32), ("stride2_pad1", 2, 1, 1, 1, 1, mx.float32),
               ("dilation2", 1, 1, 2, 0, 1, mx.float32), ("groups2", 1, 0, 1, 0, 2, mx.float32),
               ("f16", 1, 1, 1, 0, 1, mx.float16), ("stride2_outpad1", 2, 0, 1, 1, 1, mx.float32),
               ("bf16", 1, 1, 1, 0, 1, mx.bfloat16))
    for name, stride, pad, dil, outpad, groups, dtype in configs:
        if not transpose and name == "stride2_outpad1":
            continue
        spatial = {1: (7,), 2: (5, 6), 3: (4, 3, 5)}[nd]
        ksize = {1: (3,), 2: (3, 2), 3: (2, 2, 3)}[nd]
        cin, cout = 4, 6
        x = d.floats((2,) + spatial + (cin,), dtype)
        if transpose:
            w = d.floats((cout,) + ksize + (cin // groups,), dtype)
            fn = {1: mx.conv_transpose1d, 2: mx.conv_transpose2d, 3: mx.conv_transpose3d}[nd]
            try:
                expected = fn(x, w, stride=stride, padding=pad, dilation=dil, output_padding=outpad, groups=groups)
            except ValueError:
                expected = None
        else:
            w = d.floats((cout,) + ksize + (cin // groups,), dtype)
            fn = {1: mx.conv1d, 2: mx.conv2d, 3: mx.conv3d}[nd]
            try:
                expected = fn(x, w, stride=stride, padding=pad, dilation=dil, groups=groups)
            except ValueError:  # MLX rejects grouped 3-D convolutions; so must we
                expected = None
        attrs = {"groups": groups}
        for ax in axes:
            attrs["stride" + ax], attrs["padding" + ax], attrs["dilation" + ax] = stride, pad, dil
            if transpose:
                attrs["output_padding" + ax] = outpad
        c = Case(name)
        ix, iw = c.input(x), c.input(w)
        c.node(kind, x=ix, w=iw, out=c.output(expected), **attrs)
        if expected is None:
            c.expect_error("groups")
        out.append(c)
    return out + conv_tile_cases(kind, nd, transpose)


def conv_tile_cases(kind, nd, transpose):
    """Odd sizes that leave partial GPU tiles (64 positions x 64 channels, 16 of K per step), K over
    many steps, stride 2 with padding 1, groups 2, f16."""
    d = Data(kind + "Tiles")
    spatial = {1: (37,), 2: (17, 19), 3: (5, 7, 6)}[nd]
    ksize = {1: (3,), 2: (3, 3), 3: (3, 3, 3)}[nd]
    out = []
    for name, cin, cout, stride, pad, groups, dtype in (
            ("k3_s2_p1_5to7", 5, 7, 2, 1, 1, mx.float32), ("k3_s2_p1_5to7_f16", 5, 7, 2, 1, 1, mx.float16),
            ("k3_s2_p1_groups2_f16", 6, 8, 2, 1, 2, mx.float16), ("wide_70to130", 70, 130, 1, 1, 1, mx.float32)):
        if nd == 3 and groups != 1:
            continue
        x = d.floats((1,) + spatial + (cin,), dtype)
        # Small weights keep the long f32 sums (K up to 1890) well inside the comparison's tolerance.
        w = d.floats((cout,) + ksize + (cin // groups,), dtype, -0.1, 0.1)
        if transpose:
            fn = {1: mx.conv_transpose1d, 2: mx.conv_transpose2d, 3: mx.conv_transpose3d}[nd]
            expected = fn(x, w, stride=stride, padding=pad, groups=groups)
        else:
            fn = {1: mx.conv1d, 2: mx.conv2d, 3: mx.conv3d}[nd]
            expected = fn(x, w, stride=stride, padding=pad, groups=groups)
        attrs = {"groups": groups}
        for ax in {1: [""], 2: ["_h", "_w"], 3: ["_d", "_h", "_w"]}[nd]:
            attrs["stride" + ax], attrs["padding" + ax] = stride, pad
        c = Case(name)
        ix, iw = c.input(x), c.input(w)
        c.node(kind, x=ix, w=iw, out=c.output(expected), **attrs)
        out.append(c)
    return out


def cases():
    out = {
        "AddmmNode": addmm_cases(),
        "RMSNormNode": norm_cases("RMSNormNode"),
        "LayerNormNode": norm_cases("LayerNormNode"),
        "SoftmaxNode": softmax_cases(),
        "RopeNode": rope_cases(),
        "SdpaNode": sdpa_cases(),
        "UpdateAndAttendNode": update_and_attend_cases(),
    }
    for nd in (1, 2, 3):
        out[f"Conv{nd}DNode"] = conv_cases(f"Conv{nd}DNode", nd, False)
        out[f"ConvTranspose{nd}DNode"] = conv_cases(f"ConvTranspose{nd}DNode", nd, True)
    return out
