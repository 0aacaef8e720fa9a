"""Element-wise nodes: unary math, binary arithmetic, comparisons, logic, Where, Clip, AsType."""
import mlx.core as mx
import numpy as np

from data import FLOATS, Data, special_floats
from program import Case


def unary_case(name, kind, x, fn, transpose=None, **attrs):
    """kind(x) vs fn(x); with `transpose`, the node reads a Transpose of the input (a strided
    view in MLX)."""
    c = Case(name)
    src = c.input(x)
    if transpose is not None:
        t = c.temp()
        c.node("TransposeNode", x=src, out=t, perm=transpose)
        src, x = t, mx.transpose(x, transpose)
    c.node(kind, x=src, out=c.output(fn(x)), **attrs)
    return c


def binary_case(name, kind, a, b, fn):
    c = Case(name)
    ia, ib = c.input(a), c.input(b)
    c.node(kind, a=ia, b=ib, out=c.output(fn(a, b)))
    return c


# Unary nodes computing in floating point: (node, MLX function, input range).
FLOAT_UNARY = [
    ("SiluNode", lambda x: x * mx.sigmoid(x), (-4, 4)),
    ("SigmoidNode", mx.sigmoid, (-6, 6)),
    ("TanhNode", mx.tanh, (-3, 3)),
    ("RsqrtNode", mx.rsqrt, (0.1, 4)),
    ("LogNode", mx.log, (0.1, 4)),
    ("ExpNode", mx.exp, (-4, 4)),
    ("SinNode", mx.sin, (-4, 4)),
    ("CosNode", mx.cos, (-4, 4)),
    ("TanNode", mx.tan, (-1.2, 1.2)),
    ("ArcsinNode", mx.arcsin, (-0.99, 0.99)),
    ("ArccosNode", mx.arccos, (-0.99, 0.99)),
    ("ArctanNode", mx.arctan, (-4, 4)),
    ("SinhNode", mx.sinh, (-3, 3)),
    ("CoshNode", mx.cosh, (-3, 3)),
    ("ArcsinhNode", mx.arcsinh, (-4, 4)),
    ("ArccoshNode", mx.arccosh, (1.01, 4)),
    ("ArctanhNode", mx.arctanh, (-0.95, 0.95)),
    ("Log2Node", mx.log2, (0.1, 4)),
    ("Log10Node", mx.log10, (0.1, 4)),
    ("Log1pNode", mx.log1p, (-0.9, 3)),
    ("ErfNode", mx.erf, (-3, 3)),
    ("Expm1Node", mx.expm1, (-3, 3)),
    ("ReciprocalNode", mx.reciprocal, (0.25, 4)),
    ("SqrtNode", mx.sqrt, (0, 4)),
]

# Unary nodes that keep the input dtype.
SAME_TYPE_UNARY = [
    ("AbsNode", mx.abs),
    ("NegNode", mx.negative),
    ("SquareNode", mx.square),
    ("SignNode", mx.sign),
    ("FloorNode", mx.floor),
    ("CeilNode", mx.ceil),
    ("TruncNode", lambda x: x if not mx.issubdtype(x.dtype, mx.floating)
        else mx.where(x < 0, mx.ceil(x), mx.floor(x))),
]


def gelu_tanh(x):
    # ExecuTorch's gelu_tanh_impl: each step an MLX op in x's dtype.
    d = x.dtype
    inner = mx.array(0.7978845608, d) * (x + mx.array(0.044715, d) * (x * (x * x)))
    return mx.array(0.5, d) * (x * (mx.array(1.0, d) + mx.tanh(inner)))


def gelu_none(x):
    d = x.dtype
    return mx.array(0.5, d) * (x * (mx.array(1.0, d) + mx.erf(mx.array(0.7071067812, d) * x)))


def float_unary_cases(kind, fn, lo, hi):
    d = Data(kind)
    ilo, ihi = int(np.ceil(lo)), int(np.floor(hi))
    cases = [
        unary_case("f32", kind, d.floats((3, 5), mx.float32, lo, hi), fn),
        unary_case("f16", kind, d.floats((2, 3, 4), mx.float16, lo, hi), fn),
        unary_case("bf16", kind, d.floats((7,), mx.bfloat16, lo, hi), fn),
        unary_case("special_values", kind, special_floats(), fn),
        unary_case("empty", kind, d.floats((0, 3)), fn),
        unary_case("scalar", kind, d.floats((), mx.float32, lo, hi), fn),
        unary_case("transposed", kind, d.floats((4, 3), mx.float32, lo, hi), fn, transpose=[1, 0]),
    ]
    if ihi >= ilo:
        cases.append(unary_case("int32_to_float", kind, d.ints((2, 4), mx.int32, ilo, ihi + 1), fn))
    return cases


def same_type_unary_cases(kind, fn):
    d = Data(kind)
    return [
        unary_case("f32", kind, d.floats((3, 5), lo=-4, hi=4), fn),
        unary_case("f16", kind, d.floats((2, 6), mx.float16, -4, 4), fn),
        unary_case("bf16", kind, d.floats((5,), mx.bfloat16, -4, 4), fn),
        unary_case("int8_extremes", kind, mx.array([-128, -127, -1, 0, 1, 100, 127], mx.int8), fn),
        unary_case("uint8", kind, mx.array([0, 1, 15, 16, 255], mx.uint8), fn),
        unary_case("int64", kind, d.ints((2, 3), mx.int64, -50000, 50000), fn),
        unary_case("special_values", kind, special_floats(), fn),
        unary_case("empty", kind, d.floats((2, 0)), fn),
        unary_case("transposed", kind, d.floats((2, 3, 4), lo=-4, hi=4), fn, transpose=[2, 0, 1]),
    ]


def gelu_cases():
    d = Data("GeluNode")
    out = []
    for mode, fn in (("none", gelu_none), ("tanh", gelu_tanh)):
        out += [
            unary_case(f"{mode}_f32", "GeluNode", d.floats((4, 6), lo=-4, hi=4), fn, approximate=mode),
            unary_case(f"{mode}_f16", "GeluNode", d.floats((3, 5), mx.float16, -4, 4), fn, approximate=mode),
            unary_case(f"{mode}_bf16", "GeluNode", d.floats((9,), mx.bfloat16, -4, 4), fn, approximate=mode),
            unary_case(f"{mode}_special", "GeluNode", special_floats(), fn, approximate=mode),
        ]
    return out


def round_cases():
    d = Data("RoundNode")
    halves = mx.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.25, 1.125, 2.675, np.nan, np.inf])
    return [
        unary_case("half_to_even", "RoundNode", halves, lambda x: mx.round(x)),
        unary_case("decimals_2", "RoundNode", d.floats((3, 4), lo=-10, hi=10),
                   lambda x: mx.round(x, 2), decimals=2),
        unary_case("decimals_1_f16", "RoundNode", d.floats((6,), mx.float16, -10, 10),
                   lambda x: mx.round(x, 1), decimals=1),
        unary_case("decimals_neg1", "RoundNode", d.floats((5,), lo=-200, hi=200),
                   lambda x: mx.round(x, -1), decimals=-1),
        unary_case("bf16", "RoundNode", d.floats((8,), mx.bfloat16, -10, 10), lambda x: mx.round(x)),
        unary_case("int32", "RoundNode", d.ints((4,), mx.int32, -9, 9), lambda x: mx.round(x)),
    ]


def logical_not_cases():
    d = Data("LogicalNotNode")
    fn = mx.logical_not
    return [
        unary_case("bool", "LogicalNotNode", d.ints((3, 4), mx.bool_), fn),
        unary_case("float", "LogicalNotNode", special_floats(), fn),
        unary_case("int8", "LogicalNotNode", d.ints((6,), mx.int8, -2, 3), fn),
        unary_case("empty", "LogicalNotNode", d.ints((0,), mx.bool_), fn),
        unary_case("transposed", "LogicalNotNode", d.ints((2, 3), mx.bool_), fn, transpose=[1, 0]),
    ]


def bitwise_invert_cases():
    d = Data("BitwiseInvertNode")
    fn = mx.bitwise_invert
    return [
        unary_case("int8", "BitwiseInvertNode", mx.array([-128, -1, 0, 1, 127], mx.int8), fn),
        unary_case("uint8", "BitwiseInvertNode", mx.array([0, 1, 254, 255], mx.uint8), fn),
        unary_case("int32", "BitwiseInvertNode", d.ints((3, 3), mx.int32, -1000, 1000), fn),
        unary_case("uint32", "BitwiseInvertNode", mx.array([0, 1, 4294967295], mx.uint32), fn),
        unary_case("bool", "BitwiseInvertNode", d.ints((5,), mx.bool_), fn),
        unary_case("int64", "BitwiseInvertNode", d.ints((4,), mx.int64, -10**6, 10**6), fn),
    ]


# Binary nodes: (node, MLX function, flags). Flags: "nozero" keeps integer divisors nonzero,
# "smallexp" keeps integer exponents in [0, 5], "float_only" skips integer cases.
BINARY = [
    ("AddNode", mx.add, ""),
    ("SubtractNode", mx.subtract, ""),
    ("MultiplyNode", mx.multiply, ""),
    ("DivideNode", mx.divide, "nozero"),
    ("MaximumNode", mx.maximum, ""),
    ("MinimumNode", mx.minimum, ""),
    ("PowerNode", mx.power, "smallexp"),
    ("Atan2Node", mx.arctan2, ""),
    ("LogAddExpNode", mx.logaddexp, ""),
    ("FloorDivideNode", mx.floor_divide, "nozero"),
    ("RemainderNode", mx.remainder, "nozero"),
    ("LessNode", mx.less, ""),
    ("LessEqualNode", mx.less_equal, ""),
    ("GreaterNode", mx.greater, ""),
    ("GreaterEqualNode", mx.greater_equal, ""),
    ("EqualNode", mx.equal, ""),
    ("NotEqualNode", mx.not_equal, ""),
    ("LogicalAndNode", mx.logical_and, ""),
    ("LogicalOrNode", mx.logical_or, ""),
]


def nonzero(a):
    return mx.where(a == 0, mx.array(1, a.dtype), a)


def binary_cases(kind, fn, flags):
    d = Data(kind)

    def rhs_int(shape, dtype, lo=-5, hi=6):
        b = d.ints(shape, dtype, 0 if "smallexp" in flags else lo, 6 if "smallexp" in flags else hi)
        return nonzero(b) if "nozero" in flags else b

    def rhs_float(shape, dtype=mx.float32, lo=-3.0, hi=3.0):
        return d.floats(shape, dtype, 0.5 if "smallexp" in flags else lo, hi)

    cases = [
        binary_case("f32_broadcast", kind, d.floats((3, 1, 4), lo=0.2, hi=3), rhs_float((5, 4)), fn),
        binary_case("f16", kind, d.floats((2, 5), mx.float16, 0.2, 3), rhs_float((2, 5), mx.float16), fn),
        binary_case("bf16_with_f16", kind, d.floats((4,), mx.bfloat16, 0.2, 3),
                    rhs_float((4,), mx.float16), fn),
        binary_case("int32_with_f32", kind, d.ints((3, 2), mx.int32, 1, 5), rhs_float((2,)), fn),
        binary_case("empty", kind, d.floats((0, 3)), rhs_float((1, 3)), fn),
        binary_case("scalar_rhs", kind, d.floats((2, 3), lo=0.2, hi=3), rhs_float(()), fn),
    ]
    special = special_floats()
    if "smallexp" not in flags:
        cases.append(binary_case("special_values", kind, special, special[::-1], fn))
    cases += [
        binary_case("int8_wraps", kind, mx.array([127, -128, 100, -100, 7, -7], mx.int8),
                    rhs_int((6,), mx.int8, -4, 5) if "nozero" in flags or "smallexp" in flags
                    else mx.array([1, -1, 100, -100, 3, 2], mx.int8), fn),
        binary_case("uint8_with_int8", kind, d.ints((5,), mx.uint8, 0, 255), rhs_int((5,), mx.int8), fn),
        binary_case("int32_broadcast", kind, d.ints((2, 1, 3), mx.int32, -20, 20),
                    rhs_int((4, 3), mx.int32), fn),
        binary_case("uint32_with_int32", kind, mx.array([0, 7, 4000000000], mx.uint32),
                    rhs_int((3,), mx.int32, 1, 5), fn),
        binary_case("bool_with_bool", kind, d.ints((6,), mx.bool_), nonzero(d.ints((6,), mx.bool_))
                    if "nozero" in flags else d.ints((6,), mx.bool_), fn),
    ]
    return cases


BITWISE = [("BitwiseAndNode", mx.bitwise_and), ("BitwiseOrNode", mx.bitwise_or),
           ("BitwiseXorNode", mx.bitwise_xor)]


def bitwise_cases(kind, fn):
    d = Data(kind)
    return [
        binary_case("int32", kind, d.ints((3, 4), mx.int32, -1000, 1000),
                    d.ints((3, 4), mx.int32, -1000, 1000), fn),
        binary_case("uint8_broadcast", kind, d.ints((2, 1), mx.uint8, 0, 256),
                    d.ints((3,), mx.uint8, 0, 256), fn),
        binary_case("int8_with_uint8", kind, d.ints((4,), mx.int8, -128, 128),
                    d.ints((4,), mx.uint8, 0, 256), fn),
        binary_case("bool", kind, d.ints((5,), mx.bool_), d.ints((5,), mx.bool_), fn),
        binary_case("uint32", kind, mx.array([0, 4294967295, 123456789], mx.uint32),
                    mx.array([4294967295, 1, 987654321], mx.uint32), fn),
        binary_case("int64", kind, d.ints((3,), mx.int64, -10**9, 10**9),
                    d.ints((3,), mx.int64, -10**9, 10**9), fn),
    ]


def where_cases():
    d = Data("WhereNode")

    def case(name, cond, x, y):
        c = Case(name)
        ic, ix, iy = c.input(cond), c.input(x), c.input(y)
        c.node("WhereNode", condition=ic, x=ix, y=iy, out=c.output(mx.where(cond, x, y)))
        return c

    return [
        case("broadcast", d.ints((3, 1), mx.bool_), d.floats((1, 4)), d.floats((3, 4))),
        case("f32_with_f16", d.ints((5,), mx.bool_), d.floats((5,)), d.floats((5,), mx.float16)),
        case("int_condition", d.ints((4,), mx.int32, -1, 2), d.ints((4,), mx.int8), d.ints((4,), mx.int32)),
        case("float_condition", special_floats(), d.floats((10,)), d.floats((10,))),
        case("empty", d.ints((0, 2), mx.bool_), d.floats((0, 2)), d.floats((1, 2))),
        case("bf16", d.ints((2, 3), mx.bool_), d.floats((2, 3), mx.bfloat16), d.floats((3,), mx.bfloat16)),
    ]


def clip_cases():
    d = Data("ClipNode")

    def case(name, x, lo, hi):
        c = Case(name)
        ix = c.input(x)
        ilo = c.input(lo) if lo is not None else None
        ihi = c.input(hi) if hi is not None else None
        c.node("ClipNode", x=ix, out=c.output(mx.clip(x, lo, hi)), a_min=ilo, a_max=ihi)
        return c

    return [
        case("both", d.floats((3, 4), lo=-3, hi=3), mx.array(-1.0), mx.array(1.5)),
        case("min_only", d.floats((5,), lo=-3, hi=3), mx.array(0.0), None),
        case("max_only_broadcast", d.floats((2, 3), lo=-3, hi=3), None, d.floats((3,))),
        case("int32", d.ints((6,), mx.int32, -10, 10), mx.array(-2, mx.int32), mx.array(3, mx.int32)),
        case("nan", special_floats(), mx.array(-1.0), mx.array(1.0)),
        case("f16_with_f32_bounds", d.floats((4,), mx.float16, -3, 3), mx.array(-0.5), mx.array(0.5)),
    ]


def astype_cases():
    d = Data("AsTypeNode")

    def case(name, x, dtype):
        from program import scalar_type
        return unary_case(name, "AsTypeNode", x, lambda v: v.astype(dtype), scalar_type=scalar_type(dtype))

    ties = mx.array([1.0009765625 + 2**-11, 1.0 + 3 * 2**-11, 65504.0, 65520.0, 1e-8, -2.5], mx.float32)
    return [
        case("f32_to_int32_truncates", d.floats((6,), lo=-100, hi=100), mx.int32),
        case("f32_to_f16_ties_to_even", ties, mx.float16),
        case("f32_to_bf16", mx.array([1.0 + 2**-8, 1.0 + 3 * 2**-8, np.nan, -np.inf, 3.3e38]), mx.bfloat16),
        case("int32_to_int8_wraps", mx.array([300, -129, 127, 128, -1], mx.int32), mx.int8),
        case("int_to_bool", d.ints((5,), mx.int32, -2, 3), mx.bool_),
        case("bool_to_f32", d.ints((4,), mx.bool_), mx.float32),
        case("uint32_to_f32", mx.array([0, 4294967295, 16777217], mx.uint32), mx.float32),
        case("f16_to_uint8", d.floats((4,), mx.float16, 0, 250), mx.uint8),
        case("bf16_to_f16", d.floats((5,), mx.bfloat16, -100, 100), mx.float16),
        case("int64_to_f32", mx.array([2**40 + 1, -(2**33) - 3], mx.int64), mx.float32),
    ]


def cases():
    out = {}
    for kind, fn, (lo, hi) in FLOAT_UNARY:
        out[kind] = float_unary_cases(kind, fn, lo, hi)
    for kind, fn in SAME_TYPE_UNARY:
        out[kind] = same_type_unary_cases(kind, fn)
    for kind, fn, flags in BINARY:
        out[kind] = binary_cases(kind, fn, flags)
    for kind, fn in BITWISE:
        out[kind] = bitwise_cases(kind, fn)
    out["GeluNode"] = gelu_cases()
    out["RoundNode"] = round_cases()
    out["LogicalNotNode"] = logical_not_cases()
    out["BitwiseInvertNode"] = bitwise_invert_cases()
    out["WhereNode"] = where_cases()
    out["ClipNode"] = clip_cases()
    out["AsTypeNode"] = astype_cases()
    return out
