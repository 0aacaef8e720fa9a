"""Randomised cases: seeded random ranks, dims and dtypes for element-wise, fill, layout,
reduction and scan nodes.

Every node draws from its own numpy Generator, seeded by a CRC of the node name, so the files are
reproducible and adding a node leaves the other nodes' cases unchanged. Cases are named
random_<node>_<k>_<dtype>; each node gets at least one case per listed dtype.
"""
import zlib

import mlx.core as mx
import numpy as np

from cases_elementwise import BINARY, BITWISE, FLOAT_UNARY, SAME_TYPE_UNARY, binary_case, gelu_none, \
    gelu_tanh, unary_case
from cases_shape import simple
from data import NUMPY_INTS
from program import DTYPES, Case, fv, iv, scalar_type

F32, F16, I32, U32, I8, U8, I16, BOOL = (mx.float32, mx.float16, mx.int32, mx.uint32, mx.int8, mx.uint8,
                                         mx.int16, mx.bool_)
FLOAT = (F32, F16)
ARITH = (F32, F16, I32, U32)
COMPARE = (F32, I32, U32, BOOL)
BITS = (I32, U32, BOOL)
FILL = (F32, F16, I32, U32, I8, BOOL)
LAYOUT = (F32, F16, I32, U32, I8, U8, I16, BOOL)

CASES = 6
EMPTY_P = 0.1  # chance that a shape gets a zero dim, where the node allows empty tensors


# ---- driver ------------------------------------------------------------------------------------


def label(dtype):
    if isinstance(dtype, tuple):
        return "_to_".join(DTYPES[d][0] for d in dtype)
    return DTYPES[dtype][0]


def sweep(kind, dtypes, make):
    """make(name, rng, dtype, k) for k in range(max(CASES, len(dtypes))); the dtypes come in a
    random order, cycled, so each appears at least once."""
    rng = np.random.default_rng(zlib.crc32(kind.encode()))
    order = rng.permutation(len(dtypes))
    out = []
    for k in range(max(CASES, len(dtypes))):
        dtype = dtypes[order[k % len(dtypes)]]
        out.append(make(f"random_{kind[:-4].lower()}_{k}_{label(dtype)}", rng, dtype, k))
    return out


# ---- shapes and values -------------------------------------------------------------------------


def random_shape(rng, min_rank=0, max_rank=4, empty_ok=True):
    rank = int(rng.integers(min_rank, max_rank + 1))
    shape = [int(d) for d in rng.integers(1, 8, rank)]
    if empty_ok and rank and rng.random() < EMPTY_P:
        shape[rng.integers(rank)] = 0
    return shape


def broadcastable(rng, shape):
    """A shape that broadcasts to `shape`: sometimes leading dims dropped, some dims set to 1."""
    drop = int(rng.integers(0, len(shape) + 1)) if rng.random() < 0.3 else 0
    return [1 if rng.random() < 0.3 else d for d in shape[drop:]]


def values(rng, shape, dtype, lo, hi, step=None):
    """Uniform in [lo, hi] (clamped to the dtype's range); floats snapped to multiples of `step`."""
    if dtype == BOOL:
        return mx.array(rng.random(shape) < 0.5)
    if dtype in FLOAT:
        v = rng.uniform(lo, hi, shape)
        if step:
            v = np.round(v / step) * step
        return mx.array(v.astype(np.float32)).astype(dtype)
    info = np.iinfo(NUMPY_INTS[dtype])
    v = rng.integers(max(int(np.ceil(lo)), info.min), min(int(np.floor(hi)), info.max), shape, endpoint=True)
    return mx.array(v.astype(NUMPY_INTS[dtype]))


def full_range(rng, shape, dtype):
    """Integers over the dtype's whole range, so every byte of narrow types is exercised; floats
    in [-4, 4]."""
    return values(rng, shape, dtype, -4, 4) if dtype in FLOAT else values(rng, shape, dtype, -2**32, 2**32)


def away_from_zero(rng, shape, dtype, lo, hi):
    """Magnitudes in [lo, hi] with random signs."""
    return values(rng, shape, dtype, lo, hi) * mx.array(rng.choice([-1, 1], shape).astype(np.float32), dtype)


def powers_of_two(rng, shape, dtype):
    """+-2^e: quotients by these are exact, so floor and remainder don't hinge on division rounding."""
    return mx.array((rng.choice([-1, 1], shape) * 2.0 ** rng.integers(-2, 3, shape)).astype(np.float32), dtype)


def position(rng, p, dim):
    """Axis position p (0..dim) as a node may receive it: as is, from the end, or out of range
    (which clamps)."""
    r = rng.random()
    if r < 0.25 and p == dim:
        return dim + int(rng.integers(1, 4))
    if r < 0.25 and p == 0:
        return -dim - int(rng.integers(1, 4))
    return p - dim if r > 0.6 and p < dim else p  # p == dim from the end would read as 0


def axis_of(rng, rank):
    """A random axis, negative half the time."""
    a = int(rng.integers(rank))
    return a - rank if rng.random() < 0.5 else a


# ---- element-wise ------------------------------------------------------------------------------


def float_unary(kind, fn, lo, hi):
    return sweep(kind, FLOAT, lambda name, rng, dtype, k: unary_case(
        name, kind, values(rng, random_shape(rng), dtype, lo, hi), fn))


def gelu():
    def make(name, rng, dtype, k):
        # (k // 2) alternates slower than the two dtypes, so each mode meets both.
        mode, fn = (("none", gelu_none), ("tanh", gelu_tanh))[(k // 2) % 2]
        return unary_case(name, "GeluNode", values(rng, random_shape(rng), dtype, -4, 4), fn, approximate=mode)
    return sweep("GeluNode", FLOAT, make)


def same_type_unary(kind, fn, dtypes, **attrs):
    # Quarter steps: exact integers, halfway ties and zeros all occur, for the rounding and sign nodes.
    return sweep(kind, dtypes, lambda name, rng, dtype, k: unary_case(
        name, kind, values(rng, random_shape(rng), dtype, -8, 8, step=0.25), fn, **attrs))


def logical_not():
    # Small integers, so zeros are frequent.
    return sweep("LogicalNotNode", (F32, I32, BOOL), lambda name, rng, dtype, k: unary_case(
        name, "LogicalNotNode", values(rng, random_shape(rng), dtype, -2, 2, step=1), mx.logical_not))


def bitwise_invert():
    return sweep("BitwiseInvertNode", BITS, lambda name, rng, dtype, k: unary_case(
        name, "BitwiseInvertNode", full_range(rng, random_shape(rng), dtype), mx.bitwise_invert))


def uniform(lo, hi, step=None):
    return lambda rng, shape, dtype: values(rng, shape, dtype, lo, hi, step)


# Binary nodes: node -> (dtypes, lhs maker, rhs maker). Comparisons and logic use small integers
# so that equal operands and zeros are frequent.
SMALL = uniform(-10, 10, step=0.25)
LOGIC = uniform(-2, 2, step=1)
BINARY_OPERANDS = {
    **{k: (ARITH, SMALL, SMALL) for k in ("AddNode", "SubtractNode", "MultiplyNode", "MaximumNode", "MinimumNode")},
    "DivideNode": (FLOAT, uniform(-4, 4), lambda rng, s, d: away_from_zero(rng, s, d, 0.5, 4)),
    "Atan2Node": (FLOAT, uniform(-3, 3), uniform(-3, 3)),
    "LogAddExpNode": (FLOAT, uniform(-4, 4), uniform(-4, 4)),
    "FloorDivideNode": (FLOAT, uniform(-8, 8), powers_of_two),
    "RemainderNode": (FLOAT, uniform(-8, 8), powers_of_two),
    **{k: (COMPARE, LOGIC, LOGIC) for k in ("LessNode", "LessEqualNode", "GreaterNode", "GreaterEqualNode",
                                            "EqualNode", "NotEqualNode", "LogicalAndNode", "LogicalOrNode")},
    **{k: (BITS, full_range, full_range) for k, _ in BITWISE},
}


def operand_shapes(rng, n):
    out = random_shape(rng)
    return [broadcastable(rng, out) for _ in range(n)]


def binary(kind, fn, dtypes, lhs, rhs):
    def make(name, rng, dtype, k):
        sa, sb = operand_shapes(rng, 2)
        return binary_case(name, kind, lhs(rng, sa, dtype), rhs(rng, sb, dtype), fn)
    return sweep(kind, dtypes, make)


def power():
    def make(name, rng, dtype, k):
        sa, sb = operand_shapes(rng, 2)
        # Negative bases only with integral exponents (otherwise NaN); k % 4 < 2 gives both dtypes each kind.
        if k % 4 < 2:
            base, exp = values(rng, sa, dtype, 0.25, 3), values(rng, sb, dtype, -2, 3)
        else:
            base, exp = away_from_zero(rng, sa, dtype, 0.25, 3), values(rng, sb, dtype, -2, 3, step=1)
        return binary_case(name, "PowerNode", base, exp, mx.power)
    return sweep("PowerNode", FLOAT, make)


def where():
    def make(name, rng, dtype, k):
        sc, sx, sy = operand_shapes(rng, 3)
        cond, x, y = values(rng, sc, BOOL, 0, 1), full_range(rng, sx, dtype), full_range(rng, sy, dtype)
        c = Case(name)
        ic, ix, iy = c.input(cond), c.input(x), c.input(y)
        c.node("WhereNode", condition=ic, x=ix, y=iy, out=c.output(mx.where(cond, x, y)))
        return c
    return sweep("WhereNode", LAYOUT, make)


def clip():
    def make(name, rng, dtype, k):
        x = values(rng, random_shape(rng), dtype, -10, 10)
        which = ("both", "min", "max")[k % 3]
        # Bounds broadcast to x (the output keeps x's shape) and never cross (a_min < a_max).
        lo = values(rng, broadcastable(rng, x.shape), dtype, -6, 2) if which != "max" else None
        hi = values(rng, broadcastable(rng, x.shape), dtype, 3, 8) if which != "min" else None
        c = Case(name)
        ix = c.input(x)
        ilo = c.input(lo) if lo is not None else None
        ihi = c.input(hi) if hi is not None else None
        c.node("ClipNode", x=ix, out=c.output(mx.clip(x, lo, hi)), a_min=ilo, a_max=ihi)
        return c
    return sweep("ClipNode", ARITH, make)


def as_type():
    kinds = (F32, F16, I32, U32, BOOL)
    pairs = tuple((a, b) for a in kinds for b in kinds if a != b)

    def make(name, rng, pair, k):
        src, dst = pair
        # Half steps make float zeros (for bool) likely; float -> uint32 stays non-negative (else UB).
        x = values(rng, random_shape(rng), src, 0 if dst == U32 else -100, 100, step=0.5)
        return unary_case(name, "AsTypeNode", x, lambda v: v.astype(dst), scalar_type=scalar_type(dst))
    return sweep("AsTypeNode", pairs, make)


# ---- fills and ranges --------------------------------------------------------------------------


def fill_value(rng, dtype):
    """A quarter-step fill value, non-negative for unsigned and bool (negative -> unsigned is UB)."""
    lo = 0 if dtype == BOOL or mx.issubdtype(dtype, mx.unsignedinteger) else -8
    return float(np.round(rng.uniform(lo, 8) * 4) / 4)


def filled(shape, v, dtype):
    # ExecuTorch calls full(shape, float v, dtype): v goes through float32, then dtype.
    return mx.full(shape, mx.array(v, mx.float32).astype(dtype))


def full():
    def make(name, rng, dtype, k):
        shape, v = random_shape(rng), fill_value(rng, dtype)
        c = Case(name)
        c.node("FullNode", out=c.output(filled(shape, v, dtype)), shape=[iv(s) for s in shape], v=fv(v),
               scalar_type=scalar_type(dtype))
        return c
    return sweep("FullNode", FILL, make)


def full_like():
    def make(name, rng, dtype, k):
        x = full_range(rng, random_shape(rng), LAYOUT[rng.integers(len(LAYOUT))])
        v = fill_value(rng, dtype)
        return simple(name, "FullLikeNode", x, filled(x.shape, v, dtype), v=fv(v), scalar_type=scalar_type(dtype))
    return sweep("FullLikeNode", FILL, make)


def arange():
    def make(name, rng, dtype, k):
        start, count = int(rng.integers(-10, 11)), int(rng.integers(0, 8))
        step = int(rng.choice([-3, -2, -1, 1, 2, 3]))
        # Stopping short of the last step by less than |step| keeps `count` elements (none when
        # count is 0 and the stop lies behind the start).
        stop = start + step * count - int(np.sign(step)) * int(rng.integers(0, abs(step)))
        c = Case(name)
        c.node("ARangeNode", out=c.output(mx.arange(start, stop, step, dtype)), start=iv(start), stop=iv(stop),
               step=iv(step), scalar_type=scalar_type(dtype))
        return c
    return sweep("ARangeNode", (I32, F32), make)


def tri():
    def make(name, rng, dtype, k):
        n, m = random_shape(rng, 2, 2)  # two dims, occasionally one of them 0
        kk = int(rng.integers(-3, 4))
        c = Case(name)
        c.node("TriNode", out=c.output(mx.tri(n, m, kk, dtype)), n=iv(n), m=iv(m), k=kk,
               scalar_type=scalar_type(dtype))
        return c
    return sweep("TriNode", FILL, make)


def tril_triu(kind, fn):
    def make(name, rng, dtype, k):
        x, kk = full_range(rng, random_shape(rng, min_rank=2), dtype), int(rng.integers(-3, 4))
        return simple(name, kind, x, fn(x, kk), k=kk)
    return sweep(kind, FILL, make)


# ---- layout ------------------------------------------------------------------------------------


def layout(kind, build, min_rank=0, max_rank=4, empty_ok=True):
    """build(name, rng, x, k) -> Case, for x of a random shape and LAYOUT dtype."""
    return sweep(kind, LAYOUT, lambda name, rng, dtype, k: build(
        name, rng, full_range(rng, random_shape(rng, min_rank, max_rank, empty_ok), dtype), k))


def transpose(name, rng, x, k):
    perm = [int(p) - x.ndim if rng.random() < 0.3 else int(p) for p in rng.permutation(x.ndim)]
    return simple(name, "TransposeNode", x, mx.transpose(x, perm), perm=perm)


def broadcast_to(name, rng, x, k):
    # New leading dims, then per input dim: -1 (keep), its own size, or any size where it is 1.
    target = [int(d) for d in rng.integers(1, 5, rng.integers(0, 3))]
    for d in x.shape:
        r = rng.random()
        if r < 0.3:
            target.append(-1)
        elif d == 1 and r < 0.8:
            target.append(int(rng.integers(1, 6)))
        else:
            target.append(d)
    real = [x.shape[i - (len(target) - x.ndim)] if t == -1 else t for i, t in enumerate(target)]
    return simple(name, "BroadcastToNode", x, mx.broadcast_to(x, real), shape=[iv(t) for t in target])


def slice_(name, rng, x, k):
    axis = axis_of(rng, x.ndim)
    dim = x.shape[axis]
    start, stop = sorted(int(p) for p in rng.integers(0, dim + 1, 2))
    start, stop, step = position(rng, start, dim), position(rng, stop, dim), int(rng.integers(1, 4))
    index = [slice(None)] * x.ndim
    index[axis] = slice(start, stop, step)
    return simple(name, "SliceNode", x, x[tuple(index)], axis=iv(axis), start=iv(start), stop=iv(stop), step=step)


def tile(name, rng, x, k):
    # Up to two reps more than the rank (new leading dims) or fewer (applied to the last dims).
    reps = [int(r) for r in rng.integers(1, 4, rng.integers(1, x.ndim + 3))]
    if rng.random() < EMPTY_P:
        reps[rng.integers(len(reps))] = 0
    return simple(name, "TileNode", x, mx.tile(x, reps), reps=[iv(r) for r in reps])


def repeat(name, rng, x, k):
    axis, r = axis_of(rng, x.ndim), int(rng.integers(0, 4))
    return simple(name, "RepeatNode", x, mx.repeat(x, r, axis), repeats=iv(r), axis=axis)


def roll(name, rng, x, k):
    axes = [int(a) for a in rng.choice(x.ndim, min(x.ndim, int(rng.integers(1, 3))), replace=False)]
    # Shifts up to twice the dim either way, so wrapping by more than a full turn is covered.
    shift = [int(rng.integers(-2 * x.shape[a] - 1, 2 * x.shape[a] + 2)) for a in axes]
    axes = [a - x.ndim if rng.random() < 0.3 else a for a in axes]
    return simple(name, "RollNode", x, mx.roll(x, shift, axes), shift=[iv(s) for s in shift], axes=axes)


def pad(name, rng, x, k):
    # Edge mode needs a non-empty input (MLX has nothing to replicate), so it alternates only on
    # inputs with elements. One pair applies to every dim.
    mode = "edge" if k % 2 and x.size else "constant"
    pairs = [tuple(int(w) for w in rng.integers(0, 4, 2)) for _ in range(1 if rng.random() < 0.3 else x.ndim)]
    value = fill_value(rng, x.dtype) or 1.0  # non-zero: a zero fill could hide a missing one
    expected = mx.pad(x, pairs, mode=mode, constant_values=mx.array(value, mx.float32))
    return simple(name, "PadNode", x, expected, pad_width=[iv(w) for p in pairs for w in p], mode=mode,
                  constant_value=value)


def slice_update(name, rng, x, k):
    axis = axis_of(rng, x.ndim)
    dim = x.shape[axis]
    # Case 1 is the start >= stop no-op (the ring KV cache relies on it); others write >= 1 position.
    if k == 1 or dim == 0:
        s0 = int(rng.integers(0, dim + 1))
        s1 = max(0, s0 - int(rng.integers(0, 2)))
    else:
        s0 = int(rng.integers(0, dim))
        s1 = int(rng.integers(s0 + 1, dim + 1))
    step = int(rng.integers(1, 4))
    region = list(x.shape)
    region[axis] = len(range(s0, s1, step))
    update = full_range(rng, broadcastable(rng, region), x.dtype)
    expected = mx.array(x)
    if s0 < s1:
        index = [slice(None)] * x.ndim
        index[axis] = slice(s0, s1, step)
        expected[tuple(index)] = update
    c = Case(name)
    ix, iu = c.input(x), c.input(update)
    c.node("SliceUpdateNode", dst=ix, update=iu, out=c.output(expected), axis=iv(axis),
           start=iv(position(rng, s0, dim)), stop=iv(position(rng, s1, dim)), step=step)
    return c


def index_copy(name, rng, x, k):
    axis = axis_of(rng, x.ndim)
    dim = x.shape[axis]
    positions = [int(p) for p in rng.choice(dim, int(rng.integers(0, dim + 1)), replace=False)]
    indices = [p - dim if rng.random() < 0.5 else p for p in positions]
    ushape = list(x.shape)
    ushape[axis] = len(positions)
    update = full_range(rng, ushape, x.dtype)
    expected = mx.array(x)
    for j, p in enumerate(positions):
        src, dst = [slice(None)] * x.ndim, [slice(None)] * x.ndim
        src[axis], dst[axis] = j, p
        expected[tuple(dst)] = update[tuple(src)]
    c = Case(name)
    ix, iu, ii = c.input(x), c.input(update), c.input(mx.array(indices, mx.int32))
    c.node("IndexCopyNode", dst=ix, update=iu, indices=ii, out=c.output(expected), axis=axis)
    return c


# ---- reductions and scans -----------------------------------------------------------------------

ORDERED = (F32, F16, I32, U32, I8, U8, BOOL)
AXES_REDUCTIONS = {  # node: (MLX function, dtypes, float range)
    "SumNode": (mx.sum, (F32, F16, I32, BOOL), (-2, 2)), "ProdNode": (mx.prod, (F32, F16, I32), (0.5, 1.5)),
    "MeanNode": (mx.mean, (F32, F16, I32), (-2, 2)), "MaxNode": (mx.max, ORDERED, (-4, 4)),
    "MinNode": (mx.min, ORDERED, (-4, 4)), "AnyNode": (mx.any, ORDERED, (-1, 1)), "AllNode": (mx.all, ORDERED, (-1, 1)),
    "VarNode": (mx.var, FLOAT, (-2, 2)), "StdNode": (mx.std, FLOAT, (-2, 2)), "LogSumExpNode": (mx.logsumexp, FLOAT, (-4, 4)),
}


def reduction_shape(rng, min_rank=0):
    """A random shape without zero dims (MLX can deadlock reducing one), its last dim long (32 to
    300, a workgroup per row) two times in five."""
    shape = random_shape(rng, min_rank, 4, empty_ok=False)
    if shape and rng.random() < 0.4:
        shape[-1] = int(rng.integers(32, 301))
    return shape


def reduction_values(rng, shape, dtype, lo, hi):
    """Floats in [lo, hi], integers over their whole range (sums and products wrap)."""
    return values(rng, shape, dtype, lo, hi) if dtype in FLOAT else full_range(rng, shape, dtype)


def axes_reduction(kind):
    fn, dtypes, (lo, hi) = AXES_REDUCTIONS[kind]

    def make(name, rng, dtype, k):
        x = reduction_values(rng, reduction_shape(rng), dtype, lo, hi)
        axes = [d - x.ndim if rng.random() < 0.5 else d for d in range(x.ndim) if rng.random() < 0.5]
        keep = bool(rng.random() < 0.5)
        extra = {"ddof": int(rng.integers(0, 3))} if kind in ("VarNode", "StdNode") else {}
        # An empty list reduces everything, except for LogSumExp, whose axes ExecuTorch passes as they are.
        axis = axes if axes or kind == "LogSumExpNode" else None
        return simple(name, kind, x, fn(x, axis=axis, keepdims=keep, **extra), axes=axes, keepdims=keep, **extra)
    return sweep(kind, dtypes, make)


def median():
    """A run of adjacent axes (what the GPU kernel sorts as one line), or all of them."""
    def make(name, rng, dtype, k):
        x = values(rng, reduction_shape(rng, 1), dtype, -4, 4)
        first = int(rng.integers(0, x.ndim))
        run = range(first, int(rng.integers(first, x.ndim)) + 1)
        axes = [] if rng.random() < 0.2 else [d - x.ndim if rng.random() < 0.5 else d for d in run]
        keep = bool(rng.random() < 0.5)
        return simple(name, "MedianNode", x, mx.median(x, axis=axes if axes else None, keepdims=keep), axes=axes,
                      keepdims=keep)
    return sweep("MedianNode", FLOAT, make)


def arg_reduction(kind, fn):
    def make(name, rng, dtype, k):
        x = reduction_values(rng, reduction_shape(rng, 1), dtype, -4, 4)
        axis, keep = axis_of(rng, x.ndim), bool(rng.random() < 0.5)
        return simple(name, kind, x, fn(x, axis=axis, keepdims=keep), axis=axis, keepdims=keep)
    return sweep(kind, ORDERED, make)


def softmax():
    def make(name, rng, dtype, k):
        x = values(rng, reduction_shape(rng, 1), dtype, -6, 6)
        axis, precise = axis_of(rng, x.ndim), bool(rng.random() < 0.5)
        return simple(name, "SoftmaxNode", x, mx.softmax(x, axis, precise=precise), axis=axis, precise=precise)
    return sweep("SoftmaxNode", FLOAT, make)


def cumsum():
    # Positive floats: a float32 running sum that crosses zero is off by ulps of its largest value.
    def make(name, rng, dtype, k):
        x = reduction_values(rng, reduction_shape(rng, 1), dtype, 0, 2)
        axis, rev, inc = axis_of(rng, x.ndim), bool(rng.random() < 0.5), bool(rng.random() < 0.5)
        return simple(name, "CumsumNode", x, mx.cumsum(x, axis=axis, reverse=rev, inclusive=inc), axis=axis, reverse=rev,
                      inclusive=inc)
    return sweep("CumsumNode", (F32, F16, I32, U32, BOOL), make)


# ---- registry ----------------------------------------------------------------------------------

SIGNED_ONLY = ("AbsNode", "NegNode", "SignNode")  # no uint32: these are about the sign


def cases():
    out = {kind: float_unary(kind, fn, lo, hi) for kind, fn, (lo, hi) in FLOAT_UNARY}
    out["GeluNode"] = gelu()
    for kind, fn in SAME_TYPE_UNARY:
        out[kind] = same_type_unary(kind, fn, (F32, F16, I32) if kind in SIGNED_ONLY else ARITH)
    out["RoundNode"] = same_type_unary("RoundNode", mx.round, ARITH, decimals=0)
    out["LogicalNotNode"] = logical_not()
    out["BitwiseInvertNode"] = bitwise_invert()
    functions = {kind: fn for kind, fn, _ in BINARY} | dict(BITWISE)
    for kind, (dtypes, lhs, rhs) in BINARY_OPERANDS.items():
        out[kind] = binary(kind, functions[kind], dtypes, lhs, rhs)
    out["PowerNode"] = power()
    out["WhereNode"] = where()
    out["ClipNode"] = clip()
    out["AsTypeNode"] = as_type()
    out["FullNode"] = full()
    out["FullLikeNode"] = full_like()
    out["ARangeNode"] = arange()
    out["TriNode"] = tri()
    out["TrilNode"] = tril_triu("TrilNode", mx.tril)
    out["TriuNode"] = tril_triu("TriuNode", mx.triu)
    out["TransposeNode"] = layout("TransposeNode", transpose)
    out["BroadcastToNode"] = layout("BroadcastToNode", broadcast_to, max_rank=3)
    out["SliceNode"] = layout("SliceNode", slice_, min_rank=1)
    out["TileNode"] = layout("TileNode", tile, max_rank=3)
    out["RepeatNode"] = layout("RepeatNode", repeat, min_rank=1)
    out["RollNode"] = layout("RollNode", roll, min_rank=1)
    out["PadNode"] = layout("PadNode", pad, min_rank=1)
    out["SliceUpdateNode"] = layout("SliceUpdateNode", slice_update, min_rank=1)
    out["IndexCopyNode"] = layout("IndexCopyNode", index_copy, min_rank=1)
    for kind in AXES_REDUCTIONS:
        out[kind] = axes_reduction(kind)
    out["MedianNode"] = median()
    out["ArgmaxNode"] = arg_reduction("ArgmaxNode", mx.argmax)
    out["ArgminNode"] = arg_reduction("ArgminNode", mx.argmin)
    out["SoftmaxNode"] = softmax()
    out["CumsumNode"] = cumsum()
    return out
