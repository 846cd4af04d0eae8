"""1-d pooling (max_pool1d, avg_pool1d, adaptive_avg_pool1d, adaptive_max_pool1d) over the
public 2-d pooling with a unit height, and adaptive_max_pool2d by torch's bins."""

from __future__ import annotations

import gpu_tensor as gt

from .conv import adaptive_avg_pool2d, avg_pool2d, max_pool2d

__all__ = [
    "max_pool1d",
    "avg_pool1d",
    "adaptive_avg_pool1d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
]


def _one(v, name):
    if isinstance(v, int):
        return v
    v = tuple(v)
    if len(v) != 1:
        raise RuntimeError(f"{name} must be an int or a 1-tuple, got {v}")
    return v[0]


def _check(input, name):
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"{name}: Expected 2D or 3D (batch mode) tensor for input, but got "
            f"input of size: {list(input.shape)}"
        )


def max_pool1d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    _check(input, "max_pool1d")
    k = _one(kernel_size, "kernel_size")
    s = (
        k
        if stride is None or (not isinstance(stride, int) and len(stride) == 0)
        else _one(stride, "stride")
    )
    out = max_pool2d(
        input.unsqueeze(-2),
        (1, k),
        (1, s),
        (0, _one(padding, "padding")),
        (1, _one(dilation, "dilation")),
        ceil_mode,
        return_indices,
    )
    if return_indices:
        return out[0].squeeze(-2), out[1].squeeze(-2)
    return out.squeeze(-2)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    _check(input, "avg_pool1d")
    k = _one(kernel_size, "kernel_size")
    s = (
        k
        if stride is None or (not isinstance(stride, int) and len(stride) == 0)
        else _one(stride, "stride")
    )
    return avg_pool2d(
        input.unsqueeze(-2),
        (1, k),
        (1, s),
        (0, _one(padding, "padding")),
        ceil_mode,
        count_include_pad,
    ).squeeze(-2)


def adaptive_avg_pool1d(input, output_size):
    _check(input, "adaptive_avg_pool1d")
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, _one(output_size, "output_size"))).squeeze(
        -2
    )


def _bins(n, m):
    """torch's adaptive bins: cell i covers floor(i n / m) .. ceil((i + 1) n / m)."""
    return [((i * n) // m, -(-((i + 1) * n) // m)) for i in range(m)]


def adaptive_max_pool2d(input, output_size, return_indices=False):
    if input.ndim not in (3, 4):
        raise RuntimeError(
            f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got {list(input.shape)}"
        )
    size = (output_size, output_size) if isinstance(output_size, int) else tuple(output_size)
    h, w = input.shape[-2], input.shape[-1]
    oh, ow = (h if size[0] is None else size[0]), (w if size[1] is None else size[1])
    rows, idx_rows = [], []
    for r0, r1 in _bins(h, oh):
        cells, cell_idx = [], []
        for c0, c1 in _bins(w, ow):
            win = input[..., r0:r1, c0:c1].flatten(-2)
            cells.append(win.amax(-1))
            if return_indices:
                k = win.argmax(-1)
                cell_idx.append(
                    (r0 + k.div(c1 - c0, rounding_mode="floor")) * w + c0 + k.remainder(c1 - c0)
                )
        rows.append(gt.stack(cells, -1))
        if return_indices:
            idx_rows.append(gt.stack(cell_idx, -1))
    out = gt.stack(rows, -2)
    return (out, gt.stack(idx_rows, -2)) if return_indices else out


def adaptive_max_pool1d(input, output_size, return_indices=False):
    _check(input, "adaptive_max_pool1d")
    out = adaptive_max_pool2d(
        input.unsqueeze(-2), (1, _one(output_size, "output_size")), return_indices
    )
    if return_indices:
        return out[0].squeeze(-2), out[1].squeeze(-2)
    return out.squeeze(-2)
