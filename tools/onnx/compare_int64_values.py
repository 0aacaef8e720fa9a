#!/usr/bin/env python3
"""Run-time int64 operands beyond int32 (Range, Slice, OneHot, Loop, Expand, ConstantOfShape, Pad)
through `wgml run` and onnxruntime's CPU provider: ONNX integers are 64-bit, so a value like 5e9
read at run time must be used whole, never cut to its low 32 bits or clamped.

    .venv/bin/python tools/onnx/compare_int64_values.py --wgml build/tools/cli/wgml [--device cpu|webgpu]

Cases with a small result compare exactly with onnxruntime (Range from 5e9 or in steps of 3e9,
Slice to a run-time INT64_MAX, an empty tensor padded to [2^32 + 2, 0], OneHot of indices beyond
int32, a Loop carrying an int64 beyond int32). Cases whose operand asks for more than 2^32 elements (Expand to [2^32 + 2], ConstantOfShape
[2^62], Pad by 2^40, OneHot of depth 2^32 + 3, a Loop of 2^32 + 2 steps) are not run through
onnxruntime (it would allocate them): wgml must refuse them under --max-memory 64M with the whole
count in its message, where it used to compute a small result from the low 32 bits.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_models import compare_arguments, compare_cases, saved_cases  # noqa: E402

INT64 = TensorProto.INT64
FLOAT = TensorProto.FLOAT
BEYOND_INT32 = 2**32  # its low 32 bits are 0
INT64_MAX = np.iinfo(np.int64).max


def scalar(v):
    return np.array(v, dtype=np.int64)


def vector(*v):
    return np.array(v, dtype=np.int64)


def model(nodes, inputs, outputs, initializers=()):
    """inputs and outputs: (name, elem_type, shape)."""
    g = helper.make_graph(nodes, "int64_values", [helper.make_tensor_value_info(*i) for i in inputs],
                          [helper.make_tensor_value_info(*o) for o in outputs], list(initializers))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def range_case(start, limit, delta):
    m = model([helper.make_node("Range", ["start", "limit", "delta"], ["y"])],
              [("start", INT64, []), ("limit", INT64, []), ("delta", INT64, [])], [("y", INT64, [None])])
    return m, {"start": scalar(start), "limit": scalar(limit), "delta": scalar(delta)}


def slice_case(start, end):
    m = model([helper.make_node("Slice", ["x", "starts", "ends"], ["y"])],
              [("x", INT64, [4]), ("starts", INT64, [1]), ("ends", INT64, [1])], [("y", INT64, [None])])
    return m, {"x": vector(10, 11, 12, 13), "starts": vector(start), "ends": vector(end)}


def one_hot_case(indices, depth):
    m = model([helper.make_node("OneHot", ["indices", "depth", "values"], ["y"])],
              [("indices", INT64, [len(indices)]), ("depth", INT64, []), ("values", INT64, [2])],
              [("y", INT64, [len(indices), None])])
    return m, {"indices": vector(*indices), "depth": scalar(depth), "values": vector(0, 7)}


def loop_case(trips, step):
    """acc = x + trips * step, by a Loop of `trips` steps with a run-time trip count."""
    body = helper.make_graph(
        [helper.make_node("Add", ["acc", "step"], ["next"])], "body",
        [helper.make_tensor_value_info("i", INT64, []), helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc", INT64, [1])],
        [helper.make_tensor_value_info("c", TensorProto.BOOL, []), helper.make_tensor_value_info("next", INT64, [1])])
    cond = helper.make_tensor("cond", TensorProto.BOOL, [], [True])
    m = model([helper.make_node("Loop", ["trips", "cond", "x"], ["y"], body=body)],
              [("trips", INT64, []), ("x", INT64, [1]), ("step", INT64, [1])], [("y", INT64, [1])], [cond])
    return m, {"trips": scalar(trips), "x": vector(1), "step": vector(step)}


def expand_case(size):
    m = model([helper.make_node("Expand", ["x", "shape"], ["y"])], [("x", INT64, [1]), ("shape", INT64, [1])],
              [("y", INT64, [None])])
    return m, {"x": vector(7), "shape": vector(size)}


def constant_of_shape_case(size):
    m = model([helper.make_node("ConstantOfShape", ["shape"], ["y"])], [("shape", INT64, [1])], [("y", FLOAT, [None])])
    return m, {"shape": vector(size)}


def pad_case(before, after):
    m = model([helper.make_node("Pad", ["x", "pads"], ["y"])], [("x", INT64, [2]), ("pads", INT64, [2])],
              [("y", INT64, [None])])
    return m, {"x": vector(1, 2), "pads": vector(before, after)}


def pad_empty_case(before):
    """Padding an empty [2, 0] along its first axis: a [2 + before, 0] result, no elements."""
    m = model([helper.make_node("Pad", ["x", "pads"], ["y"])], [("x", FLOAT, [2, 0]), ("pads", INT64, [4])],
              [("y", FLOAT, [None, None])])
    return m, {"x": np.zeros((2, 0), np.float32), "pads": vector(before, 0, 0, 0)}


EXACT = {
    "range_steps_beyond_int32": lambda: range_case(0, 9_000_000_000, 3_000_000_000),
    "range_from_beyond_int32": lambda: range_case(5_000_000_000, 5_000_000_003, 1),
    "range_down_from_beyond_int32": lambda: range_case(-5_000_000_000, -5_000_000_000 - 3 * BEYOND_INT32, -BEYOND_INT32),
    "slice_to_int64_max": lambda: slice_case(1, INT64_MAX),
    "slice_from_int64_min": lambda: slice_case(np.iinfo(np.int64).min, BEYOND_INT32 + 2),
    "slice_from_minus_beyond_int32": lambda: slice_case(-BEYOND_INT32, 2),
    "pad_empty_beyond_int32": lambda: pad_empty_case(BEYOND_INT32),
    "one_hot_indices_beyond_int32": lambda: one_hot_case([BEYOND_INT32 + 1, 1, -1], 3),
    "loop_carrying_beyond_int32": lambda: loop_case(3, 3_000_000_000),
}

# (model and inputs, the count the message must hold).
REFUSED = {
    "expand_to_beyond_int32": (lambda: expand_case(BEYOND_INT32 + 2), "4294967298"),
    "constant_of_shape_2_62": (lambda: constant_of_shape_case(2**62), "4611686018427387904"),
    "pad_by_2_40": (lambda: pad_case(2**40, 0), "1099511627778"),
    "one_hot_depth_beyond_int32": (lambda: one_hot_case([0, 1], BEYOND_INT32 + 3), "4294967299"),
    "loop_trips_beyond_int32": (lambda: loop_case(BEYOND_INT32 + 2, 1), "4294967298"),
}


def refused(name, make, count, wgml, device, work):
    """0 when `wgml run` fails with a message holding `count`, else 1 (printed)."""
    import onnx

    m, inputs = make()
    path = os.path.join(work, f"{name}.onnx")
    onnx.save(m, path)
    command = [wgml, "run", path, "--device", device, "--max-memory", "64M", "--output-dir", work]
    for input_name, array in inputs.items():
        array_path = os.path.join(work, f"{name}_{input_name}.npy")
        np.save(array_path, array)
        command += ["--input", f"{input_name}={array_path}"]
    proc = subprocess.run(command, capture_output=True, text=True)
    message = (proc.stderr or proc.stdout).strip().splitlines()
    if proc.returncode != 0 and count in "\n".join(message):
        print(f"ok   {name}: refused ({message[-1] if message else ''})")
        return 0
    print(f"FAIL {name}: expected a refusal naming {count}; exit {proc.returncode}: {' '.join(message)[:400]}")
    return 1


def main():
    args = compare_arguments(__doc__.splitlines()[0])
    with tempfile.TemporaryDirectory(prefix="wgml_int64_values_") as work:
        exact = ((name, *make()) for name, make in EXACT.items() if args.only in name)
        named = ((name, m, {"int64": inputs}) for name, m, inputs in exact)
        # Exact integers: every expected value is below 2^34, so 1e-15 of it and the 1e-6 floor are far below 1.
        failures = compare_cases(saved_cases(named, work), args.wgml, args.device, 1e-15, allowed_cpu_ops=None)
        for name, (make, count) in REFUSED.items():
            if args.only in name:
                failures += refused(name, make, count, args.wgml, args.device, work)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
