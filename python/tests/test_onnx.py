"""ONNX models, built here with onnx's helpers, against onnxruntime's CPU outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import wgml

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

OPSET = [helper.make_opsetid("", 17)]


def save(model: onnx.ModelProto, path: Path) -> Path:
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def mlp(path: Path) -> Path:
    """softmax(relu(x @ w1 + b1) @ w2) with a symbolic batch dim."""
    rng = np.random.default_rng(7)
    weights = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
               for name, shape in (("w1", (16, 32)), ("b1", (32,)), ("w2", (32, 8)))]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Add", ["h", "b1"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["r"]), helper.make_node("MatMul", ["r", "w2"], ["logits"]),
             helper.make_node("Softmax", ["logits"], ["probs"], axis=-1)]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
                              [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 8])], weights)
    return save(helper.make_model(graph, opset_imports=OPSET), path)


def onnxruntime_outputs(path: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)


def test_mlp_matches_onnxruntime(tmp_path: Path, device: str) -> None:
    path = mlp(tmp_path / "mlp.onnx")
    session = wgml.Session(path, device)
    for batch in (1, 5):  # one session, two batch sizes
        x = np.random.default_rng(batch).standard_normal((batch, 16)).astype(np.float32)
        (want,) = onnxruntime_outputs(path, {"x": x})
        np.testing.assert_allclose(session.run({"x": x})["probs"], want, rtol=1e-4, atol=1e-6)


def test_symbolic_dims_are_dynamic(tmp_path: Path) -> None:
    session = wgml.Session(mlp(tmp_path / "mlp.onnx"), "cpu")
    assert [(i.name, i.dtype, i.shape) for i in session.inputs] == [("x", "float32", [None, 16])]
    assert [(o.name, o.dtype, o.shape) for o in session.outputs] == [("probs", "float32", [None, 8])]


ONNX_DTYPES = {"uint8": TensorProto.UINT8, "int8": TensorProto.INT8, "int16": TensorProto.INT16,
               "int32": TensorProto.INT32, "int64": TensorProto.INT64, "uint32": TensorProto.UINT32,
               "float16": TensorProto.FLOAT16, "float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE,
               "bool": TensorProto.BOOL}


@pytest.mark.parametrize("dtype", ONNX_DTYPES)
def test_every_dtype_crosses_both_ways(tmp_path: Path, dtype: str) -> None:
    """Transpose: the bytes in, moved and out again, in each dtype numpy and wgml share."""
    code = ONNX_DTYPES[dtype]
    graph = helper.make_graph([helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0])], "transpose",
                              [helper.make_tensor_value_info("x", code, [3, 4])],
                              [helper.make_tensor_value_info("y", code, [4, 3])])
    path = save(helper.make_model(graph, opset_imports=OPSET), tmp_path / f"{dtype}.onnx")
    x = (np.arange(12).reshape(3, 4) % (2 if dtype == "bool" else 100)).astype(dtype)
    (want,) = onnxruntime_outputs(path, {"x": x})
    got = wgml.Session(path, "cpu").run([x])["y"]
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, want)
