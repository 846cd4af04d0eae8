"""`gt.utils`: helpers around the tensor API (input pipelines: `prefetch`, `data`)."""

from gpu_tensor.utils import data
from gpu_tensor.utils.prefetch import prefetch

__all__ = ["data", "prefetch"]
