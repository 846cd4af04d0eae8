"""gpu_tensor.ao, torch.ao's counterpart: `quantization` (observers, QConfig,
quantize_dynamic) and `nn.quantized.dynamic` (the dynamic quantized Linear)."""

from . import nn, quantization

__all__ = ["nn", "quantization"]
