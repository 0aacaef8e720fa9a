#!/usr/bin/env python3
"""Writes kernels/specs/mlx/*.json, the specs of the IR nodes' WebGPU kernels.

The specs are data that the spec engine reads at run time; this script is how they are kept
consistent with each other and with their five templates (elementwise, gather, scatter-region,
concat, split under kernels/wgsl). Edit the tables here, run it, commit both. CTest
`mlx_specs_up_to_date` fails when the committed specs differ from what it writes.

    python tools/kernels/write_mlx_specs.py [OUT_DIR]   (default: kernels/specs/mlx)
"""
import json
import os
import re
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernels", "specs", "mlx")
os.makedirs(OUT, exist_ok=True)
WG = {"WORKGROUP_SIZE": {"default": 256, "min": 1, "max": 256}}
FLOATS = ["float32", "float16"]
NUMERIC = ["float32", "float16", "int32", "uint32"]
SIGNED = ["float32", "float16", "int32"]
INTS = ["int32", "uint32", "bool"]
ANY = ["float32", "float16", "int32", "uint32", "bool"]
MOVE = ["float32", "float16", "int32", "uint32", "int16", "int8", "uint8", "bool", "int64"]
# int64 lives on the GPU narrowed to i32 (range-checked on upload): fine where no new values
# beyond the inputs' are made (moves, comparisons, casts from integers).
ANY64 = ANY + ["int64"]

def write(name, d):
    """The spec as indented JSON with short lists and small objects kept on one line."""
    text = json.dumps(d, indent=2)
    text = re.sub(r"\[\s*((?:\"[^\"]*\"|-?\d+)(?:,\s*(?:\"[^\"]*\"|-?\d+))*)\s*\]", lambda m: "[" + re.sub(r",\s*", ", ", m.group(1)) + "]", text)
    text = re.sub(r"\{\s*(\"[^\"]*\": (?:\"[^\"]*\"|-?\d+|true|false)(?:,\s*\"[^\"]*\": (?:\"[^\"]*\"|-?\d+|true|false))*)\s*\}", lambda m: "{ " + re.sub(r",\s*\n\s*", ", ", m.group(1)) + " }", text)
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        f.write(text + "\n")


def q(s):
    return json.dumps(s)

def spec(name, desc, inputs, out_dtype, out_shape, types, expr, helpers=(), attrs=None, params=(), when=(), aliases=None, constraints=None, extra_derive=None):
    inames = list(inputs)
    d = {"domain": "mlx", "name": name, "description": desc}
    d["inputs"] = {n: ({"dtype": t} if not isinstance(t, dict) else t) for n, t in inputs.items()}
    d["outputs"] = {"out": {"dtype": out_dtype, "shape": out_shape}}
    if attrs:
        d["attributes"] = attrs
    if constraints:
        d["attributeConstraints"] = constraints
    d["typeConstraints"] = types
    d["tunables"] = WG
    tvars = list(types)
    d["when"] = [f"f16Ok(dtypes.{t})" for t in tvars] + list(when)
    derive = {
        "expr": expr,
        "aliases": aliases or "[" + ", ".join(f"[{q(t)}, \"f32\" if dtypes.{t} == \"f16\" else dtypes.{t}]" for t in tvars) + "]",
        "helpers": q(list(helpers)),
        "outShape": "shapes.out",
        "inputStrides": " + ".join(f"[broadcastStrides(shapes.{n}, shapes.out)]" if not (isinstance(inputs[n], dict) and inputs[n].get("optional")) else f"([broadcastStrides(shapes.{n}, shapes.out)] if present.{n} else [])" for n in inames) or "[]",
    }
    if extra_derive:
        derive.update(extra_derive)
    d["derive"] = derive
    fields = [{"name": "count", "type": "u32", "value": "numel(shapes.out)"}] + list(params)
    d["bindings"] = {"params": {"struct": fields}}
    same_shape = [f"shapes.{n} == shapes.out" if not (isinstance(inputs[n], dict) and inputs[n].get("optional"))
                  else f"(not present.{n} or shapes.{n} == shapes.out)" for n in inames]
    vec = lambda t: f"\"vec4<\" ~ dtypes.{t} ~ \">\""
    coordinate_free = "row" not in expr and "col" not in expr
    d["variants"] = []
    if coordinate_free:
        # Each invocation one vec4 of every binding: no index arithmetic, 16-byte accesses.
        d["variants"].append({"id": "contiguous_vec4", "priority": 10,
            "when": ["numel(shapes.out) % 4 == 0"] + same_shape,
            # An absent optional input has no dtypes entry of its own: use its type variable.
            "derive": {"lanes": "4", "rowwise": "false", **{f"vec_{n}": vec(inputs[n]["dtype"] if isinstance(inputs[n], dict) and inputs[n].get("optional") else n)
                                         for n in inames}, "vec_out": vec("out")},
            "passes": [{"id": "map", "name": name, "shader": "elementwise.wgsl.jinja",
                        "bindings": [{"arg": n, "elementType": f"$vec_{n}"} for n in inames]
                                    + [{"arg": "out", "elementType": "$vec_out"}, "params"],
                        "dispatch": {"workgroups": "ceilDiv(numel(shapes.out) // 4, tunables.WORKGROUP_SIZE)"}}]})
    if coordinate_free:
        # Broadcasts along rows ([r, c] + [c]): vec4 along the last dim, splatting inputs whose
        # last dim is 1 (or that are scalars).
        opt = lambda n: isinstance(inputs[n], dict) and inputs[n].get("optional")
        # An optional input's binding type cannot depend on its presence: it must not splat.
        fits = [f"(not present.{n} or (ranks.{n} > 0 and shapes.{n}[-1] == shapes.out[-1]))" if opt(n)
                else f"(ranks.{n} == 0 or shapes.{n}[-1] == shapes.out[-1] or shapes.{n}[-1] == 1)" for n in inames]
        splat = lambda n: f"(ranks.{n} == 0 or shapes.{n}[-1] != shapes.out[-1])" if not opt(n) else "false"
        d["variants"].append({"id": "rowwise_vec4", "priority": 5,
            "when": ["numel(shapes.out) % 4 == 0", "ranks.out >= 1", "shapes.out[-1] % 4 == 0"] + fits,
            "derive": {"lanes": "4", "rowwise": "true",
                       **{f"vec_{n}": (f"dtypes.{n} if {splat(n)} else " + vec(n)) if not opt(n) else vec(inputs[n]["dtype"]) for n in inames},
                       "vec_out": vec("out")},
            "passes": [{"id": "map", "name": name, "shader": "elementwise.wgsl.jinja",
                        "bindings": [{"arg": n, "elementType": f"$vec_{n}"} for n in inames]
                                    + [{"arg": "out", "elementType": "$vec_out"}, "params"],
                        "dispatch": {"workgroups": "ceilDiv(numel(shapes.out) // 4, tunables.WORKGROUP_SIZE)"}}]})
    d["variants"].append({"id": "broadcast", "priority": 0, "derive": {"lanes": "1", "rowwise": "false"}, "passes": [{
        "id": "map", "name": name, "shader": "elementwise.wgsl.jinja",
        "bindings": inames + ["out", "params"],
        "dispatch": {"workgroups": "ceilDiv(numel(shapes.out), tunables.WORKGROUP_SIZE)"}}]})
    write(name, d)

def unary(name, desc, expr, types=FLOATS, helpers=(), attrs=None, out="T", constraints=None, when=()):
    spec(name, desc, {"x": "T"}, out, "shapes.x", {"T": types}, expr, helpers, attrs, constraints=constraints, when=when)

FLOAT_UNARY = {
    "Exp": "exp(x)", "Log": "log(x)", "Sqrt": "sqrt(x)", "Rsqrt": "inverseSqrt(x)",
    "Sin": "sin(x)", "Cos": "cos(x)", "Tan": "tan(x)", "Arcsin": "atan2(x, sqrt((T(1) - x) * (T(1) + x)))", "Arccos": "atan2(sqrt((T(1) - x) * (T(1) + x)), x)",
    "Arctan": "atan(x)", "Cosh": "cosh(x)", "Arcsinh": "asinh(x)",
    "Arccosh": "acosh(x)", "Arctanh": "atanh(x)", "Log2": "log2(x)",
    "Log10": "log2(x) * T(0.30102999566398120)", "Reciprocal": "T(1) / x",
    "Sigmoid": "T(1) / (T(1) + exp(-x))", "Silu": "x / (T(1) + exp(-x))",
    }
for n, e in FLOAT_UNARY.items():
    unary(n, f"MLX {n.lower()}, element-wise on float tensors (integer inputs run on the CPU, which promotes them to float32).", q(e))
unary("Tanh", "MLX tanh, accurate near 0 (NaN stays NaN).", q("wgml_tanh(x)"), helpers=["tanh"])
unary("Sinh", "MLX sinh, accurate near 0 (through expm1).", q("select(sign(x) * T(0.5) * (wgml_expm1(abs(x)) + wgml_expm1(abs(x)) / (wgml_expm1(abs(x)) + T(1))), T(0.5) * (exp(x) - exp(-x)), abs(x) >= T(1))"), helpers=["expm1"])
unary("Log1p", "MLX log1p: log(1 + x), accurate near 0.", q("wgml_log1p(x)"), helpers=["log1p"])
unary("Expm1", "MLX expm1: exp(x) - 1, accurate near 0.", q("wgml_expm1(x)"), helpers=["expm1"])
unary("Erf", "MLX erf (absolute error below 1.2e-7).", q("wgml_erf(x)"), helpers=["erf"])
unary("Gelu", "MLX gelu: exact (erf) or the tanh approximation.",
      q("T(0.5) * x * (T(1) + wgml_erf(x * T(0.70710678118654752)))") + " if attrs.approximate == \"none\" else " +
      q("T(0.5) * x * (T(1) + wgml_tanh(T(0.79788456080286536) * (x + T(0.044715) * x * x * x)))"),
      helpers=["erf", "tanh"], attrs={"approximate": {"default": "none"}}, constraints={"approximate": {"values": ["none", "tanh"]}})
unary("Abs", "MLX abs; integers keep their dtype.", q("abs(x)"), SIGNED)
unary("Neg", "MLX negative; integers keep their dtype.", q("-x"), SIGNED)
unary("Square", "MLX square; integers keep their dtype.", q("x * x"), NUMERIC)
unary("Sign", "MLX sign: -1, 0 or 1 (0 for NaN).", q("select(T(0), T(1), x > T(0)) - select(T(0), T(1), x < T(0))"), SIGNED)
for n, f in (("Floor", "floor"), ("Ceil", "ceil"), ("Trunc", "trunc")):
    unary(n, f"MLX {f}; the identity on integers.", f"{q(f + '(x)')} if types.T in [\"float32\", \"float16\"] else \"x\"", NUMERIC)
unary("Round", "MLX round to the nearest integer, half to even; the identity on integers. Rounding at other decimals runs on the CPU.",
      "\"round(x)\" if types.T in [\"float32\", \"float16\"] else \"x\"", NUMERIC, attrs={"decimals": {"default": 0}}, when=["attrs.decimals == 0"])
unary("LogicalNot", "MLX logical_not: true where x is zero.", q("select(0u, 1u, x == T(0))"), ANY64, out="bool")
unary("BitwiseInvert", "MLX bitwise_invert: ~x for integers, not for bool.", "\"x ^ 1u\" if types.T == \"bool\" else \"~x\"", INTS)

def binary(name, desc, expr, types=NUMERIC, out="T", helpers=()):
    spec(name, desc, {"a": "T", "b": "T"}, out, "broadcastShapes(shapes.a, shapes.b)", {"T": types}, expr, helpers)

binary("Add", "MLX add with NumPy broadcasting; integers wrap.", q("a + b"))
binary("Subtract", "MLX subtract with NumPy broadcasting; integers wrap.", q("a - b"))
binary("Multiply", "MLX multiply with NumPy broadcasting; integers wrap.", q("a * b"))
binary("Divide", "MLX divide (true division) of float tensors.", q("a / b"), FLOATS)
binary("Maximum", "MLX maximum; NaN wins.", "\"wgml_max(a, b)\" if types.T in [\"float32\", \"float16\"] else \"max(a, b)\"", NUMERIC, helpers=["nan"])
binary("Minimum", "MLX minimum; NaN wins.", "\"wgml_min(a, b)\" if types.T in [\"float32\", \"float16\"] else \"min(a, b)\"", NUMERIC, helpers=["nan"])
binary("Power", "MLX power of float tensors (a negative base needs an integral exponent).", q("wgml_pow(a, b)"), FLOATS, helpers=["pow"])
binary("Atan2", "MLX arctan2 of float tensors.", q("atan2(a, b)"), FLOATS)
binary("LogAddExp", "MLX logaddexp of float tensors.", q("wgml_logaddexp(a, b)"), FLOATS, helpers=["log1p", "logaddexp"])
binary("FloorDivide", "MLX floor_divide of float tensors (integer division runs on the CPU, which reports division by zero).", q("floor(a / b)"), FLOATS)
binary("Remainder", "MLX remainder of float tensors, with the divisor's sign.", q("wgml_rem(a, b)"), FLOATS, helpers=["rem"])
for n, op in (("Less", "<"), ("LessEqual", "<="), ("Greater", ">"), ("GreaterEqual", ">="), ("Equal", "=="), ("NotEqual", "!=")):
    # NaN compares unequal: `!=` may be an ordered comparison in the shader compiler.
    expr = "!(a == b)" if op == "!=" else f"a {op} b"
    binary(n, f"MLX {n.lower()}: a {op} b as bool.", q(f"select(0u, 1u, {expr})"), ANY64, out="bool")
binary("LogicalAnd", "MLX logical_and: both non-zero.", q("select(0u, 1u, !(a == T(0)) && !(b == T(0)))"), ANY64, out="bool")
binary("LogicalOr", "MLX logical_or: either non-zero.", q("select(0u, 1u, !(a == T(0)) || !(b == T(0)))"), ANY64, out="bool")
for n, op in (("BitwiseAnd", "&"), ("BitwiseOr", "|"), ("BitwiseXor", "^")):
    binary(n, f"MLX {n[7:].lower()} of integer or bool tensors.", q(f"a {op} b"), INTS)

spec("Where", "MLX where: x where condition is non-zero, else y; NumPy broadcasting.",
     {"condition": "C", "x": "T", "y": "T"}, "T", "broadcastShapes(shapes.condition, shapes.x, shapes.y)",
     {"C": ANY64, "T": MOVE}, q("select(y, x, !(condition == C(0)))"))
spec("Clip", "MLX clip: x bounded below by a_min and above by a_max where given (NaN wins), broadcasting.",
     {"x": "T", "a_min": {"dtype": "T", "optional": True}, "a_max": {"dtype": "T", "optional": True}}, "T",
     "broadcastShapes(shapes.x, shapes.a_min if present.a_min else [], shapes.a_max if present.a_max else [])",
     {"T": NUMERIC},
     "lower if not present.a_max else minFn ~ \"(\" ~ lower ~ \", a_max)\"",
     helpers=["nan"], extra_derive={
        "maxFn": "\"wgml_max\" if types.T in [\"float32\", \"float16\"] else \"max\"",
        "minFn": "\"wgml_min\" if types.T in [\"float32\", \"float16\"] else \"min\"",
        "lower": "\"x\" if not present.a_min else maxFn ~ \"(x, a_min)\""})
spec("AsType", "MLX astype: converts to the dtype `scalar_type` names (floats truncate toward zero into integers; bool is x != 0).",
     {"x": "T"}, "U", "shapes.x", {"T": ANY64, "U": ANY64},
     "\"select(0u, 1u, !(x == T(0)))\" if types.U == \"bool\" else \"U(x)\"",
     attrs={"scalar_type": {}}, when=["not (types.U == \"int64\" and types.T in [\"float32\", \"float16\"])"])
spec("Full", "MLX full: a tensor of `shape` holding v, as the dtype `scalar_type` names.",
     {}, "U", "attrs.shape", {"U": ANY64},
     "\"select(0u, 1u, !(params.value == 0.0))\" if types.U == \"bool\" else \"U(params.value)\"",
     attrs={"shape": {}, "v": {}, "scalar_type": {}}, params=[{"name": "value", "type": "f32", "value": "attrs.v"}],
     when=["abs(attrs.v) < 2147483648.0 or types.U in [\"float32\", \"float16\"]"])
spec("FullLike", "MLX full_like: x's shape holding v in x's dtype (a `scalar_type` naming another dtype runs on the CPU).",
     {"x": "T"}, "T", "shapes.x", {"T": ANY64},
     "\"select(0u, 1u, !(params.value == 0.0))\" if types.T == \"bool\" else \"T(params.value)\"",
     attrs={"v": {}, "scalar_type": {"default": -1}}, params=[{"name": "value", "type": "f32", "value": "attrs.v"}],
     when=["abs(attrs.v) < 2147483648.0 or types.T in [\"float32\", \"float16\"]"])
spec("ARange", "MLX arange: start, start + step, ... before stop, as the dtype `scalar_type` names.",
     {}, "U", "[max(0, -((attrs.start - attrs.stop) // attrs.step))]", {"U": NUMERIC + ["int64"]},
     q("U(params.start + i32(i) * params.step)"),
     attrs={"start": {}, "stop": {}, "step": {}, "scalar_type": {}},
     params=[{"name": "start", "type": "i32", "value": "attrs.start"}, {"name": "step", "type": "i32", "value": "attrs.step"}],
     when=["attrs.step != 0"])
spec("Tri", "MLX tri: an n x m matrix of ones at and below diagonal k, zeros above.",
     {}, "U", "[attrs.n, attrs.m]", {"U": ANY}, q("select(U(0), U(1), col <= row + params.k)"),
     attrs={"n": {}, "m": {}, "k": {"default": 0}, "scalar_type": {}},
     params=[{"name": "k", "type": "i32", "value": "attrs.k"}])
spec("Tril", "MLX tril: x's last two dims kept at and below diagonal k, zero above.",
     {"x": "T"}, "T", "shapes.x", {"T": MOVE}, q("select(T(0), x, col <= row + params.k)"),
     attrs={"k": {"default": 0}}, params=[{"name": "k", "type": "i32", "value": "attrs.k"}], when=["ranks.x >= 2"])
spec("Triu", "MLX triu: x's last two dims kept at and above diagonal k, zero below.",
     {"x": "T"}, "T", "shapes.x", {"T": MOVE}, q("select(T(0), x, col >= row + params.k)"),
     attrs={"k": {"default": 0}}, params=[{"name": "k", "type": "i32", "value": "attrs.k"}], when=["ranks.x >= 2"])

R = "range(ranks.out)"
def gather(name, desc, out_shape, attrs, derive, when=(), constraints=None, fill=False):
    base = {
        "outShape": "shapes.out",
        "srcStrides": "strides(shapes.x)",
        "divisors": f"[1 for d in {R}]", "shifts": f"[0 for d in {R}]", "moduli": f"[0 for d in {R}]",
        "starts": f"[0 for d in {R}]", "steps": f"[1 for d in {R}]",
        "lows": f"[0 for d in {R}]", "limits": f"[0 for d in {R}]",
        "padMode": q("none"), "fillExpr": q("x[0]"),
    }
    pre = {k: v for k, v in derive.items() if k not in base}
    base.update({k: v for k, v in derive.items() if k in base})
    d = {"domain": "mlx", "name": name, "description": desc,
         "inputs": {"x": {"dtype": "T"}},
         "outputs": {"out": {"dtype": "T", "shape": out_shape}}}
    if attrs:
        d["attributes"] = attrs
    if constraints:
        d["attributeConstraints"] = constraints
    d["typeConstraints"] = {"T": MOVE}
    d["tunables"] = WG
    d["when"] = ["f16Ok(dtypes.T)", "numel(shapes.x) < 2147483648"] + list(when)
    d["derive"] = {**pre, **base}
    fields = [{"name": "count", "type": "u32", "value": "numel(shapes.out)"}]
    if fill:
        fields.append({"name": "fill", "type": "f32", "value": "attrs.constant_value"})
    d["bindings"] = {"params": {"struct": fields}}
    d["variants"] = [{"id": "index_map", "passes": [{
        "id": "gather", "name": name, "shader": "gather.wgsl.jinja", "bindings": ["x", "out", "params"],
        "dispatch": {"workgroups": "ceilDiv(numel(shapes.out), tunables.WORKGROUP_SIZE)"}}]}]
    write(name, d)

gather("Transpose", "MLX transpose: out dim d is x's dim perm[d].",
       "[shapes.x[normAxis(p, ranks.x)] for p in attrs.perm]", {"perm": {}},
       {"axes": "[normAxis(p, ranks.x) for p in attrs.perm]",
        "srcStrides": "[strides(shapes.x)[a] for a in axes]"},
       when=["len(attrs.perm) == ranks.x", "[d for d in range(ranks.x) if d in axes] == range(ranks.x)"])
gather("BroadcastTo", "MLX broadcast_to: x repeated along dims of size 1 and new leading dims; -1 keeps x's size.",
       "[shapes.x[d - lead] if attrs.shape[d] == -1 and d >= lead else attrs.shape[d] for d in range(len(attrs.shape))]",
       {"shape": {}},
       {"lead": "len(attrs.shape) - ranks.x", "srcStrides": "broadcastStrides(shapes.x, shapes.out)"})
gather("Slice", "MLX slice of one axis: start, stop and step as Python slicing (negative from the end, clamped).",
       "[span[1] if d == sliceAxis else shapes.x[d] for d in range(ranks.x)]",
       {"axis": {}, "start": {}, "stop": {}, "step": {"default": 1}},
       {"sliceAxis": "normAxis(attrs.axis, ranks.x)",
        "span": "sliceRange(shapes.x[sliceAxis], attrs.start, attrs.stop, attrs.step)",
        "starts": f"[span[0] if d == sliceAxis else 0 for d in {R}]",
        "steps": f"[attrs.step if d == sliceAxis else 1 for d in {R}]"},
       when=["attrs.step != 0"])
gather("Tile", "MLX tile: x repeated reps[d] times along each dim (reps and x's shape aligned right).",
       "[paddedShape[d] * paddedReps[d] for d in range(len(paddedShape))]", {"reps": {}},
       {"tileRank": "max(ranks.x, len(attrs.reps))",
        "paddedReps": "[1 for d in range(tileRank - len(attrs.reps))] + attrs.reps",
        "paddedShape": "[1 for d in range(tileRank - ranks.x)] + shapes.x",
        "srcStrides": "[0 for d in range(tileRank - ranks.x)] + strides(shapes.x)",
        "moduli": "paddedShape"},
       when=["[r for r in attrs.reps if r < 0] == []"])
gather("Repeat", "MLX repeat: each element of x repeated `repeats` times along `axis`.",
       "[shapes.x[d] * attrs.repeats if d == repeatAxis else shapes.x[d] for d in range(ranks.x)]",
       {"repeats": {}, "axis": {"default": 0}},
       {"repeatAxis": "normAxis(attrs.axis, ranks.x)",
        "divisors": f"[max(attrs.repeats, 1) if d == repeatAxis else 1 for d in {R}]"},
       when=["attrs.repeats >= 0"])
gather("Roll", "MLX roll: x shifted cyclically by shift[k] along axes[k] (shifts of a repeated axis add up).",
       "shapes.x", {"shift": {}, "axes": {}},
       {"shiftOf": "[sum([attrs.shift[k] for k in range(len(attrs.axes)) if normAxis(attrs.axes[k], ranks.x) == d]) for d in range(ranks.x)]",
        "shifts": f"[((shapes.x[d] - shiftOf[d] % shapes.x[d]) % shapes.x[d] + shapes.x[d]) % shapes.x[d] if shapes.x[d] > 0 else 0 for d in {R}]",
        "moduli": f"[shapes.x[d] if shifts[d] != 0 else 0 for d in {R}]"},
       when=["len(attrs.shift) == len(attrs.axes)"])
gather("Pad", "MLX pad: (low, high) widths per dim (or one pair for all), filled with constant_value or the edge value.",
       "[shapes.x[d] + padLow[d] + padHigh[d] for d in range(ranks.x)]",
       {"pad_width": {}, "mode": {"default": "constant"}, "constant_value": {"default": 0.0}},
       {"pairs": "len(attrs.pad_width) // 2",
        "padLow": "[attrs.pad_width[0 if pairs == 1 else 2 * d] for d in range(ranks.x)]",
        "padHigh": "[attrs.pad_width[1 if pairs == 1 else 2 * d + 1] for d in range(ranks.x)]",
        "lows": "padLow", "limits": "shapes.x", "padMode": "attrs.mode",
        "fillExpr": "\"select(0u, 1u, !(params.fill == 0.0))\" if types.T == \"bool\" else dtypes.T ~ \"(params.fill)\""},
       when=["len(attrs.pad_width) % 2 == 0", "pairs == 1 or pairs == ranks.x",
             "[w for w in attrs.pad_width if w < 0] == []", "numel(shapes.x) > 0"],
       constraints={"mode": {"values": ["constant", "edge"]}}, fill=True)

def write_into(name, desc, inputs, attrs, derive, when, region_count):
    d = {"domain": "mlx", "name": name, "description": desc, "inputs": inputs,
         "outputs": {"out": {"dtype": "T", "shape": "shapes.dst"}},
         "attributes": attrs,
         "typeConstraints": {"T": MOVE, **({"I": ["int32", "int64"]} if "indices" in inputs else {})},
         "tunables": WG,
         "when": ["f16Ok(dtypes.T)", "numel(shapes.dst) < 2147483648"] + when,
         "derive": {**derive,
                    "regionShape": f"[({region_count}) if d == writeAxis else shapes.dst[d] for d in range(ranks.dst)]",
                    "updateStrides": "broadcastStrides(shapes.update, regionShape)",
                    "outStrides": "strides(shapes.dst)", "axis": "writeAxis", "axisSize": "shapes.dst[writeAxis]",
                    "scalar": "dtypes.T", "elementCount": "numel(shapes.dst)",
                    "copyElementType": "\"vec4<\" ~ dtypes.T ~ \">\" if elementCount % 4 == 0 else dtypes.T",
                    "copyWidth": "4 if elementCount % 4 == 0 else (16 if dtypes.T == \"f16\" else 8)",
                    "count": "ceilDiv(elementCount, copyWidth)"},
         "bindings": {"update": {"elementType": "$scalar"}, "out": {"elementType": "$scalar"},
                      "params": {"struct": [{"name": "count", "type": "u32", "value": "numel(regionShape)"}]}}}
    scatter_bindings = ["update"] + (["indices"] if "indices" in inputs else []) + ["out", "params"]
    d["variants"] = [{"id": "copy_then_write", "passes": [
        {"id": "copy", "name": name + ".Copy", "shader": "scatter-flat-copy.wgsl.jinja",
         "bindings": [{"arg": "dst", "name": "src", "elementType": "$copyElementType"},
                      {"arg": "out", "name": "dst", "elementType": "$copyElementType"}],
         "dispatch": {"workgroups": "ceilDiv(count, tunables.WORKGROUP_SIZE)"},
         "viewAlias": [{"input": "src", "output": "dst"}]},
        {"id": "write", "name": name + ".Write", "shader": "scatter-region.wgsl.jinja",
         "bindings": scatter_bindings,
         "dispatch": {"workgroups": "ceilDiv(numel(regionShape), tunables.WORKGROUP_SIZE)"}}]}]
    write(name, d)

write_into("SliceUpdate", "MLX slice_update: dst with positions start, start + step, ... < stop of `axis` (negative from the end, clamped) overwritten by update, broadcast; start >= stop leaves dst as it is. In place when out may share dst's buffer (the KV-cache update).",
           {"dst": {"dtype": "T"}, "update": {"dtype": "T"}},
           {"axis": {}, "start": {}, "stop": {}, "step": {"default": 1}},
           {"writeAxis": "normAxis(attrs.axis, ranks.dst)",
            "first": "clamp(attrs.start + shapes.dst[writeAxis] if attrs.start < 0 else attrs.start, 0, shapes.dst[writeAxis])",
            "last": "clamp(attrs.stop + shapes.dst[writeAxis] if attrs.stop < 0 else attrs.stop, 0, shapes.dst[writeAxis])",
            "start": "first", "step": "attrs.step", "hasIndices": "false"},
           ["attrs.step >= 1", "ranks.update <= ranks.dst"],
           "ceilDiv(last - first, attrs.step) if last > first else 0")
write_into("IndexCopy", "MLX index_copy: dst with the positions `indices` lists along `axis` (negative from the end) overwritten by update, broadcast. In place when out may share dst's buffer.",
           {"dst": {"dtype": "T"}, "update": {"dtype": "T"},
            "indices": {"dtype": "I", "rank": 1, "storage": "int32", "narrowing": "checked",
                        "valueRange": ["-shapes.dst[writeAxis]", "shapes.dst[writeAxis] - 1"]}},
           {"axis": {"default": 0}},
           {"writeAxis": "normAxis(attrs.axis, ranks.dst)", "start": "0", "step": "1", "hasIndices": "true"},
           ["ranks.update <= ranks.dst"], "shapes.indices[0]")

MAX_PARTS = 7  # with the output: the 8 storage buffers every WebGPU device binds per stage

def parts_spec(name, desc, out_shape, derive, when):
    names = [f"tensors{k}" for k in range(MAX_PARTS)]
    inputs = {n: ({"dtype": "T"} if k == 0 else {"dtype": "T", "optional": True}) for k, n in enumerate(names)}
    present = lambda k, e: e if k == 0 else f"([{e[1:-1]}] if present.{names[k]} else [])"
    shapes_list = " + ".join(present(k, f"[shapes.{n}]") for k, n in enumerate(names))
    d = {"domain": "mlx", "name": name, "description": desc, "inputs": inputs,
         "outputs": {"out": {"dtype": "T", "shape": out_shape}},
         "attributes": {"axis": {"default": 0}},
         "typeConstraints": {"T": MOVE}, "tunables": WG,
         "when": ["f16Ok(dtypes.T)", "numel(shapes.tensors0) < 2147483648"] + when,
         "derive": {"partShapes": shapes_list, **derive, "outShape": "shapes.out"},
         "bindings": {"params": {"struct": [{"name": "count", "type": "u32", "value": "numel(shapes.out)"}]}},
         "variants": [{"id": "parts", "passes": [{
             "id": "gather", "name": name, "shader": "concat.wgsl.jinja", "bindings": names + ["out", "params"],
             "dispatch": {"workgroups": "ceilDiv(numel(shapes.out), tunables.WORKGROUP_SIZE)"}}]}]}
    write(name, d)

parts_spec("Concatenate", f"MLX concatenate along `axis` of up to {MAX_PARTS} tensors of one dtype (more, or mixed dtypes, run on the CPU).",
           "[sum([s[catAxis] for s in partShapes]) if d == catAxis else shapes.tensors0[d] for d in range(ranks.tensors0)]",
           {"catAxis": "normAxis(attrs.axis, ranks.tensors0)", "axis": "catAxis",
            "starts": "[sum([s[catAxis] for s in partShapes[:k]]) for k in range(len(partShapes) + 1)]",
            "partStrides": "[strides(s) for s in partShapes]"},
           ["[s for s in partShapes if len(s) != ranks.tensors0 or [d for d in range(len(s)) if d != catAxis and s[d] != shapes.tensors0[d]] != []] == []"])
parts_spec("Stack", f"MLX stack along a new `axis` of up to {MAX_PARTS} tensors of one shape and dtype (more, or mixed dtypes, run on the CPU).",
           "shapes.tensors0[:stackAxis] + [len(partShapes)] + shapes.tensors0[stackAxis:]",
           {"stackAxis": "normAxis(attrs.axis, ranks.tensors0 + 1)", "axis": "stackAxis",
            "starts": "range(len(partShapes) + 1)",
            "partStrides": "[strides(s)[:stackAxis] + [0] + strides(s)[stackAxis:] for s in partShapes]"},
           ["[s for s in partShapes if s != shapes.tensors0] == []"])

def split_spec():
    names = [f"outs{k}" for k in range(MAX_PARTS)]
    present = "[" + ", ".join(f"present.{n}" for n in names) + "]"
    d = {"domain": "mlx", "name": "Split",
         "description": f"MLX split of x along `axis` into parts of the given sizes, or chunks of sizes[0] when one size is given; up to {MAX_PARTS} parts (more run on the CPU).",
         "inputs": {"x": {"dtype": "T"}},
         "outputs": {n: {"dtype": "T", "optional": True,
                         "shape": f"[(sections[{k}] if {k} < len(sections) else 0) if d == splitAxis else shapes.x[d] for d in range(ranks.x)]"}
                     for k, n in enumerate(names)},
         "attributes": {"sizes": {}, "axis": {"default": 0}},
         "typeConstraints": {"T": MOVE}, "tunables": WG,
         "when": ["f16Ok(dtypes.T)", "numel(shapes.x) < 2147483648",
                  "[s for s in attrs.sizes if s < 0] == []", "len(attrs.sizes) != 1 or attrs.sizes[0] > 0",
                  "sum(sections) == shapes.x[splitAxis]",
                  f"len(sections) == len([p for p in {present} if p])"],
         "derive": {"splitAxis": "normAxis(attrs.axis, ranks.x)",
                    "sections": "[min(attrs.sizes[0], shapes.x[splitAxis] - k * attrs.sizes[0]) for k in range(ceilDiv(shapes.x[splitAxis], attrs.sizes[0]))] if len(attrs.sizes) == 1 else attrs.sizes",
                    "inShape": "shapes.x", "axis": "splitAxis",
                    "starts": "[sum(sections[:k]) for k in range(len(sections) + 1)]",
                    "partStrides": "[strides([s if d == splitAxis else shapes.x[d] for d in range(ranks.x)]) for s in sections]"},
         "bindings": {"params": {"struct": [{"name": "count", "type": "u32", "value": "numel(shapes.x)"}]}},
         "variants": [{"id": "parts", "passes": [{
             "id": "scatter", "name": "Split", "shader": "split.wgsl.jinja", "bindings": ["x"] + names + ["params"],
             "dispatch": {"workgroups": "ceilDiv(numel(shapes.x), tunables.WORKGROUP_SIZE)"}}]}]}
    write("Split", d)

split_spec()
