"""Failures as wgml.Error subclasses with their codes; a session shared between threads."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from conftest import PTE_FIXTURES, require_webgpu

import wgml

ATTENTION = PTE_FIXTURES / "attention_block" / "model.pte"


def output(session: wgml.Session, inputs: list[np.ndarray]) -> np.ndarray:
    (value,) = session.run(inputs).values()
    return value


def attention_inputs(seed: int) -> list[np.ndarray]:
    x = np.random.default_rng(seed).standard_normal((1, 8, 32)).astype(np.float32)
    return [x, np.array([seed % 4], dtype=np.int64)]


def test_missing_file_is_an_io_error() -> None:
    with pytest.raises(wgml.IoError) as caught:
        wgml.Session("no/such/model.pte", "cpu")
    assert caught.value.code == "io"
    assert "no/such/model.pte" in caught.value.message
    assert isinstance(caught.value, wgml.Error)


def test_corrupt_file_is_an_invalid_format_error(tmp_path: Path) -> None:
    corrupt = tmp_path / "model.pte"
    corrupt.write_bytes(ATTENTION.read_bytes()[:200])
    with pytest.raises(wgml.InvalidFormatError) as caught:
        wgml.Session(corrupt, "cpu")
    assert caught.value.code == "invalid-format"
    assert str(corrupt) in caught.value.message


def test_program_without_mlx_delegate_is_unsupported() -> None:
    with pytest.raises(wgml.UnsupportedError, match="MLXBackend") as caught:
        wgml.Session(PTE_FIXTURES / "no_mlx_delegate" / "model.pte", "cpu")
    assert caught.value.code == "unsupported"


def test_wrong_dtype_is_an_invalid_argument() -> None:
    session = wgml.Session(ATTENTION, "cpu")
    x, pos = attention_inputs(0)
    with pytest.raises(wgml.InvalidArgumentError) as caught:
        session.run([x.astype(np.float64), pos])
    assert caught.value.code == "invalid-argument"
    assert "float32" in caught.value.message and "float64" in caught.value.message
    assert isinstance(caught.value, ValueError)


def test_wrong_shape_is_an_invalid_argument() -> None:
    session = wgml.Session(ATTENTION, "cpu")
    x, pos = attention_inputs(0)
    with pytest.raises(wgml.InvalidArgumentError, match="shape|dim"):
        session.run([x[:, :4], pos])


def test_unknown_missing_and_extra_inputs_are_invalid_arguments() -> None:
    session = wgml.Session(ATTENTION, "cpu")
    x, pos = attention_inputs(0)
    with pytest.raises(wgml.InvalidArgumentError, match="'y'"):
        session.run({"x": x, "input_pos": pos, "y": x})
    with pytest.raises(wgml.InvalidArgumentError, match="'input_pos' not given"):
        session.run({"x": x})
    with pytest.raises(wgml.InvalidArgumentError, match="3 inputs given"):
        session.run([x, pos, pos])


def test_unknown_device_is_an_invalid_argument() -> None:
    with pytest.raises(wgml.InvalidArgumentError, match="'gpu'"):
        wgml.Session(ATTENTION, "gpu")  # type: ignore[arg-type]


def test_an_adapter_selector_naming_no_adapter_is_an_invalid_argument() -> None:
    require_webgpu()
    with pytest.raises(wgml.InvalidArgumentError, match="no-such-adapter"):
        wgml.Session(ATTENTION, "webgpu", adapter="no-such-adapter")


def test_a_session_shared_by_two_threads_gives_each_its_own_results(device: str) -> None:
    session = wgml.Session(ATTENTION, device)
    seeds = {0: range(0, 12), 1: range(100, 112)}
    expected = {seed: output(session, attention_inputs(seed)) for seeds_ in seeds.values() for seed in seeds_}
    results: dict[int, np.ndarray] = {}
    failures: list[BaseException] = []

    def worker(my_seeds: range) -> None:
        try:
            for seed in my_seeds:
                results[seed] = output(session, attention_inputs(seed))
        except BaseException as e:  # noqa: B036 - reported by the main thread
            failures.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in seeds.values()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    assert results.keys() == expected.keys()
    for seed, want in expected.items():
        np.testing.assert_array_equal(results[seed], want)


def test_two_sessions_run_in_parallel_threads(device: str) -> None:
    sessions = [wgml.Session(ATTENTION, device) for _ in range(2)]
    expected = [output(sessions[0], attention_inputs(seed)) for seed in range(2)]
    results: list[list[np.ndarray]] = [[], []]

    def worker(i: int) -> None:
        results[i] = [output(sessions[i], attention_inputs(i)) for _ in range(8)]

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(2):
        assert len(results[i]) == 8
        for got in results[i]:
            np.testing.assert_array_equal(got, expected[i])


def test_every_error_code_has_its_own_subclass() -> None:
    # The names error_code_name() gives (src/core/error.cpp); a code without a subclass would
    # surface as the bare wgml.Error.
    codes = ["io", "invalid-format", "invalid-program", "unsupported", "invalid-argument", "runtime", "resource-limit"]
    classes = [wgml.errors.error_class(code) for code in codes]
    assert all(cls is not wgml.Error and cls.code == code for cls, code in zip(classes, codes))
    assert issubclass(wgml.errors.error_class("resource-limit"), MemoryError)
