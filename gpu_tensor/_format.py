"""torch-style `repr`: `tensor([1., 2.], device='cuda:0', dtype=gpu_tensor.float64)`."""

from __future__ import annotations

import numpy as np

from . import dtype as _dt

__all__ = ["format_tensor"]

_SUMMARIZE_OVER = 1000  # torch's print threshold: larger tensors show their corners only


def _float_options(vals: np.ndarray) -> dict:
    finite = vals[np.isfinite(vals)] if vals.size else vals
    if finite.size == 0:
        return {"floatmode": "fixed", "precision": 4}
    amax = float(np.abs(finite).max())
    amin = float(np.abs(finite[finite != 0]).min()) if np.any(finite != 0) else 0.0
    sci = amax >= 1e8 or (amin and amax / amin > 1000.0) or (0 < amax < 1e-4)
    if sci:
        return {"floatmode": "fixed", "precision": 4, "formatter": {
            "float_kind": lambda v: f"{v:.4e}"}}
    if np.all(finite == np.round(finite)):
        return {"floatmode": "unique", "precision": 0}  # torch prints whole floats as "1."
    return {"floatmode": "fixed", "precision": 4}


def format_tensor(t) -> str:
    vals = t._host()
    if t.dtype is _dt.bfloat16 or t.dtype is _dt.float16:
        vals = vals.astype(np.float32)
    opts: dict = {"threshold": _SUMMARIZE_OVER, "edgeitems": 3}
    if t.dtype.category == _dt.FLOAT:
        opts.update(_float_options(vals))
    elif t.dtype.category == _dt.COMPLEX:  # torch formats both parts like floats
        opts.update(_float_options(np.concatenate([vals.real.ravel(), vals.imag.ravel()])))
        opts.pop("formatter", None)
    with np.printoptions(**opts):
        if vals.size == 0 and vals.ndim == 1:
            body = "[]"
        else:
            body = np.array2string(vals, separator=", ", prefix="tensor(")
    extras = []
    if t.device.type != "cpu":
        extras.append(f"device='{t.device}'")
    if vals.size == 0 and vals.ndim != 1:
        extras.append(f"size={tuple(vals.shape)}")
    default_shown = (_dt.get_default_dtype(), _dt.int64, _dt.bool, _dt.default_complex())
    if t.dtype not in default_shown or vals.size == 0 and t.dtype is not _dt.get_default_dtype():
        extras.append(f"dtype={t.dtype!r}")
    if t.requires_grad:
        extras.append("requires_grad=True")
    elif t.grad_fn is not None:
        extras.append(f"grad_fn=<{type(t.grad_fn).__name__}>")
    return "tensor(" + ", ".join([body, *extras]) + ")"
