"""torch-style `repr`: `tensor([1., 2.], device='cuda:0', dtype=gpu_tensor.float64)`."""

from __future__ import annotations

import math

import numpy as np

from . import dtype as _dt

__all__ = ["format_tensor"]

_SUMMARIZE_OVER = 1000  # torch's print threshold: larger tensors show their corners only


_EDGE = 3  # torch's edgeitems: corner rows/items kept when summarising
_PRECISION = 4  # torch's default print precision
_LINEWIDTH = 80  # torch's default line width


class _Formatter:
    """torch's element formatter: one width for every element, chosen from the nonzero
    finite values only (so -0., nan and inf never widen the others); whole floats print as
    '1.', a wide range or large/small magnitudes switch to scientific notation."""

    def __init__(self, vals: np.ndarray):
        self.floating = vals.dtype.kind == "f"
        self.int_mode, self.sci_mode, self.max_width = True, False, 1
        flat = vals.reshape(-1)
        if not self.floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(str(v)))
            return
        nz = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if nz.size == 0:
            return
        lo, hi = float(np.abs(nz).min()), float(np.abs(nz).max())
        values = nz.tolist()
        self.int_mode = all(v == math.ceil(v) for v in values)
        if self.int_mode:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8
            fmt = (lambda v: f"{v:.{_PRECISION}e}") if self.sci_mode else (lambda v: f"{v:.0f}.")
        else:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
            fmt = (
                (lambda v: f"{v:.{_PRECISION}e}")
                if self.sci_mode
                else (lambda v: f"{v:.{_PRECISION}f}")
            )
        self.max_width = max(len(fmt(v)) for v in values)

    def format(self, v) -> str:
        if not self.floating:
            ret = str(v)
        elif self.sci_mode:
            ret = f"{v:{self.max_width}.{_PRECISION}e}"
        elif self.int_mode:
            ret = f"{v:.0f}" + ("" if math.isinf(v) or math.isnan(v) else ".")
        else:
            ret = f"{v:.{_PRECISION}f}"
        return (self.max_width - len(ret)) * " " + ret


def _summarized(vals: np.ndarray) -> np.ndarray:
    """The corner values a summarised print shows (what torch sizes the formatter on)."""
    if vals.ndim == 0:
        return vals
    if vals.ndim == 1:
        return np.concatenate([vals[:_EDGE], vals[-_EDGE:]]) if len(vals) > 2 * _EDGE else vals
    rows = (
        list(range(_EDGE)) + list(range(len(vals) - _EDGE, len(vals)))
        if (len(vals) > 2 * _EDGE)
        else range(len(vals))
    )
    return np.stack([_summarized(vals[i]) for i in rows])


def _element(v, f1, f2) -> str:
    if f2 is None:
        return f1.format(v)
    real = f1.format(v.real)
    imag = (f2.format(v.imag) + "j").lstrip()
    return real + imag if imag[0] in "+-" else real + "+" + imag


def _body(vals, indent, summarize, f1, f2) -> str:
    if vals.ndim == 0:
        return _element(vals.item(), f1, f2)
    if vals.ndim == 1:
        width = f1.max_width + 2 + (f2.max_width + 1 if f2 is not None else 0)
        per_line = max(1, (_LINEWIDTH - indent) // width)
        if summarize and len(vals) > 2 * _EDGE:
            items = (
                [_element(v, f1, f2) for v in vals[:_EDGE].tolist()]
                + [" ..."]
                + [_element(v, f1, f2) for v in vals[-_EDGE:].tolist()]
            )
        else:
            items = [_element(v, f1, f2) for v in vals.tolist()]
        lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    n = len(vals)
    if summarize and n > 2 * _EDGE:
        parts = (
            [_body(vals[i], indent + 1, summarize, f1, f2) for i in range(_EDGE)]
            + ["..."]
            + [_body(vals[i], indent + 1, summarize, f1, f2) for i in range(n - _EDGE, n)]
        )
    else:
        parts = [_body(vals[i], indent + 1, summarize, f1, f2) for i in range(n)]
    return "[" + ("," + "\n" * (vals.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def format_tensor(t) -> str:
    if t.device.type == "meta":  # no values: torch shows "..." and the size
        return _format_meta(t)
    vals = t._host()
    if t.dtype is _dt.bfloat16 or t.dtype is _dt.float16:
        vals = vals.astype(np.float32)
    if vals.size == 0:
        body = "[]"
    else:
        summarize = vals.size > _SUMMARIZE_OVER
        corners = _summarized(vals) if summarize else vals
        if t.dtype.category == _dt.COMPLEX:  # torch sizes the two parts separately
            f1, f2 = _Formatter(corners.real), _Formatter(corners.imag)
        else:
            f1, f2 = _Formatter(corners), None
        body = _body(vals, len("tensor("), summarize, f1, f2)
    extras = []
    if t.device.type != "cpu":
        extras.append(f"device='{t.device}'")
    if vals.size == 0 and vals.ndim != 1:
        extras.append(f"size={tuple(vals.shape)}")
    default_shown = (_dt.get_default_dtype(), _dt.int64, _dt.bool, _dt.default_complex())
    if t.dtype not in default_shown or vals.size == 0 and t.dtype is not _dt.get_default_dtype():
        extras.append(f"dtype={t.dtype!r}")
    if t.grad_fn is not None:  # torch names a non-leaf's node instead of its flag
        extras.append(f"grad_fn=<{type(t.grad_fn).__name__}>")
    elif t._requires_grad:
        extras.append("requires_grad=True")
    return _add_suffixes("tensor(" + body, extras, len("tensor("))


def _add_suffixes(text: str, suffixes, indent: int) -> str:
    """torch's placement: each suffix joins the last line unless that would pass the line
    width, in which case it starts a new line at the indent."""
    parts = [text]
    last = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last + len(suffix) + 2 > _LINEWIDTH:
            parts.append(",\n" + " " * indent + suffix)
            last = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last += len(suffix) + 2
    return "".join(parts) + ")"


def _format_meta(t) -> str:
    extras = ["...", "device='meta'", f"size={tuple(t.shape)}"]
    if t.dtype is not _dt.get_default_dtype():
        extras.append(f"dtype={t.dtype!r}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{type(t.grad_fn).__name__}>")
    elif t._requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + ", ".join(extras) + ")"
