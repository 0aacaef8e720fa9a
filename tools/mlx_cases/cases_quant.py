"""Quantized nodes (affine at every bit width MLX supports, nvfp4, mxfp4, mxfp8), GatherMm,
GatherQmm and RandomBits."""
import mlx.core as mx

from data import Data
from program import Case, iv, scalar_type

# (mode, bits, group size) combinations MLX quantizes.
AFFINE = [(b, g) for b in (2, 3, 4, 5, 6, 8) for g in (32, 64, 128)]
FP_MODES = [("nvfp4", 4, 16), ("mxfp4", 4, 32), ("mxfp8", 8, 32)]


def quantize(w, mode, bits, group):
    parts = mx.quantize(w, group_size=group, bits=bits, mode=mode)
    return parts[0], parts[1], (parts[2] if mode == "affine" else None)


def dequantize_cases():
    d = Data("Dequantize")
    out = []
    for bits, group in AFFINE:
        dtype = (mx.float32, mx.float16, mx.bfloat16)[bits % 3]
        w = d.floats((3, 2 * group), dtype)
        q, s, b = quantize(w, "affine", bits, group)
        c = Case(f"affine_b{bits}_g{group}_{dtype}".replace("mlx.core.", ""))
        iq, is_, ib = c.input(q), c.input(s), c.input(b)
        c.node("DequantizeNode", w=iq, scales=is_, out=c.output(mx.dequantize(q, s, b, group, bits, mode="affine")),
               biases=ib, group_size=group, bits=bits, mode="affine")
        out.append(c)
    for mode, bits, group in FP_MODES:
        for name, dtype in (("default_dtype", None), ("to_f32", mx.float32), ("to_f16", mx.float16)):
            w = d.floats((2, 4 * group), mx.float32, -6, 6)
            q, s, _ = quantize(w, mode, bits, group)
            c = Case(f"{mode}_{name}")
            iq, is_ = c.input(q), c.input(s)
            expected = mx.dequantize(q, s, None, group, bits, mode=mode, dtype=dtype)
            c.node("DequantizeNode", w=iq, scales=is_, out=c.output(expected), group_size=group, bits=bits, mode=mode,
                   dtype=scalar_type(dtype) if dtype is not None else None)
            out.append(c)
    # Rows of several groups, a batch of matrices, every width (the GPU expands 32 values a chunk).
    for i, (bits, group) in enumerate(AFFINE):
        dtype = (mx.bfloat16, mx.float16, mx.float32)[i % 3]
        w = d.floats((2, 3, 3 * group) if i % 2 else (5, 4 * group), dtype)
        q, s, b = quantize(w, "affine", bits, group)
        c = Case(f"rows_b{bits}_g{group}_{dtype}".replace("mlx.core.", ""))
        iq, is_, ib = c.input(q), c.input(s), c.input(b)
        c.node("DequantizeNode", w=iq, scales=is_, out=c.output(mx.dequantize(q, s, b, group, bits, mode="affine")),
               biases=ib, group_size=group, bits=bits, mode="affine")
        out.append(c)
    out += dequantize_conversion_cases(d)
    w = d.floats((2, 64), mx.float32, -6, 6)
    gs = mx.array([0.75], mx.float32)
    q, s = mx.quantize(w, group_size=16, bits=4, mode="nvfp4", global_scale=gs)[:2]
    c = Case("nvfp4_global_scale")
    iq, is_, ig = c.input(q), c.input(s), c.input(gs)
    c.node("DequantizeNode", w=iq, scales=is_, out=c.output(mx.dequantize(q, s, None, 16, 4, mode="nvfp4", global_scale=gs)),
           group_size=16, bits=4, mode="nvfp4", global_scale=ig)
    out.append(c)
    return out


def dequantize_conversion_cases(d):
    """The `dtype` conversions: affine computed in the scales' dtype, then cast (MLX); the fp modes
    to bfloat16 and from half-precision weights, a batch of matrices, several chunks a row; nvfp4
    with a global scale on a batch. The GPU expands 32 values a chunk (two nvfp4 groups)."""
    out = []
    for bits, group, wtype, dtype in ((4, 32, mx.bfloat16, mx.float32), (8, 64, mx.float16, mx.bfloat16),
                                      (3, 32, mx.float32, mx.float16), (6, 128, mx.bfloat16, mx.float16),
                                      (2, 64, mx.float16, mx.float32)):
        w = d.floats((3, 2 * group), wtype)
        q, s, b = quantize(w, "affine", bits, group)
        c = Case(f"affine_b{bits}_g{group}_{wtype}_to_{dtype}".replace("mlx.core.", ""))
        iq, is_, ib = c.input(q), c.input(s), c.input(b)
        expected = mx.dequantize(q, s, b, group, bits, mode="affine", dtype=dtype)
        c.node("DequantizeNode", w=iq, scales=is_, out=c.output(expected), biases=ib, group_size=group, bits=bits,
               mode="affine", dtype=scalar_type(dtype))
        out.append(c)
    for mode, bits, group in FP_MODES:
        for wtype, dtype, shape in ((mx.bfloat16, mx.bfloat16, (2, 3, 6 * group)),
                                    (mx.float16, mx.float16, (5, 2 * group)), (mx.float32, None, (3, 96))):
            w = d.floats(shape, wtype, -20, 20)
            q, s, _ = quantize(w, mode, bits, group)
            c = Case(f"{mode}_{wtype}_rows{shape[-2]}_to_{dtype or 'default'}".replace("mlx.core.", ""))
            iq, is_ = c.input(q), c.input(s)
            expected = mx.dequantize(q, s, None, group, bits, mode=mode, dtype=dtype)
            c.node("DequantizeNode", w=iq, scales=is_, out=c.output(expected), group_size=group, bits=bits, mode=mode,
                   dtype=scalar_type(dtype) if dtype is not None else None)
            out.append(c)
    w = d.floats((2, 3, 96), mx.float32, -6, 6)
    gs = mx.array([3.5], mx.float32)
    q, s = mx.quantize(w, group_size=16, bits=4, mode="nvfp4", global_scale=gs)[:2]
    c = Case("nvfp4_global_scale_batch_to_f16")
    iq, is_, ig = c.input(q), c.input(s), c.input(gs)
    expected = mx.dequantize(q, s, None, 16, 4, mode="nvfp4", global_scale=gs, dtype=mx.float16)
    c.node("DequantizeNode", w=iq, scales=is_, out=c.output(expected), group_size=16, bits=4, mode="nvfp4",
           global_scale=ig, dtype=scalar_type(mx.float16))
    out.append(c)
    return out


def qmm_configs():
    return ([("affine", b, g) for b, g in ((4, 64), (3, 32), (8, 128), (2, 32), (5, 64), (6, 32))] +
            FP_MODES)


def quantized_matmul_cases():
    d = Data("QuantizedMatmul")
    out = []
    for i, (mode, bits, group) in enumerate(qmm_configs()):
        transpose = i % 3 != 1
        dtype = (mx.float32, mx.float16, mx.bfloat16)[i % 3] if mode == "affine" else mx.float32
        K, N = 2 * max(group, 32), 5
        w = d.floats((N, K) if transpose else (K, N * 8), dtype, -1, 1)
        if not transpose:
            w = d.floats((K, 2 * group), dtype, -1, 1)
        q, s, b = quantize(w, mode, bits, group)
        x = d.floats((2, 3, K) if transpose else (3, K), dtype, -1, 1)
        expected = float_accumulated(mx.quantized_matmul, x, q, s, b, transpose=transpose, group_size=group, bits=bits,
                                     mode=mode)
        c = Case(f"{mode}_b{bits}_g{group}_{'t' if transpose else 'n'}")
        ix, iq, is_ = c.input(x), c.input(q), c.input(s)
        ib = c.input(b) if b is not None else None
        c.node("QuantizedMatmulNode", x=ix, w=iq, scales=is_, out=c.output(expected), biases=ib, group_size=group,
               bits=bits, mode=mode, transpose=transpose)
        out.append(c)
    return out + quantized_matmul_coverage()


def float_accumulated(op, x, *args, **kwargs):
    """MLX's result with float accumulation (what its GPU kernels compute, and the reference's
    contract): x, the scales and the biases widened to float32, the result rounded once. MLX's CPU
    kernels round the running sum to bfloat16/float16 after every element instead."""
    widen = lambda a: a.astype(mx.float32) if a is not None and a.dtype in (mx.float16, mx.bfloat16) else a
    return op(widen(x), *[widen(a) for a in args], **kwargs).astype(x.dtype)


def quantized_matmul_coverage():
    """Every affine bit width and group size, rows M in {1, 3, 8, 9, 33} (the decode kernel up to 8
    rows, the tiled one above), odd N, K of several groups, both layouts, every activation dtype;
    then bfloat16 and float16 products over K >= 512, where a running sum rounded after every
    element would drift beyond the tolerance."""
    d = Data("QuantizedMatmulCoverage")
    out = []
    rows = (1, 3, 8, 9, 33)
    for i, (bits, group) in enumerate(AFFINE):
        dtype = (mx.bfloat16, mx.float16, mx.float32)[i % 3]
        M, transpose = rows[i % len(rows)], i % 4 != 3
        K = group * (3 if group < 128 else 2)
        N = 13 + 2 * (i % 5) if transpose else 2 * group
        w = d.floats((N, K) if transpose else (K, N), dtype, -1, 1)
        q, s, b = quantize(w, "affine", bits, group)
        x = d.floats((M, K) if i % 2 else (1, M, K), dtype, -1, 1)
        expected = float_accumulated(mx.quantized_matmul, x, q, s, b, transpose=transpose, group_size=group, bits=bits)
        c = Case(f"cover_b{bits}_g{group}_m{M}_{'t' if transpose else 'n'}_{dtype}".replace("mlx.core.", ""))
        ix, iq, is_, ib = c.input(x), c.input(q), c.input(s), c.input(b)
        c.node("QuantizedMatmulNode", x=ix, w=iq, scales=is_, out=c.output(expected), biases=ib, group_size=group,
               bits=bits, mode="affine", transpose=transpose)
        out.append(c)
    for dtype, bits, group, M, K, N in ((mx.bfloat16, 4, 64, 1, 1024, 37), (mx.bfloat16, 8, 128, 9, 768, 21),
                                        (mx.float16, 4, 32, 2, 512, 40), (mx.bfloat16, 2, 64, 5, 2048, 8)):
        w = d.floats((N, K), dtype, -1, 1)
        q, s, b = quantize(w, "affine", bits, group)
        x = d.floats((M, K), dtype, -1, 1)
        expected = float_accumulated(mx.quantized_matmul, x, q, s, b, transpose=True, group_size=group, bits=bits)
        c = Case(f"long_k{K}_b{bits}_g{group}_m{M}_{dtype}".replace("mlx.core.", ""))
        ix, iq, is_, ib = c.input(x), c.input(q), c.input(s), c.input(b)
        c.node("QuantizedMatmulNode", x=ix, w=iq, scales=is_, out=c.output(expected), biases=ib, group_size=group,
               bits=bits, mode="affine", transpose=True)
        out.append(c)
    # The fp modes with half-precision activations, decode and tiled rows, both layouts (nvfp4:
    # two groups of 16 in each 32-value chunk the GPU unpacks).
    for mode, bits, dtype, M, transpose in (("mxfp4", 4, mx.bfloat16, 1, True), ("mxfp8", 8, mx.float16, 9, True),
                                            ("mxfp4", 4, mx.float16, 3, False), ("mxfp8", 8, mx.bfloat16, 2, False),
                                            ("nvfp4", 4, mx.bfloat16, 1, True), ("nvfp4", 4, mx.float16, 4, True),
                                            ("nvfp4", 4, mx.bfloat16, 33, True), ("nvfp4", 4, mx.float32, 9, True),
                                            ("nvfp4", 4, mx.float16, 3, False), ("nvfp4", 4, mx.bfloat16, 40, False)):
        group = 16 if mode == "nvfp4" else 32
        K, N = 256, 13 if transpose else 64
        w = d.floats((N, K) if transpose else (K, N), mx.float32, -1, 1)
        q, s, _ = quantize(w, mode, bits, group)
        x = d.floats((M, K), dtype, -1, 1)
        expected = float_accumulated(mx.quantized_matmul, x, q, s, None, transpose=transpose, group_size=group,
                                     bits=bits, mode=mode)
        c = Case(f"cover_{mode}_m{M}_{'t' if transpose else 'n'}_{dtype}".replace("mlx.core.", ""))
        ix, iq, is_ = c.input(x), c.input(q), c.input(s)
        c.node("QuantizedMatmulNode", x=ix, w=iq, scales=is_, out=c.output(expected), group_size=group, bits=bits,
               mode=mode, transpose=transpose)
        out.append(c)
    return out


def gather_mm_cases():
    d = Data("GatherMm")
    out = []
    for name, ashape, bshape, lhs, rhs, flag in (
            ("rhs_experts", (4, 1, 3), (3, 3, 2), None, [2, 0, 0, 1], None),
            ("lhs_and_rhs", (2, 2, 4), (3, 4, 5), [1, 0, 1], [0, 2, 1], None),
            ("no_indices_batched", (2, 3, 4), (2, 4, 2), None, None, None),
            ("sorted_flag", (3, 1, 4), (2, 4, 3), None, [0, 0, 1], 1),
            ("many_experts", (2, 2, 8), (4, 8, 3), None, [3, 1], None)):
        dtype = mx.float16 if name == "f16" else mx.float32
        a, b = d.floats(ashape, dtype), d.floats(bshape, dtype)
        li = mx.array(lhs, mx.uint32) if lhs is not None else None
        ri = mx.array(rhs, mx.uint32) if rhs is not None else None
        c = Case(name)
        ia, ib = c.input(a), c.input(b)
        il = c.input(li) if li is not None else None
        ir = c.input(ri) if ri is not None else None
        c.node("GatherMmNode", a=ia, b=ib, out=c.output(mx.gather_mm(a, b, li, ri, sorted_indices=bool(flag))),
               lhs_indices=il, rhs_indices=ir, sorted_indices_flag=iv(flag) if flag is not None else None)
        out.append(c)
    # The GPU's two layouts (at most 8 rows, tiles above), odd sizes, broadcast index tensors,
    # half precision (accumulated in float).
    for name, ashape, bshape, lhs, rhs, dtype in (
            ("tokens_top2_f16", (3, 1, 1, 40), (5, 40, 23), None, [[1, 4], [0, 2], [3, 3]], mx.float16),
            ("tiled_rows_bf16", (2, 37, 20), (3, 20, 9), [[1], [0]], [[2, 0]], mx.bfloat16),
            ("tiled_rows_f32", (1, 70, 33), (2, 33, 66), None, [1, 0, 1], mx.float32)):
        a, b = d.floats(ashape, dtype), d.floats(bshape, dtype)
        li = mx.array(lhs, mx.uint32) if lhs is not None else None
        ri = mx.array(rhs, mx.uint32)
        c = Case(name)
        ia, ib = c.input(a), c.input(b)
        il = c.input(li) if li is not None else None
        ir = c.input(ri)
        c.node("GatherMmNode", a=ia, b=ib, out=c.output(float_accumulated(mx.gather_mm, a, b, li, ri)),
               lhs_indices=il, rhs_indices=ir)
        out.append(c)
    return out


def gather_qmm_cases():
    d = Data("GatherQmm")
    out = []
    for name, mode, bits, group, transpose, lhs, rhs in (
            ("affine4_experts", "affine", 4, 64, True, None, [1, 0, 2]),
            ("affine8_not_transposed", "affine", 8, 32, False, None, [0, 1]),
            ("affine3_lhs_rhs", "affine", 3, 32, True, [1, 0], [2, 2]),
            ("nvfp4", "nvfp4", 4, 16, True, None, [0, 2, 1]),
            ("mxfp8", "mxfp8", 8, 32, True, None, [1, 1]),
            ("mxfp4", "mxfp4", 4, 32, True, None, [2, 0])):
        E, K, N = 3, 64, 6
        w = d.floats((E, N, K) if transpose else (E, K, 64), mx.float32, -1, 1)
        q, s, b = quantize(w, mode, bits, group)
        batch = len(rhs)
        x = d.floats((batch if lhs is None else 2, 1, K), mx.float32, -1, 1)
        li = mx.array(lhs, mx.uint32) if lhs is not None else None
        ri = mx.array(rhs, mx.uint32)
        expected = mx.gather_qmm(x, q, s, b, li, ri, transpose=transpose, group_size=group, bits=bits, mode=mode)
        c = Case(name)
        ix, iq, is_ = c.input(x), c.input(q), c.input(s)
        ib = c.input(b) if b is not None else None
        il = c.input(li) if li is not None else None
        ir = c.input(ri)
        c.node("GatherQmmNode", x=ix, w=iq, scales=is_, out=c.output(expected), mode=mode, biases=ib, lhs_indices=il,
               rhs_indices=ir, transpose=transpose, group_size=group, bits=bits)
        out.append(c)
    # A mixture-of-experts layer's shapes (tokens x top-k experts, x [T, 1, 1, K]), rows above the
    # decode kernel's 8, the [K, N] layout, half precision, odd N, broadcast index tensors.
    for name, mode, bits, group, transpose, xshape, E, N, lhs, rhs, dtype in (
            ("moe_tokens_top2_bf16", "affine", 4, 64, True, (3, 1, 1, 192), 4, 29, None, [[1, 3], [0, 1], [2, 2]],
             mx.bfloat16),
            ("moe_prefill_rows_f16", "affine", 8, 32, True, (2, 12, 96), 3, 17, [[0], [1]], [[2, 0]], mx.float16),
            ("not_transposed_rows_bf16", "affine", 2, 64, False, (2, 10, 128), 2, 128, None, [1, 0], mx.bfloat16),
            ("six_bits_f32", "affine", 6, 128, True, (1, 3, 256), 3, 11, None, [2, 1, 0], mx.float32),
            ("nvfp4_tokens_top2_f16", "nvfp4", 4, 16, True, (3, 1, 1, 160), 4, 21, None, [[3, 0], [1, 1], [2, 0]],
             mx.float16),
            ("nvfp4_prefill_rows_bf16", "nvfp4", 4, 16, True, (2, 12, 96), 3, 17, [[0], [1]], [[2, 0]], mx.bfloat16),
            ("nvfp4_not_transposed_f32", "nvfp4", 4, 16, False, (2, 5, 64), 2, 96, None, [1, 0], mx.float32)):
        K = xshape[-1]
        w = d.floats((E, N, K) if transpose else (E, K, N), dtype, -1, 1)
        q, s, b = quantize(w, mode, bits, group)
        x = d.floats(xshape, dtype, -1, 1)
        li = mx.array(lhs, mx.uint32) if lhs is not None else None
        ri = mx.array(rhs, mx.uint32)
        expected = float_accumulated(mx.gather_qmm, x, q, s, b, li, ri, transpose=transpose, group_size=group,
                                     bits=bits, mode=mode)
        c = Case(name)
        ix, iq, is_ = c.input(x), c.input(q), c.input(s)
        ib = c.input(b) if b is not None else None
        il = c.input(li) if li is not None else None
        ir = c.input(ri)
        c.node("GatherQmmNode", x=ix, w=iq, scales=is_, out=c.output(expected), mode=mode, biases=ib, lhs_indices=il,
               rhs_indices=ir, transpose=transpose, group_size=group, bits=bits)
        out.append(c)
    return out


def random_bits(shape, width, seed):
    """MLX's random::bits(shape, width, key(seed)). The Python API has no `bits`; `split(key, n)` is
    bits({n, 2}) with the same per-key word layout, so any shape whose byte count is a multiple of
    8 reads off a split's words."""
    key = mx.random.key(seed % 2**64)
    numel = 1
    for n in shape:
        numel *= n
    nbytes = numel * width
    assert nbytes % 8 == 0, "the MLX Python API reaches even word counts only"
    words = mx.random.split(key, nbytes // 8).reshape(-1) if nbytes else mx.zeros((0,), mx.uint32)
    dtype = {1: mx.uint8, 2: mx.uint16, 4: mx.uint32}[width]
    return words.view(dtype).reshape(shape)


def random_bits_cases():
    out = []
    for name, shape, width, seed in (("u32_seed0", [4], 4, 0), ("u32_2d", [3, 6], 4, 42), ("u8", [2, 8], 1, 7),
                                     ("negative_seed", [2], 4, -5), ("large_key", [64], 4, 123456789),
                                     ("empty", [0, 3], 4, 1)):
        c = Case(name)
        s = c.int_input(seed)
        expected = random_bits(shape, width, seed)
        c.node("RandomBitsNode", out=c.output(expected), shape=[iv(n) for n in shape], seed=s, width=width)
        out.append(c)
    return out


def cases():
    return {
        "DequantizeNode": dequantize_cases(),
        "QuantizedMatmulNode": quantized_matmul_cases(),
        "GatherMmNode": gather_mm_cases(),
        "GatherQmmNode": gather_qmm_cases(),
        "RandomBitsNode": random_bits_cases(),
    }
