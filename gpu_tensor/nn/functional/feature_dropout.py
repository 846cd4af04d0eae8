"""Channel-wise dropout (dropout1d/2d/3d: whole feature maps zeroed together) and
alpha_dropout. Element-wise dropout lives in basic.py."""

from __future__ import annotations

import warnings

import gpu_tensor as gt

__all__ = ["dropout1d", "dropout2d", "dropout3d", "feature_dropout", "alpha_dropout"]


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def feature_dropout(input, p, training, inplace, batched):
    """Zero each (sample, channel) map with probability p, scale the rest by 1/(1-p)."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    lead = 2 if batched else 1
    shape = tuple(input.shape[:lead]) + (1,) * (input.ndim - lead)
    if p == 1.0:
        out = input * 0.0
    else:
        keep = gt.rand(shape, device=input.device) >= p
        out = input * keep.to(input.dtype) / (1.0 - p)
    return input.copy_(out) if inplace else out


def _feature(input, p, training, inplace, n):
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(
            f"dropout{n}d: Expected {n + 1}D or {n + 2}D input, but received a "
            f"{input.ndim}D input. Note that dropout{n}d exists to provide "
            f"channel-wise dropout on inputs with {n} spatial dimensions, a "
            "channel dimension, and an optional batch dimension (i.e. "
            f"{n + 1}D or {n + 2}D inputs)."
        )
    return feature_dropout(input, p, training, inplace, input.ndim == n + 2)


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _feature(input, p, training, inplace, 1)


def dropout2d(input, p=0.5, training=True, inplace=False):
    if input.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
            "1D dropout behavior is desired - input is interpreted as shape (N, C, L), "
            "where C is the channel dim. This behavior will change in a future release "
            "to interpret the input as one without a batch dimension, i.e. shape (C, H, "
            "W). To maintain the 1D channel-wise dropout behavior, please switch to "
            "using dropout1d instead.",
            UserWarning,
            stacklevel=2,
        )
        return feature_dropout(input, p, training, inplace, True)
    return _feature(input, p, training, inplace, 2)


def dropout3d(input, p=0.5, training=True, inplace=False):
    return _feature(input, p, training, inplace, 3)


_ALPHA = 1.6732632423543772  # SELU's alpha and scale: the values alpha dropout keeps the
_SCALE = 1.0507009873554805  # mean and variance of SELU activations for


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropped elements set to SELU's negative saturation, then an affine map that keeps
    zero mean and unit variance."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    sat = -_ALPHA * _SCALE
    a = ((1 - p) * (1 + p * sat * sat)) ** -0.5
    keep = (gt.rand(tuple(input.shape), device=input.device) >= p).to(input.dtype)
    out = (input * keep + sat * (1 - keep)) * a + (-a * sat * p)
    return input.copy_(out) if inplace else out
