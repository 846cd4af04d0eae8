"""quantize_dynamic: swap a model's Linear layers for dynamic quantized ones (int8 weights
now, activations quantized on the fly at each call), as torch.ao.quantization does."""

from __future__ import annotations

import copy
import warnings

import gpu_tensor as gt
from gpu_tensor import nn

from .qconfig import QConfig, default_dynamic_qconfig

__all__ = ["quantize_dynamic", "DEPRECATION_WARNING"]

# torch 2.13's text (torch/ao/quantization/utils.py), word for word; torch raises it as a
# DeprecationWarning from quantize_dynamic (and again from the convert it calls).
DEPRECATION_WARNING = (
    "torch.ao.quantization is deprecated and will be removed in 2.10. \n"
    "For migrations of users: \n"
    "1. Eager mode quantization (torch.ao.quantization.quantize, "
    "torch.ao.quantization.quantize_dynamic), please migrate to use torchao eager mode "
    "quantize_ API instead \n"
    "2. FX graph mode quantization (torch.ao.quantization.quantize_fx.prepare_fx,"
    "torch.ao.quantization.quantize_fx.convert_fx, please migrate to use torchao pt2e "
    "quantization API instead (prepare_pt2e, convert_pt2e) \n"
    "3. pt2e quantization has been migrated to torchao "
    "(https://github.com/pytorch/ao/tree/main/torchao/quantization/pt2e) \n"
    "see https://github.com/pytorch/ao/issues/2259 for more details"
)


def _qconfig_for(spec, dtype):
    """{module type or name: QConfig} from torch's set / dict forms."""
    if isinstance(spec, dict):
        return dict(spec)
    if dtype is gt.qint8:
        default = default_dynamic_qconfig
    else:
        raise ValueError(
            f"Don't know how to get default qconfig for dynamic quantization "
            f"with dtype {dtype} (gpu_tensor quantizes dynamically to qint8)"
        )
    return dict.fromkeys(spec, default)


def _lookup(config, name, module):
    if name in config:
        return config[name]
    for key, qc in config.items():
        if isinstance(key, type) and type(module) is key:
            return qc
    return None


def _swap(module, config, prefix, dtype):
    from ..nn.quantized.dynamic import Linear as DynamicLinear

    for name, child in list(module._modules.items()):
        if child is None:
            continue
        full = f"{prefix}{name}"
        qc = _lookup(config, full, child)
        if qc is not None and type(child) is nn.Linear:
            if not isinstance(qc, QConfig):
                raise TypeError(f"qconfig for {full!r} must be a QConfig, got {type(qc).__name__}")
            module._modules[name] = DynamicLinear.from_float(child, qc, dtype)
        else:
            _swap(child, config, full + ".", dtype)


def quantize_dynamic(model, qconfig_spec=None, dtype=gt.qint8, mapping=None, inplace=False):
    """A copy of `model` (or `model` itself with inplace=True) whose nn.Linear layers (those
    named in `qconfig_spec`: a set of types/names, or a dict to QConfigs) are dynamic
    quantized Linears: int8 weights (per tensor, or per channel with
    per_channel_dynamic_qconfig), activations quantized per call, int32 accumulation."""
    warnings.warn(DEPRECATION_WARNING, DeprecationWarning, stacklevel=2)
    if dtype is not gt.qint8:
        raise ValueError(f"gpu_tensor's dynamic quantization takes dtype=qint8, got {dtype}")
    config = _qconfig_for({nn.Linear} if qconfig_spec is None else qconfig_spec, dtype)
    if not inplace:
        model = copy.deepcopy(model)
    top = _lookup(config, "", model)
    if top is not None and type(model) is nn.Linear:
        from ..nn.quantized.dynamic import Linear as DynamicLinear

        return DynamicLinear.from_float(model, top, dtype)
    _swap(model, config, "", dtype)
    return model
