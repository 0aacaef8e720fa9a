"""wgml.Session: load a model once, run it many times with numpy arrays."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal, Union

import numpy as np

from . import _wgml
from ._arrays import output_value, tensor_feed, value_feed
from .errors import InvalidArgumentError

Feeds = Union[Mapping[str, Any], Sequence[Any]]


class Session:
    """A loaded model (an ExecuTorch ``.pte``, a ``.mlxg`` payload or an ``.onnx`` model).

    Everything is verified and validated at load. The program's mutable buffers (a KV cache)
    persist across :meth:`run` calls until :meth:`reset`. One session may be shared between
    threads: runs take turns, and each releases the GIL while it computes.

    Args:
        path: the model file.
        device: ``"auto"`` (the best WebGPU adapter, a GPU, else a CPU implementation such as
            lavapipe; the CPU reference where the machine has no WebGPU at all), ``"webgpu"``
            (nodes with kernels on the GPU, the rest on the CPU) or ``"cpu"`` (the reference).
        adapter: WebGPU: an adapter index (see :func:`wgml.devices`) or part of its name.
        tunables: WebGPU: kernel tunable overrides, ``{"Add.WORKGROUP_SIZE": 64}`` or
            ``["Add.WORKGROUP_SIZE=64"]``.
        tunables_file: WebGPU: a per-adapter tunables JSON file.
        constants: the constants (``.safetensors``) of a standalone ``.mlxg`` payload.
        profile: WebGPU: time every GPU dispatch (see :meth:`profile`).

    Raises:
        wgml.Error: the subclass of the failure's code, e.g. :class:`wgml.IoError` for a missing
            file, :class:`wgml.InvalidFormatError` for a corrupt one.
    """

    def __init__(self, path: str | os.PathLike[str], device: Literal["auto", "cpu", "webgpu"] = "auto", *,
                 adapter: str | int = "", tunables: Mapping[str, Any] | Sequence[str] = (),
                 tunables_file: str = "", constants: str = "", profile: bool = False) -> None:
        if device not in ("auto", "cpu", "webgpu"):
            raise InvalidArgumentError(f"device {device!r}: expected 'auto', 'cpu' or 'webgpu'")
        if isinstance(tunables, Mapping):
            tunables = [f"{key}={value}" for key, value in tunables.items()]
        self._native = _wgml.Session(str(path), device, str(adapter), list(tunables), str(tunables_file),
                                     str(constants), profile)
        self.path = str(path)
        self._looping_threads: set[int] = set()

    @property
    def inputs(self) -> list[_wgml.IoInfo]:
        """The program's inputs in order: name, kind, dtype, shape (None for a dynamic dim) and
        max_shape (each dim's upper bound), like onnxruntime's ``get_inputs()``."""
        return self._native.inputs

    @property
    def outputs(self) -> list[_wgml.IoInfo]:
        """The program's outputs in order, described as :attr:`inputs` are."""
        return self._native.outputs

    def get_inputs(self) -> list[_wgml.IoInfo]:
        """:attr:`inputs`, under onnxruntime's name."""
        return self.inputs

    def get_outputs(self) -> list[_wgml.IoInfo]:
        """:attr:`outputs`, under onnxruntime's name."""
        return self.outputs

    @property
    def device(self) -> str:
        """Where the session runs: ``"cpu"``, or ``"webgpu: <adapter>"``."""
        return self._native.device

    def run(self, feeds: Feeds) -> dict[str, Any]:
        """Runs the program once.

        Args:
            feeds: the inputs by name (a dict) or in order (a list): numpy arrays of the declared
                dtype (bfloat16 as ``ml_dtypes.bfloat16`` or as its raw ``uint16`` bits), or Python
                numbers and lists, which take the declared dtype. An int, float or bool value input
                takes a Python scalar.

        Returns:
            The outputs by name: numpy arrays (bfloat16 as ``ml_dtypes.bfloat16`` where ml_dtypes
            is installed, else its ``uint16`` bits) or Python scalars for value outputs.

        Raises:
            wgml.InvalidArgumentError: a missing, unknown or extra input, or one whose dtype or
                shape the program does not accept.
            wgml.ExecutionError: a failure while executing.
        """
        self._check_usable()
        ordered = self._ordered_feeds(feeds)
        native_feeds = [tensor_feed(value, info.dtype, info.name) if info.kind == "tensor"
                        else value_feed(value, info.kind, info.name)
                        for value, info in zip(ordered, self.inputs)]
        values = self._native.run(native_feeds)
        return {info.name: output_value(value) for info, value in zip(self.outputs, values)}

    def _ordered_feeds(self, feeds: Feeds) -> list[Any]:
        names = [info.name for info in self.inputs]
        if isinstance(feeds, Mapping):
            unknown = sorted(set(feeds) - set(names))
            if unknown:
                raise InvalidArgumentError(f"{self.path}: no input named {', '.join(map(repr, unknown))} "
                                           f"(the inputs: {', '.join(names)})")
            missing = [name for name in names if name not in feeds]
            if missing:
                raise InvalidArgumentError(f"{self.path}: input {', '.join(map(repr, missing))} not given")
            return [feeds[name] for name in names]
        if isinstance(feeds, np.ndarray) or not isinstance(feeds, Sequence):
            raise InvalidArgumentError("feeds: expected a dict of inputs by name or a list in input order")
        if len(feeds) != len(names):
            raise InvalidArgumentError(f"{self.path}: {len(feeds)} inputs given, the program takes {len(names)} "
                                       f"({', '.join(names)})")
        return list(feeds)

    def reset(self) -> None:
        """Zeroes the mutable buffers (a KV cache): the next run sees them as after loading."""
        self._check_usable()
        self._native.reset()

    @contextlib.contextmanager
    def _generation_loop(self) -> Iterator[None]:
        """Marks the current thread as running the body of a generation loop over this session."""
        thread = threading.get_ident()
        self._looping_threads.add(thread)
        try:
            yield
        finally:
            self._looping_threads.discard(thread)

    def _check_usable(self) -> None:
        # The generation thread holds the session until the loop ends, and waits for the loop.
        if threading.get_ident() in self._looping_threads:
            raise InvalidArgumentError(f"{self.path}: the session is generating: it cannot run inside the "
                                       "generation loop's body")

    def profile(self, trace_path: str = "") -> list[_wgml.OpProfile]:
        """Per-op times since the last call, slowest first (WebGPU with ``profile=True``); with
        ``trace_path``, also writes the GPU times as a Chrome/Perfetto trace."""
        return self._native.profile(str(trace_path))

    @property
    def last_run_stats(self) -> _wgml.RunStats:
        """What the last run did on the GPU besides computing: plans made, kernels rendered,
        pipelines compiled, buffers created, submits, dispatches, bytes moved (zero on the CPU)."""
        return self._native.last_run_stats

    def __repr__(self) -> str:
        return f"wgml.Session({self.path!r}, device={self.device!r})"
