"""torch's repr of a quantized tensor: the dequantized values, then size, dtype, scheme and
parameters, wrapped at 80 columns the way torch's `_add_suffixes` wraps them (_format.py's):

    tensor([1., 2.], size=(2,), dtype=gpu_tensor.quint8,
           quantization_scheme=gpu_tensor.per_tensor_affine, scale=0.1, zero_point=3)
"""

from __future__ import annotations

from .. import _format

__all__ = ["format_qtensor"]

_INDENT = len("tensor(")


def _values(t) -> str:
    """torch's body for the dequantized values (with `tensor(` in front)."""
    vals = t.dequantize()._host()
    if vals.size == 0:
        return "tensor([]"
    summarize = vals.size > _format._SUMMARIZE_OVER
    corners = _format._summarized(vals) if summarize else vals
    f = _format._Formatter(corners)
    return "tensor(" + _format._body(vals, _INDENT, summarize, f, None)


def format_qtensor(t, package: str = "gpu_tensor") -> str:
    """`package` names the dtype and scheme (tests render with "torch" to compare with
    torch's own string)."""
    qz = t._qz
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    suffixes += [
        f"size={tuple(t.shape)}",
        f"dtype={package}.{t.dtype.name}",
        f"quantization_scheme={package}.{qz.scheme.name}",
    ]
    if not qz.per_channel_scheme:
        suffixes += [f"scale={qz.scale!r}", f"zero_point={qz.zero_point}"]
    else:
        scales, zps = t.q_per_channel_scales(), t.q_per_channel_zero_points()
        rename = (
            (lambda s: s.replace("gpu_tensor.", package + "."))
            if (package != "gpu_tensor")
            else (lambda s: s)
        )
        suffixes += [
            f"scale={rename(repr(scales))}",
            f"zero_point={rename(repr(zps))}",
            f"axis={qz.axis}",
        ]
    return _format._add_suffixes(_values(t), suffixes, _INDENT)
