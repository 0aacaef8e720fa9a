"""Shared fixtures: the repository's test data and the devices to run on.

WebGPU tests run where wgml finds a usable adapter (lavapipe in CI) and skip elsewhere, unless
WGML_REQUIRE_WEBGPU=1 (tools/run_tests.sh sets it), which makes a missing adapter a failure.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

import wgml

REPO = Path(__file__).resolve().parents[2]
PTE_FIXTURES = REPO / "tests" / "fixtures" / "pte"
LLM_FIXTURES = REPO / "tests" / "fixtures" / "llm"


def has_webgpu() -> bool:
    return any(adapter.usable for adapter in wgml.devices())


def require_webgpu() -> None:
    """Skips the test where there is no usable WebGPU adapter (fails it under WGML_REQUIRE_WEBGPU=1)."""
    if has_webgpu():
        return
    if os.environ.get("WGML_REQUIRE_WEBGPU") == "1":
        pytest.fail("WGML_REQUIRE_WEBGPU=1 but wgml.devices() lists no usable WebGPU adapter")
    pytest.skip("no WebGPU adapter on this machine")


@pytest.fixture(params=["cpu", "webgpu"])
def device(request: pytest.FixtureRequest) -> str:
    if request.param == "webgpu":
        require_webgpu()
    return request.param


def manifest(name: str) -> dict:
    return json.loads((PTE_FIXTURES / name / "manifest.json").read_text())
