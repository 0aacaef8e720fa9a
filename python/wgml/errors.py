"""wgml's errors as Python exceptions.

Every failure wgml reports is a :class:`wgml.Error` carrying the C++ ``wgml::ErrorCode`` as
``code`` (``"io"``, ``"invalid-format"``, ...) and the message, which names the file, the place
(chain, instruction, node, field or byte offset) and what was expected. Each code has its own
subclass, so a program can catch just the ones it handles.
"""

from __future__ import annotations


class Error(Exception):
    """A failure wgml reports: ``code`` is the error code's name, ``message`` the explanation."""

    code = "runtime"

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"


class IoError(Error):
    """The file cannot be opened or read (``ErrorCode::Io``)."""

    code = "io"


class InvalidFormatError(Error):
    """Bytes that are not what the container or FlatBuffer format requires (``ErrorCode::InvalidFormat``)."""

    code = "invalid-format"


class InvalidProgramError(Error):
    """A well-formed file whose program breaks the IR's rules (``ErrorCode::InvalidProgram``)."""

    code = "invalid-program"


class UnsupportedError(Error):
    """Valid, but outside what this build executes: a dtype, node or version (``ErrorCode::Unsupported``)."""

    code = "unsupported"


class InvalidArgumentError(Error, ValueError):
    """A caller's input does not match the program (``ErrorCode::InvalidArgument``); also a ValueError."""

    code = "invalid-argument"


class ExecutionError(Error):
    """A failure while executing: a shape mismatch, a bad index value, a GPU error (``ErrorCode::Runtime``)."""

    code = "runtime"


class ResourceLimitError(Error, MemoryError):
    """A tensor would exceed the session's memory limit, or the device ran out of memory
    (``ErrorCode::ResourceLimit``); also a MemoryError."""

    code = "resource-limit"


_BY_CODE = {cls.code: cls for cls in (IoError, InvalidFormatError, InvalidProgramError, UnsupportedError,
                                      InvalidArgumentError, ExecutionError, ResourceLimitError)}


def error_class(code: str) -> type[Error]:
    """The exception class of an error code's name (the extension module raises through this)."""
    return _BY_CODE.get(code, Error)
