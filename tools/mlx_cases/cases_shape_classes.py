"""Cases whose steps change shapes and positions across runs of one program (dynamic dims, value
inputs), as a decode loop or a new sequence length does. The first two steps see every shape class
(variant, broadcast pattern) the later steps use, so on WebGPU the later steps must reuse their
pipelines: tests/backend/webgpu requires that they render no kernel and compile no pipeline, and
every step still matches MLX. Case names start with `shape_classes_`."""
import mlx.core as mx

from data import Data
from program import Case, iv

PREFIX = "shape_classes_"


def stepped(name, dynamic, steps, build):
    """steps: one list of inputs (MLX arrays, or ints for value inputs) per run; inputs of
    `dynamic` (input index: dims) have dynamic dims. build(c, refs) adds the nodes (expecting the
    first step's outputs) and returns the function that gives a step's expected output (a tuple for
    several)."""
    c = Case(PREFIX + name)
    refs = [c.input(a, dynamic_dims=dynamic.get(k, ())) if not isinstance(a, int) else c.int_input(a)
            for k, a in enumerate(steps[0])]
    fn = build(c, refs)
    for k, inputs in enumerate(steps):
        if k == 0:
            continue
        outputs = fn(*inputs)
        c.add_step(inputs, list(outputs) if isinstance(outputs, tuple) else [outputs])
    return c


def simple(name, kind, dynamic, steps, fn, make_fields):
    """One node of `kind` over the inputs; make_fields(refs, out) gives its fields."""
    def build(c, refs):
        c.node(kind, **make_fields(refs, c.output(fn(*steps[0]))))
        return fn
    return stepped(name, dynamic, steps, build)


def cases():
    d = Data("ShapeClasses")
    # Rows of a bias-added activation: a new row count every step (row broadcast, vec4 rows).
    add_rows = [[d.floats((n, 8)), d.floats((8,))] for n in (3, 4, 5, 7, 1, 9)]
    # Element-wise over [n, w]: the vec4 variant (numel % 4 == 0) and the scalar one alternate.
    exp_steps = [[d.floats(s)] for s in ((2, 4), (3, 3), (5, 4), (7, 3), (1, 8), (9, 5))]
    where_steps = [[d.ints(s, mx.bool_), d.floats(s), d.floats((1, s[1]))] for s in ((2, 3), (4, 3), (5, 3), (7, 3), (6, 3))]
    transpose_steps = [[d.floats(s)] for s in ((2, 3, 4), (3, 5, 2), (4, 2, 6), (1, 7, 3))]
    # The valid part of a 16-row cache as it grows.
    cache = d.floats((16, 4))
    slice_steps = [[cache, p] for p in (3, 4, 5, 9, 16)]
    # A KV-cache write: T new rows at position p of a [1, 2, 16, 4] cache.
    kv = [(2, 0), (3, 2), (1, 5), (2, 6), (3, 8), (1, 11)]
    kv_steps = [[d.floats((1, 2, 16, 4)), d.floats((1, 2, t, 4)), p, p + t] for t, p in kv]
    concat_steps = [[d.floats((n, 4)), d.floats((m, 4))] for n, m in ((2, 3), (3, 1), (5, 2), (1, 6))]
    pad_steps = [[d.floats(s)] for s in ((2, 5), (3, 2), (6, 4), (1, 1))]

    # A decode loop's rope: one new token per step at a growing offset (a value slot, then a
    # tensor), and its attention over a KV history that grows by a token (a long jump too).
    rope_steps = [[d.floats((1, 4, 1, 64)), p] for p in (0, 1, 2, 9, 130, 250)]
    rope_tensor_steps = [[d.floats((1, 4, 1, 64)), mx.array([p], mx.int32)] for p in (3, 4, 5, 64, 200)]
    decode_steps = [[d.floats((1, 4, 1, 64)), d.floats((1, 2, n, 64)), d.floats((1, 2, n, 64))]
                    for n in (5, 6, 7, 40, 300, 650)]
    # Causal prefill of a new prompt length each step (Lq = Lkv).
    prefill_steps = [[d.floats((1, 4, n, 32)), d.floats((1, 2, n, 32)), d.floats((1, 2, n, 32))]
                     for n in (17, 18, 9, 37, 64)]

    def rope(x, offset):
        return mx.fast.rope(x, 64, traditional=False, base=10000.0, scale=1.0, offset=offset)

    def attention(causal):
        return lambda q, k, v: mx.fast.scaled_dot_product_attention(q, k, v, scale=0.125,
                                                                    mask="causal" if causal else None)

    def slice_update(dst, update, start, stop):
        out = mx.array(dst)
        out[:, :, start:stop, :] = update
        return out

    out = {
        "AddNode": [simple("add_rows", "AddNode", {0: [0]}, add_rows, lambda a, b: a + b,
                           lambda r, out: {"a": r[0], "b": r[1], "out": out})],
        "ExpNode": [simple("exp", "ExpNode", {0: [0, 1]}, exp_steps, mx.exp, lambda r, out: {"x": r[0], "out": out})],
        "WhereNode": [simple("where", "WhereNode", {0: [0], 1: [0]}, where_steps, mx.where,
                             lambda r, out: {"condition": r[0], "x": r[1], "y": r[2], "out": out})],
        "TransposeNode": [simple("transpose", "TransposeNode", {0: [0, 1, 2]}, transpose_steps,
                                 lambda x: mx.transpose(x, (2, 0, 1)), lambda r, out: {"x": r[0], "out": out, "perm": [2, 0, 1]})],
        "SliceNode": [simple("slice_grow", "SliceNode", {}, slice_steps, lambda x, p: x[:p],
                             lambda r, out: {"x": r[0], "out": out, "axis": iv(0), "start": iv(0), "stop": iv(r[1]), "step": 1})],
        "SliceUpdateNode": [simple("kv_write", "SliceUpdateNode", {1: [2]}, kv_steps, slice_update,
                                   lambda r, out: {"dst": r[0], "update": r[1], "out": out, "axis": iv(2),
                                                   "start": iv(r[2]), "stop": iv(r[3]), "step": 1})],
        "ConcatenateNode": [simple("concat_rows", "ConcatenateNode", {0: [0], 1: [0]}, concat_steps,
                                   lambda a, b: mx.concatenate([a, b], 0),
                                   lambda r, out: {"tensors": [r[0], r[1]], "out": out, "axis": 0})],
        "PadNode": [simple("pad", "PadNode", {0: [0, 1]}, pad_steps, lambda x: mx.pad(x, [(1, 2), (0, 3)]),
                           lambda r, out: {"x": r[0], "out": out, "pad_width": [iv(1), iv(2), iv(0), iv(3)],
                                           "mode": "constant", "constant_value": 0.0})],
        "RopeNode": [
            simple("rope_offset", "RopeNode", {}, rope_steps, rope,
                   lambda r, out: {"x": r[0], "out": out, "dims": 64, "offset": {"vid": r[1], "is_vid": True},
                                   "base": 10000.0}),
            simple("rope_offset_tensor", "RopeNode", {}, rope_tensor_steps, rope,
                   lambda r, out: {"x": r[0], "out": out, "dims": 64, "offset": {"tid": r[1]}, "base": 10000.0})],
        "SdpaNode": [
            simple("sdpa_decode", "SdpaNode", {1: [2], 2: [2]}, decode_steps, attention(False),
                   lambda r, out: {"q": r[0], "k": r[1], "v": r[2], "out": out, "scale": 0.125}),
            simple("sdpa_causal_prefill", "SdpaNode", {0: [2], 1: [2], 2: [2]}, prefill_steps, attention(True),
                   lambda r, out: {"q": r[0], "k": r[1], "v": r[2], "out": out, "scale": 0.125, "causal": True})],
    }
    out.update(indexing_cases())
    out.update(reduction_cases())
    return out


def reduction_cases():
    """Row reductions over a new row count every step (a workgroup per row) with a strided one
    (over axis 0 of [n, 6]) in the same program, and softmax over a new row count."""
    d = Data("ShapeClassesReductions")
    sum_steps = [[d.floats((n, 64)), d.floats((n, 6))] for n in (3, 5, 8, 1, 13)]
    softmax_steps = [[d.floats((n, 40))] for n in (2, 7, 4, 1, 9)]

    def sums(c, refs):
        c.node("SumNode", x=refs[0], out=c.output(mx.sum(sum_steps[0][0], axis=-1)), axes=[-1], keepdims=False)
        c.node("SumNode", x=refs[1], out=c.output(mx.sum(sum_steps[0][1], axis=0)), axes=[0], keepdims=False)
        return lambda rows, cols: (mx.sum(rows, axis=-1), mx.sum(cols, axis=0))

    return {
        "SumNode": [stepped("sum_rows", {0: [0], 1: [0]}, sum_steps, sums)],
        "SoftmaxNode": [simple("softmax_rows", "SoftmaxNode", {0: [0]}, softmax_steps, lambda x: mx.softmax(x, -1),
                               lambda r, out: {"x": r[0], "out": out, "axis": -1, "precise": False})],
    }


def indexing_cases():
    """The embedding lookup of a prompt then of decode steps, a scatter of a changing number of
    updates, sorts of lines of a new length and count, a convolution of a new image size."""
    d = Data("ShapeClassesIndexing")
    table = d.floats((50, 16))
    take_steps = [[table, d.ints((t,), mx.int64, -50, 50)] for t in (5, 1, 3, 1, 7)]
    scatter_steps = [[d.floats((6, 8)), d.ints((t, 8), mx.int32, -6, 6), d.floats((t, 8))] for t in (4, 9, 1, 12)]
    sort_steps = [[d.floats(s)] for s in ((3, 37), (2, 100), (4, 5), (1, 250), (6, 64))]
    conv_weight = d.floats((5, 3, 3, 4), lo=-0.5, hi=0.5)
    conv_steps = [[d.floats(s), conv_weight] for s in ((1, 9, 7, 4), (1, 12, 5, 4), (2, 6, 6, 4), (1, 3, 17, 4))]

    def scatter_add(x, idx, upd):
        coords = list(mx.meshgrid(mx.arange(idx.shape[0]), mx.arange(idx.shape[1]), indexing="ij"))
        coords[0] = idx % x.shape[0]
        return x.at[tuple(coords)].add(upd)

    conv = lambda x, w: mx.conv2d(x, w, stride=(2, 1), padding=(1, 1))
    return {
        "TakeNode": [simple("embedding_tokens", "TakeNode", {1: [0]}, take_steps, lambda t, i: mx.take(t, i, 0),
                            lambda r, out: {"x": r[0], "out": out, "index": {"tid": r[1], "kind": 2}, "axis": 0})],
        "ScatterAddNode": [simple("scatter_add_rows", "ScatterAddNode", {1: [0], 2: [0]}, scatter_steps, scatter_add,
                                  lambda r, out: {"x": r[0], "indices": r[1], "updates": r[2], "out": out, "axis": 0})],
        "ArgsortNode": [simple("argsort_lines", "ArgsortNode", {0: [0, 1]}, sort_steps, lambda x: mx.argsort(x, axis=1),
                               lambda r, out: {"x": r[0], "out": out, "axis": 1})],
        "Conv2DNode": [simple("conv2d_image_size", "Conv2DNode", {0: [0, 1, 2]}, conv_steps, conv,
                              lambda r, out: {"x": r[0], "w": r[1], "out": out, "stride_h": 2, "stride_w": 1,
                                              "padding_h": 1, "padding_w": 1, "groups": 1})],
    }
