"""torch.ao.nn.quantized.dynamic.Linear (printed DynamicQuantizedLinear): int8 weights,
activations quantized at each call (gpu_tensor.quantized.linear_dynamic has the
arithmetic). Unlike torch's, it runs on cuda too: move it with .to("cuda")."""

from __future__ import annotations

from collections import OrderedDict

import gpu_tensor as gt
from gpu_tensor.nn import Module
from gpu_tensor.quantized import (
    per_tensor_affine,
    per_tensor_symmetric,
    quantize_per_channel,
    quantize_per_tensor,
)
from gpu_tensor.quantized.linear_dynamic import PackedLinearWeight, linear_dynamic

__all__ = ["Linear"]


class Linear(Module):
    """A dynamic quantized Linear. Made by `quantize_dynamic` or `Linear.from_float`."""

    _version = 4  # torch's serialization version of this module

    def __init__(self, in_features: int, out_features: int, bias_: bool = True, dtype=gt.qint8):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.version = self._version
        bias = gt.zeros(out_features) if bias_ else None
        weight = quantize_per_tensor(gt.zeros(out_features, in_features), 1.0, 0, gt.qint8)
        self.dtype = dtype
        self.set_weight_bias(weight, bias)

    def _get_name(self) -> str:
        return "DynamicQuantizedLinear"

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"dtype={self.dtype!r}, qscheme={self.weight().qscheme()!r}"
        )

    def forward(self, x):
        return linear_dynamic(x, self.packed_weight(), reduce_range=True)

    def packed_weight(self) -> PackedLinearWeight:
        """The weight ready for the product, packed once per weight (.to(device) replaces
        the buffers, through Module._apply)."""
        packed = self.__dict__.get("_packed")
        w, b = self._buffers["_qweight"], self._buffers["_qbias"]
        if packed is None or packed.weight is not w or packed.bias is not b:
            packed = PackedLinearWeight(w, b)
            self.__dict__["_packed"] = packed
        return packed

    def weight(self):
        return self._buffers["_qweight"]

    def bias(self):
        return self._buffers["_qbias"]

    def set_weight_bias(self, w, b) -> None:
        # buffers (not saved by Module.state_dict: state_dict below writes torch's keys), so
        # that .to(device) / .cuda() move them with the module
        self.register_buffer("_qweight", w, persistent=False)
        self.register_buffer("_qbias", b, persistent=False)
        self.__dict__["_packed"] = PackedLinearWeight(w, b)

    def state_dict(self, *, destination=None, prefix: str = "", keep_vars: bool = False):
        """torch's keys: scale, zero_point, _packed_params.dtype, and
        _packed_params._packed_params = (weight, bias)."""
        out = OrderedDict() if destination is None else destination
        out[prefix + "scale"] = gt.tensor(1.0)
        out[prefix + "zero_point"] = gt.tensor(0)
        out[prefix + "_packed_params.dtype"] = self.dtype
        out[prefix + "_packed_params._packed_params"] = (self._packed.weight, self._packed.bias)
        return out

    @classmethod
    def from_float(cls, mod, qconfig=None, dtype=gt.qint8):
        """The dynamic quantized form of the float nn.Linear `mod`: its weight observed by
        the qconfig's weight observer and quantized per tensor (or per channel)."""
        if qconfig is None:
            from gpu_tensor.ao.quantization import default_dynamic_qconfig as qconfig
        observer = qconfig.weight()
        w = mod.weight.detach().float()
        observer(w)
        scale, zp = observer.calculate_qparams()
        if scale.numel() == 1 and observer.qscheme in (per_tensor_affine, per_tensor_symmetric):
            qw = quantize_per_tensor(w, float(scale), int(zp), gt.qint8)
        else:
            qw = quantize_per_channel(w, scale.to(gt.float64), zp.to(gt.int64), 0, gt.qint8)
        bias = None if mod.bias is None else mod.bias.detach().float()
        q = cls(mod.in_features, mod.out_features, bias_=bias is not None, dtype=dtype)
        q.set_weight_bias(qw, bias)
        return q
