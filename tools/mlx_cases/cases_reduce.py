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


def long_special_rows():
    """Three rows of 40: one with a NaN, one with both infinities, one with a signed zero."""
    rows = np.random.RandomState(40).uniform(-2, 2, (3, 40)).astype(np.float32)
    rows[0, 29] = np.nan
    rows[1, 3], rows[1, 38] = np.inf, -np.inf
    rows[2, 17] = -0.0
    return mx.array(rows)


def tall_nan_columns():
    """[1000, 2]: column 0 has NaNs at rows 700 and 900, column 1 none."""
    x = np.random.RandomState(1000).uniform(-2, 2, (1000, 2)).astype(np.float32)
    x[700, 0] = x[900, 0] = np.nan
    return mx.array(x)


def huge_nan_rows():
    """[2, 40000]: row 0 has NaNs at 25000 and 30000, in different chunks; row 1 none."""
    x = np.random.RandomState(40000).uniform(-2, 2, (2, 40000)).astype(np.float32)
    x[0, 25000] = x[0, 30000] = np.nan
    return mx.array(x)


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
            ("transposed", d.floats((3, 4)), [0], False),
            # Rows long enough for a workgroup per row: vec4 loads, odd lengths, special values.
            ("long_row", d.floats((3, 1500)), [-1], False),
            ("odd_row", d.floats((5, 1023)), [1], True),
            ("short_odd_row", d.floats((4, 37)), [1], False),
            ("f16_long_row", d.floats((2, 2000), mx.float16), [-1], False),
            ("special_long_row", long_special_rows(), [1], False),
            ("int32_long_row", d.ints((3, 1001), mx.int32, -1000, 1000), [1], False),
            ("bool_long_row", d.ints((2, 300), mx.bool_), [1], False),
            # Strided: a leading axis, all axes of a 3-d tensor, outer and inner axes.
            ("axis0", d.floats((300, 7)), [0], False),
            ("all_3d", d.floats((3, 5, 7)), [], False),
            ("outer_inner_axes", d.floats((3, 5, 7)), [0, 2], True),
            # Few outputs, long leading reductions: chunks of the leading axis, partials merged.
            ("tall_axis0", d.floats((1200, 3)), [0], False),
            ("tall_outer_inner_axes", d.floats((300, 3, 4)), [0, 2], True),
            # A few very long rows: chunks of workgroups, partials merged. Positive values: MLX's
            # float32 sum of 20000 values of both signs is off by more than the tolerance.
            ("huge_rows", d.floats((2, 20000), lo=0, hi=1), [-1], False),
            ("huge_all", d.floats((300, 70), lo=0, hi=1), [], False)):
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
        # ddof reaching the count: MLX divides by max(count - ddof, 0).
        d = Data(kind)
        for ddof, x in ((2, d.floats((3, 2))), (3, d.floats((3, 2))), (1, d.floats((4, 1)))):
            out[kind].append(simple(f"ddof{ddof}_of_{x.shape[1]}", kind, x, fn(x, axis=1, ddof=ddof), axes=[1],
                                    keepdims=False, ddof=ddof))
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
        ("int8", d.ints((2, 6), mx.int8, -100, 100), 1, False), ("bf16_3d", d.floats((2, 3, 4), mx.bfloat16), -2, False),
        ("long_row", d.floats((3, 1500)), -1, False), ("odd_row", d.floats((5, 1023)), 1, True),
        ("f16_long_row", d.floats((2, 2000), mx.float16), -1, False), ("axis0", d.floats((300, 7)), 0, False),
        ("nan_long_row", long_special_rows(), 1, False),
        # Many ties across a workgroup's threads: the first index wins.
        ("ties_long_row", d.ints((4, 1000), mx.int32, -3, 3), -1, False),
        ("ties_axis0", d.ints((200, 5), mx.int32, -2, 2), 0, False),
        # Chunks of a tall axis 0 merged: ties and NaNs across chunks go to the first index.
        ("tall_ties_axis0", d.ints((1500, 3), mx.int32, -2, 2), 0, False),
        ("tall_nan_axis0", tall_nan_columns(), 0, True),
        ("huge_ties_row", d.ints((1, 40000), mx.int32, -2, 2), -1, False),
        ("huge_nan_rows", huge_nan_rows(), -1, False))]


def cumsum_cases():
    d = Data("Cumsum")
    return [simple(name, "CumsumNode", x, mx.cumsum(x, axis=axis, reverse=rev, inclusive=inc), axis=axis, reverse=rev,
                   inclusive=inc) for name, x, axis, rev, inc in (
        ("inclusive", d.floats((3, 5)), 1, False, True), ("exclusive", d.floats((4, 2)), 0, False, False),
        ("reverse", d.floats((2, 6)), -1, True, True), ("reverse_exclusive", d.floats((5,)), 0, True, False),
        ("int8", d.ints((2, 8), mx.int8, -100, 100), 1, False, True), ("bool", d.ints((6,), mx.bool_), 0, False, True),
        ("f16", d.floats((3, 9), mx.float16), 1, False, True), ("empty", d.floats((0, 3)), 0, False, True),
        # Long float32 rows of positive values: a running sum of mixed signs crosses zero with an
        # absolute error of a few ulps of its largest value (MLX's own, summing in order).
        ("long_row", d.floats((3, 1500), lo=0, hi=1), -1, False, True),
        ("odd_row_reverse_exclusive", d.floats((2, 1023), lo=0, hi=1), 1, True, False),
        ("axis0", d.floats((300, 7)), 0, False, True), ("middle_axis_reverse", d.floats((3, 50, 4)), 1, True, True),
        ("int32_long_row", d.ints((2, 3000), mx.int32, -1000, 1000), -1, False, True),
        # float16 sums stall where MLX's running float16 sum does (2048 + 1 == 2048).
        ("f16_long_row", d.floats((2, 3000), mx.float16, 0, 1), -1, False, True))]


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
