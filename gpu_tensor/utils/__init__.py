"""`gt.utils`: helpers around the tensor API (input pipelines)."""

from gpu_tensor.utils.prefetch import prefetch

__all__ = ["prefetch"]
