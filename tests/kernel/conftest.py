"""Copy-kernel test cases shared by the emulated (CPU) and the real-GPU tests.

A case is (dst_base, dst_index, src): the destination is a view ``dst_base[dst_index]`` of a
larger buffer, so a kernel that writes outside its view is caught by comparing the whole
buffer with numpy's result.
"""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest

BF16 = np.dtype(ml_dtypes.bfloat16)
UNSIGNED = ("u", "b")
MAX_ELEMENTS = 6000  # per random case; keeps the emulated tests to seconds on 2 cores


def values(dtype, shape, rng, nonneg=False):
    """Random values exactly representable in every dtype a test casts them to."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    lo = 0 if nonneg else -50
    if dtype == np.bool_:
        out = rng.random(n) < 0.5
    elif dtype.kind in "iu":
        out = rng.integers(0 if dtype.kind == "u" or nonneg else -50, 100, n)
    else:
        # multiples of 1/8 in [lo, 100): exact in fp16/bf16? bf16 has 8 bits of mantissa, so
        # keep them to 1/2 steps under 128 -> exact everywhere, and casts to ints truncate alike.
        out = rng.integers(2 * lo, 200, n) / 2.0
        if dtype.kind == "c":
            out = out + 1j * (rng.integers(-100, 100, n) / 2.0)
    return np.asarray(out).astype(dtype).reshape(shape)


def expected_after(dst_base, dst_index, src):
    ref = dst_base.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # complex -> real drops the imaginary part, as intended
        np.copyto(ref[dst_index], src, casting="unsafe")
    return ref


def same_bits(a, b) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _slicer(rng, n):
    """A random slice of a dim of length n and the resulting length."""
    kind = rng.integers(0, 4)
    if kind == 0 or n < 3:
        return slice(None), n
    if kind == 1:  # step
        step = int(rng.integers(2, 4))
        return slice(None, None, step), len(range(0, n, step))
    if kind == 2:  # narrowed (offset start, shorter)
        a = int(rng.integers(1, max(2, n // 3)))
        return slice(a, n), n - a
    return slice(None, None, -1), n  # reversed: negative stride


def random_case(rng, dst_dtype, src_dtype, max_dim=40):
    """(dst_base, dst_index, src) with random shape, permutation, slicing and broadcasting."""
    ndim = int(rng.integers(1, 5))
    shape = [int(rng.integers(1, max_dim)) for _ in range(ndim)]
    if rng.random() < 0.4 and ndim >= 2:  # make a tileable transpose likely
        shape[-1] = int(rng.integers(16, 70))
        shape[-2] = int(rng.integers(16, 70))
        if rng.random() < 0.5:  # multiples of 4: the vector-tile transpose's condition
            shape[-1], shape[-2] = 4 * (shape[-1] // 4), 4 * (shape[-2] // 4)
    # Bound the work: emulated tiles cost a few barrier rounds of 256 OS threads each.
    while int(np.prod(shape)) > MAX_ELEMENTS:
        k = int(np.argmax(shape[:-2] or shape))
        shape[k] = max(1, shape[k] // 2)
    # source: a permuted, sliced view of a bigger buffer, maybe broadcast in some dims
    perm = rng.permutation(ndim)
    full = []
    for d in range(ndim):
        n = shape[d]
        extra = int(rng.integers(0, 3)) * (4 if rng.random() < 0.5 else 1)
        full.append(n + extra)
    src_buf = values(
        src_dtype, [full[p] for p in perm], rng, nonneg=np.dtype(dst_dtype).kind in UNSIGNED
    )
    src = src_buf.transpose(np.argsort(perm))
    index = []
    for d in range(ndim):
        index.append(
            slice(0, shape[d]) if rng.random() < 0.6 else slice(full[d] - shape[d], full[d])
        )
    src = src[tuple(index)]
    if rng.random() < 0.3:
        sl, _ = _slicer(rng, shape[-1])
        if sl.step == -1:
            src = src[..., ::-1]
    if rng.random() < 0.25:  # broadcast one dim
        d = int(rng.integers(0, ndim))
        src = np.broadcast_to(src[(slice(None),) * d + (slice(0, 1),)], src.shape)
    # destination: contiguous, or a strided window of a bigger buffer
    if rng.random() < 0.6:
        dst_base = values(dst_dtype, shape, rng)
        dst_index = (Ellipsis,)
    else:
        big = [n + int(rng.integers(0, 3)) for n in shape]
        dst_base = values(dst_dtype, big, rng)
        dst_index = tuple(
            slice(b - n, b) if rng.random() < 0.5 else slice(0, n)
            for b, n in zip(big, shape, strict=True)
        )
    return dst_base, dst_index, src


@pytest.fixture
def copy_cases():
    """The helpers above, for test modules (no sibling imports under importlib mode)."""

    class Cases:
        pass

    c = Cases()
    c.values, c.expected_after, c.same_bits, c.random_case = (
        values,
        expected_after,
        same_bits,
        random_case,
    )
    c.BF16, c.UNSIGNED = BF16, UNSIGNED
    return c


F32, F16 = np.dtype(np.float32), np.dtype(np.float16)


def _contig(dtype, shape, seed=0):
    return values(dtype, shape, np.random.default_rng(seed))


def _misaligned(dtype, shape, offset):
    """A C-contiguous array whose data starts `offset` bytes past an aligned address."""
    dtype = np.dtype(dtype)
    raw = np.zeros(int(np.prod(shape)) * dtype.itemsize + 16, np.uint8)
    out = raw[offset : offset + int(np.prod(shape)) * dtype.itemsize].view(dtype).reshape(shape)
    out[...] = _contig(dtype, shape)
    return out


# (name, expected path, dst dtype, make src) -- every kernel path on purpose
# fmt: off
PATH_CASES = [
    ("contiguous", "memcpy", F32, lambda: _contig(F32, (33, 17))),
    ("contiguous cast", "flat", F16, lambda: _contig(F32, (1001,))),
    ("transpose 2d", "transpose", F32, lambda: _contig(F32, (70, 45)).T),
    ("transpose 2d fp16", "transpose", F16, lambda: _contig(F16, (64, 96)).T),
    ("transpose + cast", "transpose", F16, lambda: _contig(F32, (50, 40)).T),
    ("vector transpose fp32", "transpose", F32, lambda: _contig(F32, (96, 200)).T),
    ("vector transpose fp16", "transpose", F16, lambda: _contig(F16, (136, 64)).T),
    ("vector transpose uint8", "transpose", np.dtype(np.uint8), lambda: _contig(np.uint8, (132, 260)).T),
    ("vector batched (0,2,1) int16", "transpose", np.dtype(np.int16), lambda: _contig(np.int16, (3, 40, 36)).transpose(0, 2, 1)),
    ("vector NCHW->NHWC", "transpose", F32, lambda: _contig(F32, (2, 32, 6, 6)).transpose(0, 2, 3, 1)),
    ("batched (0,2,1)", "transpose", F32, lambda: _contig(F32, (3, 40, 33)).transpose(0, 2, 1)),
    ("NCHW->NHWC", "transpose", F32, lambda: _contig(F32, (2, 24, 9, 7)).transpose(0, 2, 3, 1)),
    ("NHWC->NCHW", "transpose", F32, lambda: _contig(F32, (2, 9, 7, 24)).transpose(0, 3, 1, 2)),
    ("general 4d perm", "transpose", F32, lambda: _contig(F32, (6, 24, 20, 18)).transpose(1, 3, 0, 2)),
    ("step slice", "nd", F32, lambda: _contig(F32, (40, 50))[:, ::2]),
    ("narrowed inner", "vectorized", F32, lambda: _contig(F32, (30, 64))[:, :32]),
    ("narrowed inner cast", "vectorized", F16, lambda: _contig(F32, (30, 64))[:, 8:40]),
    ("expanded row", "vectorized", F32, lambda: np.broadcast_to(_contig(F32, (1, 64)), (40, 64))),
    ("expanded column", "nd", F32, lambda: np.broadcast_to(_contig(F32, (40, 1)), (40, 64))),
    ("reversed", "nd", F32, lambda: _contig(F32, (30, 20))[::-1, ::-1]),
    ("skinny transpose", "nd", F32, lambda: _contig(F32, (500, 4)).T),
    ("bytes of complex128", "nd", np.dtype(np.complex128), lambda: _contig(np.complex128, (20, 30)).T[::2]),
    ("misaligned float32 transpose (2-byte units)", "nd", F32, lambda: _misaligned(F32, (40, 36), 2).T),
    ("uint32 -> int64 (no kernel cast)", "fallback", np.dtype(np.int64), lambda: _contig(np.uint32, (10, 12)).T),
    ("10-d (host loops)", "nd", F32, lambda: _contig(F32, (2,) * 10).transpose(9, 8, 7, 6, 5, 4, 3, 2, 1, 0)[..., ::-1]),
]
# fmt: on


def pytest_generate_tests(metafunc):
    if "path_case" in metafunc.fixturenames:
        metafunc.parametrize("path_case", PATH_CASES, ids=[c[0] for c in PATH_CASES])
