"""The ExecuTorch fixtures (tests/fixtures/pte) against eager PyTorch's outputs, through
wgml.Session on the CPU reference and on WebGPU."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import PTE_FIXTURES, manifest

import wgml

RUNNABLE = ["attention_block", "dynamic_seq", "elementwise_layout", "kv_cache", "linear_act", "linear_bf16",
            "quantized_linear", "unused_input"]


def step_arrays(name: str, step: int, kind: str) -> list[np.ndarray]:
    """The step's inputs or expected outputs in order (bfloat16 ones as their uint16 bits)."""
    count = len(manifest(name)["inputs" if kind == "input" else "outputs"])
    return [np.load(PTE_FIXTURES / name / f"step{step}_{kind}_{i}.npy") for i in range(count)]


def as_float(array: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":  # bits -> float32: bfloat16 is float32's upper half
        return (np.asarray(array).view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    return np.asarray(array, dtype=np.float64)


@pytest.mark.parametrize("name", RUNNABLE)
def test_every_step_matches_pytorch(name: str, device: str) -> None:
    m = manifest(name)
    session = wgml.Session(PTE_FIXTURES / name / "model.pte", device)
    for step in range(m["steps"]):  # one session: kv_cache's buffers carry over
        outputs = session.run(step_arrays(name, step, "input"))
        assert list(outputs) == [info.name for info in session.outputs]
        for got, want, spec in zip(outputs.values(), step_arrays(name, step, "expected"), m["outputs"]):
            assert got.shape == want.shape
            np.testing.assert_allclose(as_float(got, spec["dtype"]), as_float(want, spec["dtype"]),
                                       **m["tolerance"], err_msg=f"{name} step {step}")


def test_inputs_and_outputs_describe_the_program() -> None:
    session = wgml.Session(PTE_FIXTURES / "attention_block" / "model.pte", "cpu")
    assert [(i.name, i.kind, i.dtype, i.shape) for i in session.inputs] == [
        ("x", "tensor", "float32", [1, 8, 32]), ("input_pos", "tensor", "int64", [1])]
    assert [(o.name, o.dtype, o.shape) for o in session.outputs] == [("aten_add_tensor", "float32", [1, 8, 32])]
    assert [i.name for i in session.get_inputs()] == ["x", "input_pos"]


def test_dynamic_dims_are_none_with_their_bounds() -> None:
    session = wgml.Session(PTE_FIXTURES / "dynamic_seq" / "model.pte", "cpu")
    (x,) = session.inputs
    assert x.shape == [1, None, 16]
    assert x.max_shape == [1, 16, 16]


def test_feeds_by_name_and_by_position_agree() -> None:
    session = wgml.Session(PTE_FIXTURES / "attention_block" / "model.pte", "cpu")
    x, pos = step_arrays("attention_block", 0, "input")
    (by_name,) = session.run({"input_pos": pos, "x": x}).values()
    (by_position,) = session.run([x, pos]).values()
    np.testing.assert_array_equal(by_name, by_position)


def test_python_lists_take_the_declared_dtype() -> None:
    session = wgml.Session(PTE_FIXTURES / "attention_block" / "model.pte", "cpu")
    x, pos = step_arrays("attention_block", 0, "input")
    (from_lists,) = session.run({"x": x.tolist(), "input_pos": pos.tolist()}).values()
    (from_arrays,) = session.run([x, pos]).values()
    np.testing.assert_array_equal(from_lists, from_arrays)


def test_mutable_buffers_persist_until_reset(device: str) -> None:
    session = wgml.Session(PTE_FIXTURES / "kv_cache" / "model.pte", device)
    step0 = step_arrays("kv_cache", 0, "input")
    expected = step_arrays("kv_cache", 0, "expected")
    first = list(session.run(step0).values())
    session.run(step_arrays("kv_cache", 1, "input"))
    # The second output reads the cache, which step 1 wrote more of: the same feed gives another result.
    assert not np.allclose(list(session.run(step0).values())[1], expected[1], atol=1e-4)
    session.reset()
    again = list(session.run(step0).values())
    for got, first_got, want in zip(again, first, expected):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(got, first_got)


def test_mlxg_payload_with_safetensors_constants() -> None:
    fixture = PTE_FIXTURES / "linear_act"
    session = wgml.Session(fixture / "model.mlxg", "cpu", constants=fixture / "model.safetensors")
    (x,) = step_arrays("linear_act", 0, "input")
    (want,) = step_arrays("linear_act", 0, "expected")
    (got,) = session.run([x]).values()
    np.testing.assert_allclose(got, want, **manifest("linear_act")["tolerance"])


def test_outputs_are_writable_and_independent() -> None:
    session = wgml.Session(PTE_FIXTURES / "attention_block" / "model.pte", "cpu")
    inputs = step_arrays("attention_block", 0, "input")
    (out,) = session.run(inputs).values()
    keep = out.copy()
    out[...] = 0  # must not reach the session's state
    (again,) = session.run(inputs).values()
    np.testing.assert_array_equal(again, keep)
