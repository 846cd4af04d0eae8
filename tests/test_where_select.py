"""The numpy function of the `where` row (`fusion/npmath.where`) selects a large
float32/float64 array against a +0.0 scalar by masking its bits (relu's cpu backward: g where
not out <= 0); it must give np.where's values bit for bit (NaN payloads, -0.0, infinities) and
np.where's layout (downstream reductions sum in memory order), and leave every other call
to np.where."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.fusion import npmath


def _bits(a):
    return np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}")


def _special(rng, shape, dtype):
    a = rng.standard_normal(shape).astype(dtype)
    flat = a.reshape(-1)
    flat[::7] = np.nan
    flat[::11] = -0.0
    flat[::13] = -np.inf
    flat[::17] = np.inf
    flat[5::19] = np.frombuffer(  # a NaN with a payload
        np.array([0x7FC01234 if dtype == np.float32 else 0x7FF8000000001234], f"u{flat.itemsize}"),
        dtype,
    )[0]
    return a


SHAPES = [(8, 4, 16, 16), (2, 1, 64, 64), (1, 5000), (64, 64, 2)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_the_bit_select_is_np_where_in_values_and_layout(shape, dtype):
    rng = np.random.default_rng(0)
    orders = [tuple(range(len(shape))), tuple(reversed(range(len(shape))))]
    orders += [tuple(p) for p in itertools.islice(itertools.permutations(range(len(shape))), 4)]
    for px, pc in itertools.product(orders, orders):
        x = _special(rng, [shape[i] for i in px], dtype).transpose(np.argsort(px))
        c = rng.standard_normal([shape[i] for i in pc]) > 0
        c = c.transpose(np.argsort(pc))
        for zero in (dtype(0.0), np.asarray(0.0, dtype)[()]):
            ref, got = np.where(c, x, zero), npmath.where(c, x, zero)
            assert got.dtype == ref.dtype and got.shape == ref.shape
            assert got.strides == ref.strides, (px, pc)
            assert np.array_equal(_bits(got), _bits(ref))


def test_other_selects_are_np_where():
    rng = np.random.default_rng(1)
    x = _special(rng, (64, 128), np.float32)
    c = rng.standard_normal((64, 128)) > 0
    cases = [
        (c, x, np.float32(-0.0)),  # -0.0 has a bit set: not a mask
        (c, x, np.float32(2.0)),
        (c, x, x[::-1]),
        (c[:1], x, np.float32(0.0)),  # broadcast condition
        (c[:8, :8], x[:8, :8], np.float32(0.0)),  # small
        (c, rng.integers(-5, 5, (64, 128)).astype(np.int32), np.int32(0)),
    ]
    for cond, a, b in cases:
        ref, got = np.where(cond, a, b), npmath.where(cond, a, b)
        assert got.dtype == ref.dtype and got.strides == ref.strides
        assert np.array_equal(_bits(got), _bits(ref))


def test_relu_backward_through_the_select(device):
    rng = np.random.default_rng(2)
    a = _special(rng, (4, 8, 32, 32), np.float32)
    g = _special(rng, (4, 32, 32, 8), np.float32)  # NHWC memory, as max_pool2d's gradient
    x = gt.from_numpy(a).to(device).requires_grad_(True)
    x.relu().backward(gt.from_numpy(g).to(device).permute(0, 3, 1, 2))
    # torch's threshold_backward: 0 where the input is <= 0, else g (so g where it is NaN)
    want = np.where(a <= 0, np.float32(0.0), g.transpose(0, 3, 1, 2))
    assert np.array_equal(_bits(x.grad.cpu().numpy()), _bits(want))
