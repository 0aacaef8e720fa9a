"""Reductions, scans, sorts and partitions."""
import mlx.core as mx
import numpy as np

from data import Data, special_floats
from program import Case, iv


def simple(name, kind, x, expected, compare="close", **attrs):
    c = Case(name, compare)
    ix = c.input(x)
    c.node(kind, x=ix, out=c.output(expected), **attrs)
    return c


def axes_reduction_cases(kind, fn, extra=None):
    """fn(x, axes or None, keepdims) -> MLX result; an empty axes list reduces everything."""
    d = Data(kind)
    extra = extra or {}
    call = lambda x, axes, keep: fn(x, axes if axes else None, keep)
    out = []
    for name, x, axes, keep in (
            ("all_f32", d.floats((3, 4)), [], False),
            ("axis_neg_keepdims", d.floats((2, 3, 4)), [-1], True),
            ("two_axes_f16", d.floats((2, 3, 5), mx.float16), [0, 2], False),
            ("bf16_long_row", d.floats((2, 40), mx.bfloat16), [1], False),
            ("int8", d.ints((4, 6), mx.int8, -128, 128), [1], False),
            ("uint8", d.ints((3, 5), mx.uint8, 0, 256), [0], True),
            ("bool", d.ints((3, 4), mx.bool_), [1], False),
            ("int32", d.ints((2, 7), mx.int32, -1000, 1000), [], True),
            ("special_values", special_floats().reshape(2, 5), [1], False),
            ("transposed", d.floats((3, 4)), [0], False)):
        if name == "transposed":
            c = Case(name)
            ix, t = c.input(x), c.temp()
            c.node("TransposeNode", x=ix, out=t, perm=[1, 0])
            c.node(kind, x=t, out=c.output(call(mx.transpose(x), axes, keep)), axes=axes, keepdims=keep, **extra)
            out.append(c)
            continue
        out.append(simple(name, kind, x, call(x, axes, keep), axes=axes, keepdims=keep, **extra))
    return out


# A reduction over a size-0 axis gives the reduction's identity. MLX 0.32.4 can deadlock
# evaluating such a reduction on the CPU, so these expectations are written out, not computed.
EMPTY_IDENTITY = {"SumNode": (0.0, mx.float32), "MeanNode": (float("nan"), mx.float32),
                  "ProdNode": (1.0, mx.float32), "AnyNode": (False, mx.bool_), "AllNode": (True, mx.bool_)}


def empty_reduction(kind):
    d = Data(kind)
    value, dtype = EMPTY_IDENTITY[kind]
    return simple("empty_axis", kind, d.floats((0, 3)), mx.full((3,), value, dtype), axes=[0], keepdims=False)


def reduction_cases():
    out = {}
    for kind, fn in (("SumNode", mx.sum), ("MeanNode", mx.mean), ("ProdNode", mx.prod), ("MaxNode", mx.max),
                     ("MinNode", mx.min), ("AnyNode", mx.any), ("AllNode", mx.all)):
        out[kind] = axes_reduction_cases(kind, lambda x, a, k, f=fn: f(x, axis=a, keepdims=k))
        if kind in EMPTY_IDENTITY:
            out[kind].append(empty_reduction(kind))
    for kind, fn in (("VarNode", mx.var), ("StdNode", mx.std)):
        out[kind] = axes_reduction_cases(kind, lambda x, a, k, f=fn: f(x, axis=a, keepdims=k))
        out[kind] += axes_reduction_cases(kind, lambda x, a, k, f=fn: f(x, axis=a, keepdims=k, ddof=1),
                                          {"ddof": 1})[:3]
        for c in out[kind][-3:]:
            c.name += "_ddof1"
    # LogSumExp passes its axes as they are: an empty list reduces nothing.
    lse = lambda x, a, k: mx.logsumexp(x, axis=a if a else [], keepdims=k)
    out["LogSumExpNode"] = axes_reduction_cases("LogSumExpNode", lse)
    out["MedianNode"] = median_cases()
    return out


def median_cases():
    d = Data("Median")
    return [simple(name, "MedianNode", x, mx.median(x, axis=axes if axes else None, keepdims=keep), axes=axes,
                   keepdims=keep) for name, x, axes, keep in (
        ("odd_all", d.floats((3, 5)), [], False), ("even_axis", d.floats((3, 4)), [1], False),
        ("keepdims_neg", d.floats((2, 3, 4)), [-2], True), ("int32", d.ints((2, 6), mx.int32, -9, 9), [1], False),
        ("nan", special_floats().reshape(2, 5), [1], False), ("f16", d.floats((4, 3), mx.float16), [0], False),
        ("two_axes", d.floats((2, 3, 2)), [0, 2], False))]


def arg_reduction_cases(kind, fn):
    d = Data(kind)
    ties = mx.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, -1.0, -1.0]])
    return [simple(name, kind, x, fn(x, axis=axis, keepdims=keep), axis=axis, keepdims=keep) for name, x, axis, keep in (
        ("f32", d.floats((3, 5)), 1, False), ("axis0_keepdims", d.floats((4, 2)), 0, True),
        ("ties_first", ties, -1, False), ("nan", special_floats().reshape(2, 5), 1, False),
        ("int8", d.ints((2, 6), mx.int8, -100, 100), 1, False), ("bf16_3d", d.floats((2, 3, 4), mx.bfloat16), -2, False))]


def cumsum_cases():
    d = Data("Cumsum")
    return [simple(name, "CumsumNode", x, mx.cumsum(x, axis=axis, reverse=rev, inclusive=inc), axis=axis, reverse=rev,
                   inclusive=inc) for name, x, axis, rev, inc in (
        ("inclusive", d.floats((3, 5)), 1, False, True), ("exclusive", d.floats((4, 2)), 0, False, False),
        ("reverse", d.floats((2, 6)), -1, True, True), ("reverse_exclusive", d.floats((5,)), 0, True, False),
        ("int8", d.ints((2, 8), mx.int8, -100, 100), 1, False, True), ("bool", d.ints((6,), mx.bool_), 0, False, True),
        ("f16", d.floats((3, 9), mx.float16), 1, False, True), ("empty", d.floats((0, 3)), 0, False, True))]


def sort_cases(kind, fn):
    d = Data(kind)
    ties = mx.array([3.0, 1.0, 3.0, 2.0, 1.0, 3.0])
    return [simple(name, kind, x, fn(x, axis=axis), axis=axis) for name, x, axis in (
        ("f32_last", d.floats((3, 6)), -1), ("axis0", d.floats((5, 3)), 0), ("ties_stable", ties, 0),
        ("nan_last", special_floats(), 0), ("int8", d.ints((2, 7), mx.int8, -100, 100), 1),
        ("bf16", d.floats((9,), mx.bfloat16), 0), ("uint32", d.ints((4,), mx.uint32, 0, 2**31), 0))] + \
        long_sort_cases(kind, fn)


def long_sort_cases(kind, fn):
    """Rows of odd and long lengths (the GPU sorts up to 2048 per workgroup; longer ones fall back),
    ties, signed zeros and NaNs in long rows, along a middle axis."""
    d = Data(kind + "Long")
    ties = mx.array(d.rng.randint(-3, 4, (3, 1000)).astype(np.float32))
    specials = mx.concatenate([special_floats()] * 30 + [d.floats((13,))])
    return [simple(name, kind, x, fn(x, axis=axis), axis=axis) for name, x, axis in (
        ("odd_1000_ties", ties, 1), ("specials_313", specials, 0), ("f16_2048", d.floats((2, 2048), mx.float16), -1),
        ("int32_middle_axis", d.ints((3, 301, 2), mx.int32, -1000, 1000), 1), ("f32_longer_than_2048", d.floats((2, 2500)), 1),
        ("int64_257", d.ints((257,), mx.int64, -2**30, 2**30), 0))]


def partition_cases(kind, fn):
    d = Data(kind)
    out = []
    for name, x, kth, axis in (("middle", d.floats((2, 7)), 3, 1), ("negative_kth", d.floats((8,)), -2, 0),
                               ("axis0", d.floats((6, 3)), 1, 0), ("int32", d.ints((3, 5), mx.int32, -9, 9), 4, -1),
                               ("first", d.floats((4,)), 0, 0), ("long_odd", Data(kind + "Long").floats((3, 777)), 400, 1)):
        out.append(simple(name, kind, x, fn(x, kth, axis=axis), compare=f"partition:{kth}:{axis}", kth=iv(kth), axis=axis))
    c = Case("kth_from_value", "partition:2:0")
    x = d.floats((5,))
    ix, v = c.input(x), c.int_input(2)
    c.node(kind, x=ix, out=c.output(fn(x, 2, axis=0)), kth=iv(v), axis=0)
    return out + [c]


def cases():
    out = reduction_cases()
    out["ArgmaxNode"] = arg_reduction_cases("ArgmaxNode", mx.argmax)
    out["ArgminNode"] = arg_reduction_cases("ArgminNode", mx.argmin)
    out["CumsumNode"] = cumsum_cases()
    out["SortNode"] = sort_cases("SortNode", mx.sort)
    out["ArgsortNode"] = sort_cases("ArgsortNode", mx.argsort)
    out["PartitionNode"] = partition_cases("PartitionNode", mx.partition)
    out["ArgPartitionNode"] = partition_cases("ArgPartitionNode", mx.argpartition)
    return out
