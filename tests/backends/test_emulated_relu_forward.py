"""relu's forward on emulated cuda computes into one allocator block (`_host_paths._host_relu`)
instead of a host array that adopt() copies in. Its bits are those of the function it
replaces, `fusion.npmath.relu` (both of its size branches: -0.0, NaN payloads, +-inf), its
layout and dtype are those it had, and results over PIECE elements or of a strided input keep
the general path (piece-sized host temporaries, numpy's layout)."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.backends.base import PIECE
from gpu_tensor.device import cuda_is_emulated
from gpu_tensor.fusion import npmath
from gpu_tensor.memory import registry, verify
from tests.backends.test_emulated_grad_paths import _allocated_after, _in_allocator

pytestmark = pytest.mark.skipif(not cuda_is_emulated(), reason="the emulated cuda device")

# NaNs of several payloads and signs (a signalling one too), by their bits
_NAN_BITS = {
    np.float32: (np.uint32, [0x7FC00001, 0xFFC00002, 0x7F800001, 0x7FFFFFFF]),
    np.float64: (np.uint64, [0x7FF8000000000001, 0xFFF8000000000002, 0x7FF0000000000001]),
}


def _values(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind != "f":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    a = np.asarray(rng.standard_normal(shape)).astype(dtype)
    flat = a.reshape(-1)
    uint, nans = _NAN_BITS[dtype]
    for i, v in enumerate([-0.0, 0.0, np.inf, -np.inf] + [uint(b).view(dtype) for b in nans]):
        flat[i :: 9 + i] = v
    return a


@pytest.mark.parametrize(
    "dtype", [np.float32, np.float64, np.int8, np.uint8, np.int16, np.int32, np.int64]
)
@pytest.mark.parametrize(
    "shape",
    [(), (0, 4), (7,), (31, 32), (32, 32), (3, 5, 70), (256, 256), (257, 256)],
)
def test_relu_has_npmaths_bits_in_one_block(dtype, shape):
    a = _values(shape, dtype)
    x = gt.from_numpy(a).to("cuda")
    with gt.no_grad():
        r, n = _allocated_after(lambda: gt.relu(x))
    expected = npmath.relu(a)  # the function the general path runs
    got = r.cpu().numpy()
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert got.tobytes() == expected.tobytes()
    assert r.stride() == gt.empty(shape).stride()  # torch's contiguous strides, as before
    assert n == 1  # the result's block alone, over PIECE elements too
    assert not r.numel() or _in_allocator(r)
    verify.check(registry.find(0))


def test_a_strided_input_keeps_numpys_layout_and_bits():
    a = _values((40, 30), np.float32)
    x = gt.from_numpy(a).to("cuda").t()
    r = gt.relu(x)
    assert r.stride() == gt.relu(gt.from_numpy(a).t()).stride()
    assert r.cpu().numpy().tobytes() == npmath.relu(a.T).tobytes()


def test_a_large_relu_fills_by_pieces(monkeypatch):
    backend = gt.empty(1, device="cuda")._backend
    calls = []
    fill = type(backend)._fill

    def counted(self, *args, **kwargs):
        calls.append(1)
        return fill(self, *args, **kwargs)

    monkeypatch.setattr(type(backend), "_fill", counted)
    a = _values((PIECE + 1,), np.float32)
    assert gt.relu(gt.from_numpy(a).to("cuda")).cpu().numpy().tobytes() == (
        npmath.relu(a).tobytes()
    )
    assert calls == [1]
    gt.relu(gt.from_numpy(a[:PIECE]).to("cuda"))
    assert calls == [1]  # up to PIECE elements: straight into the block
