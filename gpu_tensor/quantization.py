"""gpu_tensor.quantization: torch.quantization's old name for gpu_tensor.ao.quantization."""

from .ao.quantization import *  # noqa: F403
from .ao.quantization import __all__  # noqa: F401
