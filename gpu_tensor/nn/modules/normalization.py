"""LayerNorm and BatchNorm1d/2d (running statistics in buffers, torch's momentum rule)."""

from __future__ import annotations

import gpu_tensor as gt

from .. import functional as F
from ..module import Module
from ..parameter import Parameter

__all__ = ["LayerNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]


class LayerNorm(Module):
    def __init__(
        self,
        normalized_shape,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else normalized_shape
        self.normalized_shape = tuple(shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(gt.ones(self.normalized_shape, device=device, dtype=dtype))
            self.bias = (
                Parameter(gt.zeros(self.normalized_shape, device=device, dtype=dtype))
                if bias
                else None
            )
        else:
            self.weight = self.bias = None

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )


class _NormBase(Module):
    """What batch and instance norms share: the constructor (torch's BatchNorm defaults;
    InstanceNorm's own signature passes its own), the running-stat buffers and the repr."""

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        kw = {"device": device, "dtype": dtype}
        self.weight = Parameter(gt.ones(num_features, **kw)) if affine else None
        self.bias = Parameter(gt.zeros(num_features, **kw)) if affine and bias else None
        if track_running_stats:
            self.register_buffer("running_mean", gt.zeros(num_features, **kw))
            self.register_buffer("running_var", gt.ones(num_features, **kw))
            self.register_buffer("num_batches_tracked", gt.tensor(0, device=device))
        else:
            self.running_mean = self.running_var = self.num_batches_tracked = None

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            with gt.no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )


class _BatchNorm(_NormBase):
    _dims: tuple  # the input ranks the subclass accepts

    def forward(self, input):
        if input.ndim not in self._dims:
            raise ValueError(
                f"expected {' or '.join(f'{d}D' for d in self._dims)} input "
                f"(got {input.ndim}D input)"
            )
        if input.shape[1] != self.num_features:
            raise RuntimeError(
                f"running_mean should contain {input.shape[1]} elements not {self.num_features}"
            )
        use_batch = self.training or not self.track_running_stats
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with gt.no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # the cumulative average over the batches seen
                momentum = 1.0 / int(self.num_batches_tracked.item())
        update = self.training and self.track_running_stats
        return F.batch_norm(
            input,
            self.running_mean if update or not use_batch else None,
            self.running_var if update or not use_batch else None,
            self.weight,
            self.bias,
            use_batch,
            momentum,
            self.eps,
        )


class BatchNorm1d(_BatchNorm):
    """Over (N, C) or (N, C, L) input, per channel C."""

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Over (N, C, H, W) input, per channel C."""

    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Over (N, C, D, H, W) input, per channel C."""

    _dims = (5,)
