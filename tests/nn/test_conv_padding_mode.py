"""Conv1d/Conv2d with padding_mode reflect, replicate or circular and a string padding.

padding='same' with a non-zeros padding_mode used to ignore the mode (it padded with zeros).
The reference is numpy's own padding (reflect, edge, wrap) and a sliding-window correlation,
independent of gpu_tensor; 'same' puts an odd pixel at the end, as torch does (checked against
torch 2.13 by hand for odd and even kernels and dilations)."""

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

import gpu_tensor as gt

NUMPY_MODE = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _reference(x, w, b, pads, dilation, mode):
    """Cross-correlation of x (N, C, *spatial) padded by `pads` ((lo, hi) per spatial dim)."""
    n = w.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0), *pads], mode=NUMPY_MODE[mode])
    span = tuple(dilation * (k - 1) + 1 for k in w.shape[2:])
    win = sliding_window_view(xp, span, axis=tuple(range(2, 2 + n)))
    win = win[(...,) + (slice(None, None, dilation),) * n]  # (N, C, *out, *kernel)
    spec = f"nc{'XY'[:n]}{'hw'[:n]},oc{'hw'[:n]}->no{'XY'[:n]}"
    return np.einsum(spec, win, w) + b.reshape((1, -1) + (1,) * n)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("padding", ["same", "valid"])
@pytest.mark.parametrize(
    "cls, shape, kernel, dilation",
    [
        ("Conv2d", (2, 2, 6, 7), 3, 1),
        ("Conv2d", (1, 2, 7, 6), 4, 1),  # even kernel: the odd pixel goes at the end
        ("Conv2d", (1, 2, 8, 8), 2, 3),
        ("Conv1d", (2, 2, 9), 3, 1),
        ("Conv1d", (1, 2, 9), 4, 2),
    ],
)
def test_string_padding_pads_by_the_mode(cls, shape, kernel, dilation, padding, mode, device):
    gt.manual_seed(0)
    conv = getattr(gt.nn, cls)(
        2, 3, kernel, padding=padding, padding_mode=mode, dilation=dilation
    ).to(device)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float64)
    got = conv.double()(gt.tensor(x, device=device)).detach().cpu().numpy()
    w = conv.weight.detach().cpu().numpy()
    b = conv.bias.detach().cpu().numpy()
    total = dilation * (kernel - 1) if padding == "same" else 0
    pads = [(total // 2, total - total // 2)] * (len(shape) - 2)
    want = _reference(x, w, b, pads, dilation, mode)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    if padding == "same":
        assert got.shape[2:] == x.shape[2:]
