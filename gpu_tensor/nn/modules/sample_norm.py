"""The normalisations whose statistics are taken per sample: GroupNorm, InstanceNorm1d/2d/3d
and RMSNorm, with torch's defaults (InstanceNorm: affine=False, track_running_stats=False;
RMSNorm: eps=None, the dtype's machine epsilon) and reprs."""

from __future__ import annotations

import warnings

import gpu_tensor as gt

from ..functional.normalization import group_norm, instance_norm, rms_norm
from ..module import Module
from ..parameter import Parameter
from .normalization import _NormBase

__all__ = ["GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "RMSNorm"]


class GroupNorm(Module):
    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(
                f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})"
            )
        self.num_groups, self.num_channels, self.eps, self.affine = (
            num_groups,
            num_channels,
            eps,
            affine,
        )
        kw = {"device": device, "dtype": dtype}
        self.weight = Parameter(gt.ones(num_channels, **kw)) if affine else None
        self.bias = Parameter(gt.zeros(num_channels, **kw)) if affine and bias else None

    def forward(self, input):
        return group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.bias is not None}"
        )


class _InstanceNorm(_NormBase):
    _ndim = 2  # the unbatched input rank (batched: one more)

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ):
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )

    def forward(self, input):
        nd = self._ndim
        if input.ndim not in (nd, nd + 1):
            raise ValueError(f"expected {nd}D or {nd + 1}D input (got {input.ndim}D input)")
        feature_dim = input.ndim - nd
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(
                    f"expected input's size at dim={feature_dim} to match "
                    f"num_features ({self.num_features}), but got: "
                    f"{input.shape[feature_dim]}."
                )
            warnings.warn(
                f"input's size at dim={feature_dim} does not match num_features. You "
                "can silence this warning by not passing in num_features, which is "
                "not used because affine=False",
                stacklevel=2,
            )
        unbatched = input.ndim == nd
        x = input.unsqueeze(0) if unbatched else input
        use_input_stats = self.training or not self.track_running_stats
        momentum = self.momentum if self.momentum is not None else 0.0
        if use_input_stats and self.track_running_stats and self.training:
            with gt.no_grad():
                self.num_batches_tracked.add_(1)
        out = instance_norm(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            use_input_stats,
            momentum,
            self.eps,
        )
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Over (N, C, L) or (C, L) input."""

    _ndim = 2


class InstanceNorm2d(_InstanceNorm):
    """Over (N, C, H, W) or (C, H, W) input."""

    _ndim = 3


class InstanceNorm3d(_InstanceNorm):
    """Over (N, C, D, H, W) or (C, D, H, W) input."""

    _ndim = 4


class RMSNorm(Module):
    def __init__(
        self, normalized_shape, eps=None, elementwise_affine: bool = True, device=None, dtype=None
    ):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else normalized_shape
        self.normalized_shape = tuple(shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.weight = (
            Parameter(gt.ones(self.normalized_shape, device=device, dtype=dtype))
            if elementwise_affine
            else None
        )

    def forward(self, x):
        return rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )
