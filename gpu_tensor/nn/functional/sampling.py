"""interpolate (nearest, nearest-exact, linear/bilinear/trilinear with or without
align_corners, area), pixel_shuffle and pixel_unshuffle.

Resampling is separable: each spatial dim in turn gathers source rows with index_select
(nearest) or blends two gathered rows (linear), so autograd comes from those ops. The source
positions are computed on the host with torch's coordinate rules, once per dim.
"""

from __future__ import annotations

import math

import numpy as np

import gpu_tensor as gt

__all__ = ["interpolate", "upsample", "pixel_shuffle", "pixel_unshuffle"]

_LINEAR = {"linear": 3, "bilinear": 4, "trilinear": 5}


def _sizes(input, size, scale_factor, recompute_scale_factor):
    """Output spatial sizes and the per-dim scale torch uses for coordinates (None: in/out)."""
    nd = input.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        out = [int(size)] * nd if isinstance(size, (int, float)) else [int(s) for s in size]
        if len(out) != nd:
            raise ValueError(
                f"Input and output must have the same number of spatial "
                f"dimensions, but got input with spatial dimensions of "
                f"{list(input.shape[2:])} and output size of {out}. Please provide "
                "input tensor in (N, C, d1, d2, ...,dK) format and output size in "
                "(o1, o2, ...,oK) format."
            )
        return out, [None] * nd
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    scales = (
        [float(scale_factor)] * nd
        if isinstance(scale_factor, (int, float))
        else [float(s) for s in scale_factor]
    )
    if len(scales) != nd:
        raise ValueError(
            f"Input and scale_factor must have the same number of spatial "
            f"dimensions, but got input with spatial dimensions of "
            f"{list(input.shape[2:])} and scale_factor of shape {scales}."
        )
    out = [int(math.floor(n * s)) for n, s in zip(input.shape[2:], scales, strict=True)]
    if recompute_scale_factor:
        return out, [None] * nd
    return out, scales


def _scale(n_in, n_out, scale):
    return 1.0 / scale if scale is not None and scale > 0 else n_in / n_out


def _nearest(x, dim, n_out, scale, exact):
    n_in = x.shape[dim]
    s = _scale(n_in, n_out, scale)
    pos = np.arange(n_out, dtype=np.float64)
    # torch computes these in float32
    src = np.floor(((pos + 0.5) if exact else pos).astype(np.float32) * np.float32(s))
    idx = np.minimum(src.astype(np.int64), n_in - 1)
    return x.index_select(dim, gt.tensor(idx, device=x.device))


def _linear(x, dim, n_out, scale, align_corners):
    n_in = x.shape[dim]
    pos = np.arange(n_out, dtype=np.float32)
    if align_corners:
        s = np.float32((n_in - 1) / (n_out - 1)) if n_out > 1 else np.float32(0)
        src = pos * s
    else:
        s = np.float32(_scale(n_in, n_out, scale))
        src = np.maximum((pos + np.float32(0.5)) * s - np.float32(0.5), 0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    lam = (src - i0).astype(np.float32)
    shape = [1] * x.ndim
    shape[dim] = n_out
    w1 = gt.tensor(lam.reshape(shape), dtype=x.dtype, device=x.device)
    a = x.index_select(dim, gt.tensor(i0, device=x.device))
    b = x.index_select(dim, gt.tensor(i1, device=x.device))
    return a + (b - a) * w1


def interpolate(
    input,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    recompute_scale_factor=None,
    antialias=False,
):
    if mode in ("nearest", "nearest-exact", "area") and align_corners is not None:
        raise ValueError(
            "align_corners option can only be set with the interpolating modes: "
            "linear | bilinear | bicubic | trilinear"
        )
    if mode in _LINEAR and input.ndim != _LINEAR[mode]:
        raise NotImplementedError(
            f"Got {input.ndim}D input, but {mode} mode needs {_LINEAR[mode]}D input"
        )
    if mode not in ("nearest", "nearest-exact", "area", *_LINEAR):
        raise NotImplementedError(
            f"interpolate: mode {mode!r} is not supported in gpu_tensor "
            "(supported: nearest, nearest-exact, linear, bilinear, "
            "trilinear, area)"
        )
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported in gpu_tensor")
    if input.ndim < 3:
        raise ValueError(
            f"interpolate: expected an (N, C, ...) input with at least 3 dims, got {input.ndim}"
        )
    out_sizes, scales = _sizes(input, size, scale_factor, recompute_scale_factor)
    if mode == "area":
        return _area(input, out_sizes)
    x = input
    for k, (n_out, s) in enumerate(zip(out_sizes, scales, strict=True)):
        if n_out <= 0:
            raise RuntimeError(
                f"Input and output sizes should be greater than 0, but got "
                f"input {list(input.shape[2:])} and output {out_sizes}"
            )
        if mode in _LINEAR:
            x = _linear(x, 2 + k, n_out, s, bool(align_corners))
        else:
            x = _nearest(x, 2 + k, n_out, s, mode == "nearest-exact")
    return x


def _area(input, out_sizes):
    from .conv import adaptive_avg_pool2d

    if input.ndim == 3:
        return adaptive_avg_pool2d(input.unsqueeze(2), (1, out_sizes[0])).squeeze(2)
    if input.ndim == 4:
        return adaptive_avg_pool2d(input, tuple(out_sizes))
    raise NotImplementedError("interpolate: mode 'area' supports 3-D and 4-D input in gpu_tensor")


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


def _check_3d(input, fn):
    if input.ndim < 3:
        raise RuntimeError(
            f"{fn} expects input to have at least 3 dimensions, but got input with "
            f"{input.ndim} dimension(s)"
        )


def pixel_shuffle(input, upscale_factor):
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""
    r = int(upscale_factor)
    _check_3d(input, "pixel_shuffle")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(
            f"pixel_shuffle expects its input's 'channel' dimension to be "
            f"divisible by the square of upscale_factor, but input.size(-3)={c} "
            f"is not divisible by {r * r}"
        )
    n = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H r, W r) -> (*, C r^2, H, W)."""
    r = int(downscale_factor)
    _check_3d(input, "pixel_unshuffle")
    *lead, c, h, w = input.shape
    if h % r or w % r:
        which = ("height", -2, h) if h % r else ("width", -1, w)
        raise RuntimeError(
            f"pixel_unshuffle expects {which[0]} to be divisible by "
            f"downscale_factor, but input.size({which[1]})={which[2]} is not "
            f"divisible by {r}"
        )
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)
