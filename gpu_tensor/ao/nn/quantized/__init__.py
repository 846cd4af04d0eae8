"""gpu_tensor.ao.nn.quantized: `dynamic.Linear`, the dynamic quantized Linear."""

from . import dynamic

__all__ = ["dynamic"]
