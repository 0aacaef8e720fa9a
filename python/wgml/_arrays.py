"""numpy arrays to and from what the extension module takes and gives.

A tensor crosses as (wgml dtype name, shape, bytes): numpy has no bfloat16, so a bfloat16 tensor
travels as its uint16 bits and becomes an ml_dtypes.bfloat16 array where ml_dtypes is installed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import InvalidArgumentError

try:
    import ml_dtypes

    BFLOAT16: np.dtype | None = np.dtype(ml_dtypes.bfloat16)
except ImportError:
    BFLOAT16 = None

# numpy dtypes by wgml's names; bfloat16 is added where ml_dtypes provides it.
_NUMPY_DTYPES = {name: np.dtype(name) for name in
                 ("uint8", "int8", "int16", "int32", "int64", "uint32", "float16", "float32", "float64", "bool")}


def _wgml_dtype(array: np.ndarray, declared: str) -> str:
    if BFLOAT16 is not None and array.dtype == BFLOAT16:
        return "bfloat16"
    if declared == "bfloat16" and array.dtype == np.uint16:
        return "bfloat16"  # the raw bits, as wgml's .npy files hold them
    if array.dtype.name in _NUMPY_DTYPES:
        return array.dtype.name
    raise InvalidArgumentError(f"numpy dtype {array.dtype} is not one wgml tensors hold")


def tensor_feed(value: Any, declared: str, name: str) -> tuple[str, tuple[int, ...], np.ndarray]:
    """A feed for a tensor input. Python lists and scalars take the declared dtype; a numpy array
    must already have it (the program checks, as onnxruntime does)."""
    if isinstance(value, np.ndarray):
        array = value
    elif declared == "bfloat16":
        array = np.asarray(value, dtype=BFLOAT16 if BFLOAT16 is not None else np.float32)
    else:
        array = np.asarray(value, dtype=_NUMPY_DTYPES.get(declared))
    try:
        dtype = _wgml_dtype(array, declared)
    except InvalidArgumentError as e:
        raise InvalidArgumentError(f"input '{name}': {e.message}") from None
    flat = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
    return dtype, tuple(array.shape), flat


def value_feed(value: Any, kind: str, name: str) -> int | float | bool:
    """A feed for an int, float or bool value input: a Python scalar or a one-element array."""
    converters = {"int": int, "float": float, "bool": bool}
    try:
        item = value.item() if isinstance(value, np.ndarray) else value
        return converters[kind](item)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"input '{name}' is an {kind} value: {e}") from None


def output_value(value: Any) -> Any:
    """An output from the extension module as numpy: bfloat16 tensors as ml_dtypes.bfloat16 where
    it is installed, else their uint16 bits."""
    if not isinstance(value, tuple):
        return value
    dtype, array = value
    if dtype == "bfloat16" and BFLOAT16 is not None:
        return array.view(BFLOAT16)
    return array
