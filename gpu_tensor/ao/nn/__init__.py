"""gpu_tensor.ao.nn: quantized modules (torch.ao.nn)."""

from . import quantized

__all__ = ["quantized"]
