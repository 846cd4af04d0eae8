"""The quantized-tensor methods of a plain (unquantized) Tensor, as torch has them:
`dequantize()` returns the tensor itself; the getters raise torch's NotImplementedError
(QTensor overrides every one of them)."""

from __future__ import annotations

__all__ = ["rows", "GETTERS"]

GETTERS = (
    "int_repr",
    "q_scale",
    "q_zero_point",
    "q_per_channel_scales",
    "q_per_channel_zero_points",
    "q_per_channel_axis",
    "qscheme",
)


def backend_key(t) -> str:
    """torch's dispatch key name for t's device ('CPU', 'CUDA')."""
    return "CPU" if t.device.type == "cpu" else "CUDA"


def not_implemented(op: str, key: str) -> NotImplementedError:
    """torch's error for an op with no kernel for this kind of tensor (a quantized one:
    with the way out)."""
    hint = (
        (
            " Quantized tensors support views, indexing and comparisons; dequantize() "
            "first, compute in float, and quantize the result again."
        )
        if (key.startswith("Quantized"))
        else ""
    )
    return NotImplementedError(
        f"Could not run 'aten::{op}' with arguments from the '{key}' backend. This could be "
        f"because the operator doesn't exist for this backend, or was omitted during the "
        f"selective/custom build process (if using custom build).{hint}"
    )


def _getter(name):
    def method(self, *args, **kwargs):
        raise not_implemented(name, backend_key(self))

    method.__name__ = name
    return method


def _dequantize(self):
    """An unquantized tensor dequantizes to itself."""
    return self


def rows() -> dict:
    m = {name: _getter(name) for name in GETTERS}
    m["dequantize"] = _dequantize
    return m
