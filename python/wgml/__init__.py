"""wgml: run ExecuTorch MLX-delegate programs and ONNX models on WebGPU or the CPU reference.

    import numpy as np, wgml
    session = wgml.Session("tests/fixtures/pte/attention_block/model.pte")
    outputs = session.run({"x": np.ones((1, 8, 32), np.float32), "input_pos": [0]})

See docs/python.md.
"""

from __future__ import annotations

import json
import os
from importlib.metadata import version as _version
from pathlib import Path
from typing import Any

# An installed wheel carries the kernels it was built with; an editable install reads the
# checkout's, whose path the module was built with.
_KERNELS = Path(__file__).with_name("kernels")
if _KERNELS.is_dir():
    os.environ.setdefault("WGML_KERNELS_DIR", str(_KERNELS))

from . import _wgml  # noqa: E402 - after WGML_KERNELS_DIR, which the module reads
from ._wgml import Adapter, GenerationStats, IoInfo, OpProfile, RunStats, TextStream, Tokenizer  # noqa: E402
from .errors import (  # noqa: E402
    Error,
    ExecutionError,
    InvalidArgumentError,
    InvalidFormatError,
    InvalidProgramError,
    IoError,
    ResourceLimitError,
    UnsupportedError,
)
from .generation import GenerationOptions, Generator, generate  # noqa: E402
from .session import Session  # noqa: E402

__version__ = _version("wgml")  # CMakeLists.txt's project(wgml VERSION ...)


def devices() -> list[Adapter]:
    """Every WebGPU adapter on this machine, in the implementation's order (none where there is
    no WebGPU library). ``Session(device="webgpu", adapter=str(a.index))`` picks one."""
    return _wgml.devices()


def ops() -> dict[str, Any]:
    """Every op of every domain with its support per backend, as ``wgml ops --json`` prints it:
    ``{"backends": [...], "ops": [{"domain", "op", "support": {"cpu": bool, "webgpu": str}}, ...]}``."""
    return json.loads(_wgml.ops_json())


__all__ = [
    "Adapter", "Error", "ExecutionError", "GenerationOptions", "GenerationStats", "Generator",
    "InvalidArgumentError", "InvalidFormatError", "InvalidProgramError", "IoError", "IoInfo", "OpProfile",
    "ResourceLimitError", "RunStats",
    "Session", "TextStream", "Tokenizer", "UnsupportedError", "devices", "generate", "ops",
]
