"""The CLI's one error type: a bad input or an unusable environment, told in one line."""

from __future__ import annotations

from pathlib import Path

__all__ = ["CliError", "SnapshotError", "write_text"]


class CliError(Exception):
    """str(exc) is printed as `gpu-tensor: error: ...` and the exit code is 2."""


def write_text(path: str, text: str) -> None:
    """Write an output file; an unwritable path is a CliError, not a traceback."""
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CliError(f"{path}: cannot write ({exc.strerror or exc})") from None


class SnapshotError(CliError):
    """A snapshot file that cannot be read; str(exc) is a one-line reason."""
