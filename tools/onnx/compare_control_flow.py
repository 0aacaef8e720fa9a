#!/usr/bin/env python3
"""Control flow whose shapes only the run time knows, on small models built here with onnx.helper,
through `wgml run` and onnxruntime's CPU provider (the reference).

    .venv/bin/python tools/onnx/compare_control_flow.py --wgml build/tools/cli/wgml [--device cpu|webgpu]

- if_ranks: an If on a graph input whose branches give ranks 3 and 2; what follows reads its
  rank (Shape, Size) and reduces it.
- squeeze_if_one: PyTorch's export of `x.squeeze(2)` on a dim only the run time knows (an If on
  Shape(x)[2] == 1: Squeeze or Identity), then the LSTM export's rank test (If on Size(Shape) == 2:
  Unsqueeze or Identity): what silero-vad does.
- loop_grow: a Loop whose carried tensor grows by a row per iteration (Concat), trip count from
  an input, with a per-iteration scan output.
- scan_dynamic: a Scan whose carried state has a dim only the run time knows (onnxruntime's Scan
  keeps a state's shape from step to step; its Loop lets it change).
- if_in_loop: a Loop whose body has an If giving ranks 1 and 2 that a Reshape makes one again.
- passed_through: an If of ranks 3 and 2 whose else branch passes a computed value through, which
  is read again after the If (silero-vad's decoder does this with its LSTM state).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_models import compare_built_models  # noqa: E402

FLOAT, INT64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def ints(name, values):
    return helper.make_tensor(name, INT64, [len(values)], values)


def graph(name, nodes, inputs, outputs, initializers=()):
    return helper.make_graph(nodes, name, inputs, outputs, list(initializers))


def value(name, elem_type, shape=None):
    return helper.make_tensor_value_info(name, elem_type, shape)


def model(g, opset=17):
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def if_ranks():
    then_branch = graph("then", [helper.make_node("Unsqueeze", ["x", "zero"], ["t"])], [], [value("t", FLOAT)])
    else_branch = graph("else", [helper.make_node("Identity", ["x"], ["e"])], [], [value("e", FLOAT)])
    nodes = [
        helper.make_node("If", ["c"], ["y"], then_branch=then_branch, else_branch=else_branch),
        helper.make_node("Shape", ["y"], ["shape"]),
        helper.make_node("Size", ["shape"], ["rank"]),
        helper.make_node("ReduceSum", ["y"], ["total"], keepdims=0),
        helper.make_node("Cast", ["rank"], ["rank_float"], to=FLOAT),
        helper.make_node("Mul", ["total", "rank_float"], ["weighted"]),
    ]
    g = graph("if_ranks", nodes, [value("x", FLOAT, ["n", 3]), value("c", BOOL, [])],
              [value("rank", INT64, []), value("weighted", FLOAT, [])], [ints("zero", [0])])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    return model(g), {"then": {"x": x, "c": np.array(True)}, "else": {"x": x, "c": np.array(False)}}


def squeeze_if_one():
    squeeze = graph("squeeze", [helper.make_node("Squeeze", ["x", "two"], ["s"])], [], [value("s", FLOAT)])
    keep = graph("keep", [helper.make_node("Identity", ["x"], ["k"])], [], [value("k", FLOAT)])
    unsqueeze = graph("unsqueeze", [helper.make_node("Unsqueeze", ["y", "two"], ["u"])], [], [value("u", FLOAT)])
    keep_y = graph("keep_y", [helper.make_node("Identity", ["y"], ["ky"])], [], [value("ky", FLOAT)])
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "two_scalar"], ["last"]),
        helper.make_node("Equal", ["last", "one"], ["is_one"]),
        helper.make_node("If", ["is_one"], ["y"], then_branch=squeeze, else_branch=keep),
        helper.make_node("Shape", ["y"], ["y_shape"]),
        helper.make_node("Size", ["y_shape"], ["y_rank"]),
        helper.make_node("Equal", ["y_rank", "two_scalar"], ["unbatched"]),
        helper.make_node("If", ["unbatched"], ["z"], then_branch=unsqueeze, else_branch=keep_y),
        helper.make_node("Mul", ["z", "z"], ["out"]),
    ]
    initializers = [ints("two", [2]), helper.make_tensor("two_scalar", INT64, [], [2]),
                    helper.make_tensor("one", INT64, [], [1])]
    g = graph("squeeze_if_one", nodes, [value("x", FLOAT, ["b", 4, "t"])], [value("out", FLOAT, ["b", 4, "t"])],
              initializers)
    rng = np.random.default_rng(1)
    return model(g), {"t = 1": {"x": rng.normal(size=(2, 4, 1)).astype(np.float32)},
                      "t = 3": {"x": rng.normal(size=(2, 4, 3)).astype(np.float32)}}


def loop_grow():
    body = graph("body", [
        helper.make_node("Cast", ["i"], ["i_float"], to=FLOAT),
        helper.make_node("Mul", ["row", "i_float"], ["scaled"]),
        helper.make_node("Concat", ["acc_in", "scaled"], ["acc_out"], axis=0),
        helper.make_node("ReduceSum", ["acc_out"], ["step_sum"], keepdims=0),
        helper.make_node("Identity", ["cond_in"], ["cond_out"]),
    ], [value("i", INT64, []), value("cond_in", BOOL, []), value("acc_in", FLOAT, [None, 2])],
        [value("cond_out", BOOL, []), value("acc_out", FLOAT, [None, 2]), value("step_sum", FLOAT, [])])
    nodes = [helper.make_node("Loop", ["trips", "", "start"], ["acc", "sums"], body=body)]
    g = graph("loop_grow", nodes, [value("trips", INT64, []), value("start", FLOAT, [1, 2]), value("row", FLOAT, [1, 2])],
              [value("acc", FLOAT, [None, 2]), value("sums", FLOAT, [None])])
    start = np.array([[1, 2]], np.float32)
    row = np.array([[0.5, -1]], np.float32)
    return model(g), {f"{n} trips": {"trips": np.array(n, np.int64), "start": start, "row": row} for n in (1, 4)}


def scan_dynamic():
    body = graph("body", [
        helper.make_node("Unsqueeze", ["row", "zero"], ["row2"]),
        helper.make_node("Add", ["state_in", "row2"], ["state_out"]),
        helper.make_node("ReduceMax", ["state_out"], ["step_max"], keepdims=0),
    ], [value("state_in", FLOAT, [None, 3]), value("row", FLOAT, [3])],
        [value("state_out", FLOAT, [None, 3]), value("step_max", FLOAT, [])], [ints("zero", [0])])
    nodes = [helper.make_node("Scan", ["init", "xs"], ["final", "maxes"], body=body, num_scan_inputs=1)]
    g = graph("scan_dynamic", nodes, [value("init", FLOAT, ["s", 3]), value("xs", FLOAT, ["t", 3])],
              [value("final", FLOAT, ["s", 3]), value("maxes", FLOAT, ["t"])])
    rng = np.random.default_rng(2)
    return model(g), {f"{s} rows, {t} steps": {"init": rng.normal(size=(s, 3)).astype(np.float32),
                                               "xs": rng.normal(size=(t, 3)).astype(np.float32)} for s, t in ((1, 2), (3, 5))}


def if_in_loop():
    flat = graph("flat", [helper.make_node("Reshape", ["acc_in", "minus_one"], ["f"])], [], [value("f", FLOAT)])
    same = graph("same", [helper.make_node("Identity", ["acc_in"], ["s"])], [], [value("s", FLOAT)])
    body = graph("body", [
        helper.make_node("Mod", ["i", "two"], ["parity"]),
        helper.make_node("Equal", ["parity", "zero"], ["even"]),
        helper.make_node("If", ["even"], ["either"], then_branch=flat, else_branch=same),
        helper.make_node("Reshape", ["either", "square"], ["back"]),
        helper.make_node("Add", ["back", "one"], ["acc_out"]),
        helper.make_node("Identity", ["cond_in"], ["cond_out"]),
    ], [value("i", INT64, []), value("cond_in", BOOL, []), value("acc_in", FLOAT, [2, 2])],
        [value("cond_out", BOOL, []), value("acc_out", FLOAT, [2, 2])],
        [helper.make_tensor("two", INT64, [], [2]), helper.make_tensor("zero", INT64, [], [0]),
         ints("minus_one", [-1]), ints("square", [2, 2]), helper.make_tensor("one", FLOAT, [], [1])])
    nodes = [helper.make_node("Loop", ["trips", "", "x"], ["acc"], body=body)]
    g = graph("if_in_loop", nodes, [value("trips", INT64, []), value("x", FLOAT, [2, 2])], [value("acc", FLOAT, [2, 2])])
    return model(g), {"3 trips": {"trips": np.array(3, np.int64), "x": np.eye(2, dtype=np.float32)}}


def passed_through():
    then_branch = graph("then", [helper.make_node("Unsqueeze", ["h", "zero"], ["t"])], [], [value("t", FLOAT)])
    else_branch = graph("else", [helper.make_node("Identity", ["h"], ["e"])], [], [value("e", FLOAT)])
    nodes = [
        helper.make_node("Relu", ["x"], ["h"]),
        helper.make_node("If", ["c"], ["y"], then_branch=then_branch, else_branch=else_branch),
        helper.make_node("Shape", ["y"], ["shape"]),
        helper.make_node("Size", ["shape"], ["rank"]),
        helper.make_node("Add", ["h", "h"], ["doubled"]),
    ]
    g = graph("passed_through", nodes, [value("x", FLOAT, ["n", 3]), value("c", BOOL, [])],
              [value("rank", INT64, []), value("doubled", FLOAT, ["n", 3])], [ints("zero", [0])])
    x = np.arange(-3, 3, dtype=np.float32).reshape(2, 3)
    return model(g), {"then": {"x": x, "c": np.array(True)}, "else": {"x": x, "c": np.array(False)}}


CASES = (if_ranks, squeeze_if_one, loop_grow, scan_dynamic, if_in_loop, passed_through)


def main():
    compare_built_models(((make.__name__, *make()) for make in CASES), 1e-6, __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
