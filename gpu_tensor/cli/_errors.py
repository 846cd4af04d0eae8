"""The CLI's one error type: a bad input or an unusable environment, told in one line."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

__all__ = ["CliError", "SnapshotError", "write_chunks", "write_text"]


class CliError(Exception):
    """str(exc) is printed as `gpu-tensor: error: ...` and the exit code is 2."""


def write_chunks(path: str, chunks: Iterable[str]) -> None:
    """Write an output file piece by piece as `chunks` yields them, so a large page is
    never one string; an unwritable path is a CliError, not a traceback. A failure part
    way through removes the partial file rather than leave a truncated page behind."""
    try:
        fh = open(path, "w", encoding="utf-8")
    except OSError as exc:
        raise _cannot_write(path, exc) from None
    # only a regular file is removed on failure: never /dev/stdout, a FIFO or a link's name
    partial = stat.S_ISREG(os.fstat(fh.fileno()).st_mode) and not os.path.islink(path)
    try:
        with fh:
            for chunk in chunks:
                fh.write(chunk)
    except BaseException as exc:  # a full disk, or the renderer failing half way
        if partial:
            Path(path).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _cannot_write(path, exc) from None
        raise


def _cannot_write(path: str, exc: OSError) -> CliError:
    return CliError(f"{path}: cannot write ({exc.strerror or exc})")


def write_text(path: str, text: str) -> None:
    """Write an output file in one piece (see write_chunks)."""
    write_chunks(path, (text,))


class SnapshotError(CliError):
    """A snapshot file that cannot be read; str(exc) is a one-line reason."""
