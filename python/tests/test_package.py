"""The package around the sessions: wgml.ops(), wgml.devices(), bfloat16, the type stubs."""

from __future__ import annotations

import importlib
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import PTE_FIXTURES, REPO, has_webgpu

import wgml
from wgml import _arrays

BF16 = PTE_FIXTURES / "linear_bf16"


def test_ops_lists_every_op_with_its_support() -> None:
    table = wgml.ops()
    assert table["backends"] == ["cpu", "webgpu"]
    by_name = {(op["domain"], op["op"]): op for op in table["ops"]}
    assert by_name[("mlx", "AddNode")]["support"] == {"cpu": True, "webgpu": "kernel"}
    assert by_name[("mlx", "SdpaNode")]["support"]["cpu"] is True
    assert all(op["support"]["webgpu"] in ("kernel", "view", "executor", "decomposed", "cpu fallback", "no")
               for op in table["ops"])


def test_devices_are_the_adapters_auto_picks_from() -> None:
    adapters = wgml.devices()
    assert [a.index for a in adapters] == list(range(len(adapters)))
    session = wgml.Session(PTE_FIXTURES / "attention_block" / "model.pte")
    if has_webgpu():
        assert session.device.startswith("webgpu: ")
        assert any(a.name in session.device for a in adapters if a.usable)
    else:
        assert session.device == "cpu"


def test_bfloat16_round_trips_through_ml_dtypes(device: str) -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bits = np.load(BF16 / "step0_input_0.npy")
    want_bits = np.load(BF16 / "step0_expected_0.npy")
    session = wgml.Session(BF16 / "model.pte", device)
    (out,) = session.run([bits.view(ml_dtypes.bfloat16)]).values()
    assert out.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(out.astype(np.float32), want_bits.view(ml_dtypes.bfloat16).astype(np.float32),
                               rtol=1e-2, atol=1e-2)
    # The raw uint16 bits are taken as bfloat16 too, and give the same output.
    np.testing.assert_array_equal(*session.run([bits]).values(), out)
    # Python floats become bfloat16 for a bfloat16 input.
    floats = bits.view(ml_dtypes.bfloat16).astype(np.float32).tolist()
    np.testing.assert_array_equal(*session.run({"x": floats}).values(), out)


def test_without_ml_dtypes_bfloat16_outputs_are_their_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_arrays, "BFLOAT16", None)
    bits = np.load(BF16 / "step0_input_0.npy")
    session = wgml.Session(BF16 / "model.pte", "cpu")
    (out,) = session.run([bits]).values()
    assert out.dtype == np.uint16
    want = np.load(BF16 / "step0_expected_0.npy")
    widen = lambda b: (b.astype(np.uint32) << 16).view(np.float32)  # noqa: E731
    np.testing.assert_allclose(widen(out), widen(want), rtol=1e-2, atol=1e-2)


def test_the_package_is_typed() -> None:
    package = Path(wgml.__file__).parent
    assert (package / "py.typed").is_file()
    stub = Path(importlib.import_module("wgml._wgml").__file__).with_name("_wgml.pyi")
    text = stub.read_text()
    for name in ("class Session", "class Generator", "class Tokenizer", "class IoInfo", "def devices"):
        assert name in text, f"{name} missing from {stub}"


def test_ops_is_what_the_cli_prints() -> None:
    cli = next((path for path in (REPO / "build" / "tools" / "cli" / "wgml", REPO / "build-asan" / "tools" / "cli" / "wgml")
                if path.is_file()), None)
    if cli is None:
        pytest.skip("no wgml command built in build/ or build-asan/")
    printed = subprocess.run([str(cli), "ops", "--json"], capture_output=True, text=True, check=True).stdout
    assert wgml.ops() == json.loads(printed)
