"""Nodes the executor runs itself (value arithmetic, copies, control flow), with the results
ExecuTorch's MLX runtime defines for them, and MetalKernelNode, which wgml rejects at load."""
import mlx.core as mx

from data import Data
from program import Case, iv


def int_op_cases(kind, fn):
    out = []
    for name, a, b in (("literals", 7, 3), ("negative", -7, 2), ("negative_divisor", 7, -2), ("zero_lhs", 0, 5),
                       ("int64_literal_clamps", 2**40, 1)):
        c = Case(name)
        va = c.int_input(a) if name != "int64_literal_clamps" else None
        lhs = iv(va) if va is not None else iv(a)
        clamped = max(-(2**31), min(2**31 - 1, a))
        result = fn(clamped, b)
        if -(2**31) <= result < 2**31:
            c.node(kind, a=lhs, b=iv(b), out=c.int_output(result))
        else:
            c.node(kind, a=lhs, b=iv(b), out=c.int_output(0))
            c.expect_error("overflows int32")
        out.append(c)
    overflowing = {"AddIntNode": (2**31 - 1, 1), "SubtractIntNode": (-(2**31), 1),
                   "MultiplyIntNode": (2**16, 2**16), "FloorDivideIntNode": (-(2**31), -1)}
    if kind in overflowing:
        a, b = overflowing[kind]
        c = Case("overflow_rejected")
        v = c.int_input(a)
        c.node(kind, a=iv(v), b=iv(b), out=c.int_output(0))
        c.expect_error("overflows int32")
        out.append(c)
    if kind in ("FloorDivideIntNode", "ModIntNode"):
        c = Case("division_by_zero")
        v = c.int_input(3)
        c.node(kind, a=iv(v), b=iv(0), out=c.int_output(0))
        c.expect_error("division by zero")
        out.append(c)
    return out


def floor_div(a, b):
    return a // b


def sym_size_cases():
    d = Data("SymSize")
    out = []
    for name, shape, dim in (("dim0", (3, 4), 0), ("negative_dim", (2, 5, 6), -1), ("zero_size", (0, 2), 0),
                             ("middle", (2, 7, 1), 1), ("dynamic_input", (9, 2), 0)):
        c = Case(name)
        x = c.input(d.floats(shape), dynamic_dims=[0] if name == "dynamic_input" else ())
        c.node("SymSizeNode", a=x, dim=dim, out=c.int_output(shape[dim]))
        out.append(c)
    return out


def item_int_cases():
    out = []
    for name, a in (("int32", mx.array([42], mx.int32)), ("int64_low_bits", mx.array([2**32 + 5], mx.int64)),
                    ("scalar", mx.array(-3, mx.int32)), ("float", mx.array([3.9], mx.float32)),
                    ("bool", mx.array([True]))):
        c = Case(name)
        x = c.input(a)
        value = int(a.reshape(-1)[0].item()) if a.dtype != mx.int64 else (2**32 + 5) & 0xFFFFFFFF
        c.node("ItemIntNode", x=x, out=c.int_output(value))
        out.append(c)
    return out


def id_copy_cases():
    d = Data("IdCopy")
    out = []
    for name, a in (("f32", d.floats((2, 3))), ("int8", d.ints((4,), mx.int8)), ("empty", d.floats((0,))),
                    ("bf16", d.floats((3,), mx.bfloat16)), ("scalar", d.floats(()))):
        c = Case(name)
        x = c.input(a)
        c.node("IdCopyNode", x=x, out=c.output(a))
        out.append(c)
    return out


def noop_cases():
    d = Data("Noop")
    out = []
    for name in ("alone", "between", "twice", "before_copy", "after_copy"):
        a = d.floats((2,))
        c = Case(name)
        x = c.input(a)
        o = c.output(a)
        if name in ("between", "twice", "before_copy"):
            c.node("NoopNode")
        c.node("IdCopyNode", x=x, out=o)
        if name in ("alone", "twice", "after_copy", "between"):
            c.node("NoopNode")
        out.append(c)
    return out


def scan_cases():
    """A running sum over axis 1 (the carry is updated in place) and the stacked per-step outputs."""
    d = Data("Scan")
    out = []
    for name, shape, axis in (("axis1", (2, 4, 3), 1), ("axis0", (3, 2), 0), ("one_step", (1, 5), 0),
                              ("negative_axis", (2, 3), -1), ("long", (6, 2), 0)):
        xs = d.floats(shape)
        n = shape[axis]
        step_shape = list(shape)
        del step_shape[axis % len(shape)]
        carry = mx.zeros(step_shape)
        steps = []
        for t in range(n):
            carry = carry + mx.take(xs, t, axis)
            steps.append(carry)
        expected = mx.stack(steps, axis)
        c = Case(name)
        ix, init = c.input(xs), c.input(mx.zeros(step_shape))
        ys = c.output(expected)
        acc, sliced = c.temp(), c.temp()
        c.node("IdCopyNode", x=init, out=acc)
        c.node("ScanNode", originals=[ix], sliced=[sliced], outputs=[ys], carry=[acc], body_chain_idx=1, scan_axis=axis)
        c.node("AddNode", chain=1, a=acc, b=sliced, out=acc)
        c.node("IdCopyNode", chain=1, x=acc, out=ys)
        out.append(c)
    return out


def if_cases():
    d = Data("If")
    out = []
    for name, cond, literal in (("then", 1, False), ("else", 0, False), ("negative_is_true", -3, False),
                                ("literal_true", 5, True), ("literal_false", 0, True)):
        a = d.floats((3,))
        c = Case(name)
        x = c.input(a)
        v = None if literal else c.int_input(cond)
        o = c.output(mx.exp(a) if cond != 0 else mx.negative(a))
        c.node("IfNode", cond=iv(cond) if literal else iv(v), then_chain_idx=1, else_chain_idx=2)
        c.node("ExpNode", chain=1, x=x, out=o)
        c.node("NegNode", chain=2, x=x, out=o)
        out.append(c)
    return out


def metal_kernel_cases():
    out = []
    for name in ("gated_delta_rule", "tq4_compress", "q4k_matmul", "custom_softmax", "gguf_q6k"):
        c = Case(name)
        x = c.input(mx.zeros((2,)))
        o = c.output()
        c.node("MetalKernelNode", name=name, source="// metal", inputs=[x], outputs=[o], grid=[iv(1)],
               threadgroup=[iv(1)])
        c.expect_error(f"MetalKernelNode '{name}'")
        out.append(c)
    return out


def cases():
    return {
        "NoopNode": noop_cases(),
        "IdCopyNode": id_copy_cases(),
        "ItemIntNode": item_int_cases(),
        "AddIntNode": int_op_cases("AddIntNode", lambda a, b: a + b),
        "SubtractIntNode": int_op_cases("SubtractIntNode", lambda a, b: a - b),
        "MultiplyIntNode": int_op_cases("MultiplyIntNode", lambda a, b: a * b),
        "FloorDivideIntNode": int_op_cases("FloorDivideIntNode", floor_div),
        "ModIntNode": int_op_cases("ModIntNode", lambda a, b: a % b),
        "SymSizeNode": sym_size_cases(),
        "ScanNode": scan_cases(),
        "IfNode": if_cases(),
        "MetalKernelNode": metal_kernel_cases(),
    }
