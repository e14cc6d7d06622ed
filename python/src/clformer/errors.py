"""Exceptions: one class per clformer_status, each with the C library's
message as its text. Each also derives from the built-in exception a Python
user would expect (an invalid argument is a ValueError, a missing file an
OSError, ...), so `except ValueError` works as it does elsewhere."""
from __future__ import annotations


class ClformerError(Exception):
    """A failure the C library reported; `status` is its clformer_status name."""

    status = "CLFORMER_ERR"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class InvalidArgumentError(ClformerError, ValueError):
    """Bad input: a config, a token id, an option."""
    status = "CLFORMER_ERR_INVALID_ARGUMENT"


class NoDeviceError(ClformerError, LookupError):
    """No OpenCL device, or a selector that matches none (the message lists them)."""
    status = "CLFORMER_ERR_NO_DEVICE"


class OpenCLError(ClformerError, RuntimeError):
    """An OpenCL call failed."""
    status = "CLFORMER_ERR_OPENCL"


class CLBlastError(ClformerError, RuntimeError):
    """A CLBlast call failed."""
    status = "CLFORMER_ERR_CLBLAST"


class BuildError(ClformerError, RuntimeError):
    """A kernel did not compile (the message holds the build log)."""
    status = "CLFORMER_ERR_BUILD"


class OutOfMemoryError(ClformerError, MemoryError):
    """Device or host memory exhausted."""
    status = "CLFORMER_ERR_OUT_OF_MEMORY"


class FileError(ClformerError, OSError):
    """A file is missing, unreadable or unwritable."""
    status = "CLFORMER_ERR_IO"

    def __init__(self, message: str):
        ClformerError.__init__(self, message)


class FormatError(ClformerError, ValueError):
    """A file is malformed: checkpoint, corpus, cache."""
    status = "CLFORMER_ERR_FORMAT"


class StoppedError(ClformerError):
    """Stopped on request (the trainer raises KeyboardInterrupt instead after Ctrl-C)."""
    status = "CLFORMER_ERR_INTERRUPTED"


class DivergedError(ClformerError, ArithmeticError):
    """Training diverged: a non-finite or exploding loss."""
    status = "CLFORMER_ERR_DIVERGED"


# in clformer_status order: the index is the status code
_BY_CODE = [None, InvalidArgumentError, NoDeviceError, OpenCLError, CLBlastError, BuildError,
            OutOfMemoryError, FileError, FormatError, StoppedError, DivergedError]


def from_status(status: int, message: str) -> ClformerError:
    cls = _BY_CODE[status] if 0 < status < len(_BY_CODE) else ClformerError
    return cls(message or f"clformer status {status}")
