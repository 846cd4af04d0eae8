"""torch.ao.quantization's eager dynamic-quantization surface: observers, QConfig,
quantize_dynamic, and the fake-quantize functions (from gpu_tensor.quantized)."""

from gpu_tensor.quantized import (
    fake_quantize_per_channel_affine,
    fake_quantize_per_tensor_affine,
)

from .observer import (
    MinMaxObserver,
    ObserverBase,
    PerChannelMinMaxObserver,
    PlaceholderObserver,
    default_dynamic_quant_observer,
    default_observer,
    default_per_channel_weight_observer,
    default_weight_observer,
)
from .qconfig import QConfig, default_dynamic_qconfig, default_qconfig, per_channel_dynamic_qconfig
from .quantize import quantize_dynamic

__all__ = [
    "MinMaxObserver",
    "PerChannelMinMaxObserver",
    "PlaceholderObserver",
    "ObserverBase",
    "default_observer",
    "default_weight_observer",
    "default_per_channel_weight_observer",
    "default_dynamic_quant_observer",
    "QConfig",
    "default_dynamic_qconfig",
    "default_qconfig",
    "per_channel_dynamic_qconfig",
    "quantize_dynamic",
    "fake_quantize_per_tensor_affine",
    "fake_quantize_per_channel_affine",
]
