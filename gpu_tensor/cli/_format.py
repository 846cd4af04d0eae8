"""Small text helpers shared by the CLI views (sizes, frames, percentages)."""

from __future__ import annotations

import os

__all__ = ["fmt_bytes", "fmt_frame", "fmt_pct", "user_frames"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def fmt_bytes(n: int | float | None) -> str:
    """Binary units with one decimal ('1.5 MiB'); plain bytes below 1 KiB; '-' when unknown."""
    if n is None:
        return "-"
    value = float(n)
    unit = 0
    while abs(value) >= 1024 and unit < len(_UNITS) - 1:
        value /= 1024
        unit += 1
    if unit == 0:
        return f"{int(value)} B"
    return f"{value:.1f} {_UNITS[unit]}"


def _short(filename: str) -> str:
    # Paths under the working directory read better relative; others stay absolute.
    try:
        rel = os.path.relpath(filename)
    except ValueError:  # another drive on Windows
        return filename
    return filename if rel.startswith("..") else rel


def user_frames(frames: list) -> list[dict]:
    """The frames worth showing: gpu_tensor's own and the interpreter's (runpy, which
    `--run` goes through) are dropped when any user frame is left."""
    frames = [f for f in frames if isinstance(f, dict)]
    kept = [
        f
        for f in frames
        if not str(f.get("filename", "")).startswith((_PACKAGE_DIR, "<frozen"))
        and not str(f.get("filename", "")).endswith(os.sep + "runpy.py")
    ]
    return kept or frames


def fmt_frame(frame: dict) -> str:
    """One stack frame as 'file.py:12 in name' (torch snapshot Frame = filename, line, name)."""
    filename = _short(str(frame.get("filename", "?")))
    line = frame.get("line", "?")
    name = frame.get("name", "?")
    return f"{filename}:{line} in {name}"


def fmt_pct(part: float, whole: float) -> str:
    """Percentage with one decimal; '-' when the whole is zero (nothing to be a share of)."""
    if not whole:
        return "-"
    return f"{100.0 * part / whole:.1f}%"
