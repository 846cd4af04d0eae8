"""Quantized tensors (torch's quantize_per_tensor / dequantize / int_repr contract).

Values are bit-exact with torch 2.13 CPU on every device (affine.py holds the formulas).
torch 2.13 deprecates these dtypes in favour of plain int8 tensors with scales kept by the
model (torchao); gpu_tensor keeps the API for code that uses it, warns as torch does, and
puts the speed in plain int8 kernels (int_mm.py).
"""

from .fake import fake_quantize_per_channel_affine, fake_quantize_per_tensor_affine
from .functions import (
    _make_per_tensor_quantized_tensor,
    dequantize,
    quantize_per_channel,
    quantize_per_tensor,
    quantize_per_tensor_dynamic,
)
from .int_mm import _int_mm
from .qtensor import QTensor
from .quantizer import (
    QScheme,
    per_channel_affine,
    per_channel_affine_float_qparams,
    per_channel_symmetric,
    per_tensor_affine,
    per_tensor_symmetric,
)
from .refuse import install as _install

_install()  # the QUANTIZED handler of the modes word: what ops do with quantized tensors

__all__ = [
    "QTensor",
    "QScheme",
    "quantize_per_tensor",
    "quantize_per_channel",
    "quantize_per_tensor_dynamic",
    "dequantize",
    "_make_per_tensor_quantized_tensor",
    "fake_quantize_per_tensor_affine",
    "fake_quantize_per_channel_affine",
    "_int_mm",
    "per_tensor_affine",
    "per_channel_affine",
    "per_tensor_symmetric",
    "per_channel_symmetric",
    "per_channel_affine_float_qparams",
]
