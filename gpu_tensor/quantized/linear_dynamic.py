"""The dynamic quantized Linear's arithmetic (torch's quantized::linear_dynamic on x86 /
fbgemm), on every device:

1. the activation's qparams from its min and max: ChooseQuantizationParams over quint8 with
   reduce_range (0..127), the scale rounded to float32 as fbgemm keeps it;
2. x_q = quantize(x) with torch CPU's formula (affine.py), written as x_q - 128 in int8:
   every quint8 value fits (fbgemm clamps to 0..255; with reduce_range a rounding tie can
   reach 128, which int8 bits of x_q itself could not hold);
3. acc = (x_q - 128) @ w_q^T - (zp_x - 128) * rowsum(w_q), in int32: exactly
   (x_q - zp_x) @ w_q^T, with the weight row sums computed once when the weight is packed;
4. y = float32(acc) * float32(s_x * s_w) + bias (s_w per output channel for per-channel
   weights), one fused elementwise kernel.

Step 2 reads the input's min and max on the host (one sync on cuda), as the branches of
step 1 are host logic.
"""

from __future__ import annotations

import numpy as np

from .. import dtype as _dt
from .._tensor import Tensor
from ..fusion.fuse import fuse
from . import affine
from .int_mm import int8_mm_nt
from .qparams import choose_qparams
from .qtensor import QTensor

__all__ = ["PackedLinearWeight", "linear_dynamic"]


# fbgemm computes float32(acc) * scale + bias with one FMA (one rounding): the same value
# comes from double arithmetic (the float32 x float32 product is exact in double) rounded
# once to float32, on every device (bit-identical to torch CPU in the tests).
@fuse(kernel_name="gt_linear_dynamic_epilogue")
def _epilogue(acc, rowsum, zp, scale, bias):
    return ((acc - rowsum * zp).float().double() * scale + bias.double()).float()


@fuse(kernel_name="gt_linear_dynamic_epilogue_nobias")
def _epilogue_nobias(acc, rowsum, zp, scale):
    return ((acc - rowsum * zp).float().double() * scale).float()


class PackedLinearWeight:
    """A qint8 weight (out, in) ready for linear_dynamic: its integers (out, in), C order,
    its row sums, and its scales as float32 (one, or one per row)."""

    def __init__(self, weight: QTensor, bias: Tensor | None):
        if weight.dtype is not _dt.qint8:
            raise RuntimeError(
                f"quantized::linear_dynamic: expected the weight to be qint8, got {weight.dtype}"
            )
        self.weight, self.bias = weight, bias
        ints = weight._ints()
        qz = weight._qz
        if qz.per_channel_scheme:
            if qz.axis != 0:
                raise RuntimeError(
                    "quantized::linear_dynamic: per-channel weights must be "
                    "quantized along axis 0 (the output features)"
                )
            zps = qz.zero_points
            scales = qz.scales.astype(np.float32)
        else:
            zps = np.array([qz.zero_point])
            scales = np.float32(qz.scale)
        if np.any(zps != 0):
            # fbgemm would subtract the weight zero point too; the symmetric observers that
            # quantize_dynamic uses always give 0
            raise RuntimeError(
                "gpu_tensor's dynamic quantized Linear takes weights with zero "
                "point 0 (symmetric, as default_dynamic_qconfig makes them)"
            )
        self.ints = ints.contiguous()  # (out, in): the product's right operand, as stored
        # host devices multiply through float32 BLAS (int_mm.py): the weight converted once
        # (4 bytes a weight, as the float layer's; cuda keeps only the int8 copy)
        self.host_float = None
        if not hasattr(ints._backend, "int8_mm_nt"):
            self.host_float = self.ints._data.astype(np.float32)
        self.rowsum = ints.to(_dt.int32).sum(1, dtype=_dt.int32)
        self.scales = scales  # float32 scalar or (out,) array

    def scale_row(self, device, s_x: float):
        """float32(s_x * s_w), a Python float or a float32 (out,) tensor on `device`."""
        if np.ndim(self.scales) == 0:
            return float(np.float32(s_x) * self.scales)
        from .. import creation

        return creation.tensor(np.float32(s_x) * self.scales, device=device)


def linear_dynamic(x: Tensor, packed: PackedLinearWeight, reduce_range: bool = True):
    """y = x @ W^T + b with x quantized per call and W int8 (see the module docstring)."""
    if x.dtype is not _dt.float32:
        raise RuntimeError(f"quantized::linear_dynamic: expected a float32 input, got {x.dtype}")
    n, k = packed.ints.shape
    if x.shape[-1] != k:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied "
            f"({x.numel() // max(x.shape[-1], 1)}x{x.shape[-1]} and {k}x{n})"
        )
    lead = tuple(x.shape[:-1])
    x2 = x.detach().reshape(-1, k)
    if x2.numel():
        lo, hi = x2.aminmax()
        lo, hi = float(lo), float(hi)
    else:
        lo = hi = 0.0
    s_x, zp_x = choose_qparams(lo, hi, 0, 255, reduce_range)
    s_x = float(np.float32(s_x))  # fbgemm keeps the activation scale in float32
    shifted = affine.quantize_activation(x2, affine.reciprocal(s_x), zp_x)  # x_q - 128
    acc = int8_mm_nt(shifted, packed.ints, packed.host_float)
    zp_x -= 128  # (x_q - 128) @ w^T - (zp_x - 128) * rowsum = (x_q - zp_x) @ w^T
    scale = packed.scale_row(x.device, s_x)
    bias = packed.bias
    if bias is not None:
        y = _epilogue(acc, packed.rowsum, zp_x, scale, bias.detach())
    else:
        y = _epilogue_nobias(acc, packed.rowsum, zp_x, scale)
    return y.reshape(*lead, y.shape[-1])
