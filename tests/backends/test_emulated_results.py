"""The emulated cuda device computes elementwise (ufunc) results straight into allocator
memory: an impossible result is the allocator's OutOfMemoryError before any host
temporary is made, the allocator accounts for every result byte, and results keep the
values and layout the cpu device (numpy) gives."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.cuda import memory as cmem
from gpu_tensor.device import cuda_is_emulated
from gpu_tensor.memory import registry, verify

pytestmark = pytest.mark.skipif(not cuda_is_emulated(), reason="the emulated cuda device")

MIB = 1 << 20


def _allocator():
    return registry.find(0)


def _host_peak(fn):
    """fn's result and the peak of the host memory numpy allocated meanwhile (numpy reports
    its buffers to tracemalloc; the allocator's segments are mmaps, which it does not)."""
    tracemalloc.start()
    try:
        r = fn()
        return r, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_impossible_elementwise_is_the_allocators_oom_and_leaves_it_consistent():
    x = gt.ones(2 ** 20, device="cuda")
    before = cmem.memory_allocated(0)
    ooms = cmem.memory_stats(0)["num_ooms"]
    with pytest.raises(gt.OutOfMemoryError, match="Tried to allocate 8192.00 TiB"):
        x.expand(2 ** 31, 2 ** 20) + 1  # 2**51 float32 elements: numpy would try, too
    with pytest.raises(gt.OutOfMemoryError, match="Tried to allocate"):
        gt.exp(x.expand(2 ** 31, 2 ** 20))
    assert cmem.memory_stats(0)["num_ooms"] == ooms + 2  # refused by the allocator itself
    assert cmem.memory_allocated(0) == before
    verify.check(_allocator())
    assert (x[:4] + 1).sum().item() == 8.0  # still usable


def test_result_over_the_cap_is_refused_before_numpy_allocates_it():
    """A 64 MiB result under a cap smaller than that: numpy could allocate it (host memory
    is plentiful), so the old path built it and only then failed to copy it in; now the
    allocator refuses first and no host buffer of that size ever exists."""
    x = gt.ones(1, 4 * MIB, device="cuda")  # 16 MiB
    capacity = cmem.mem_get_info(0)[1]
    old = cmem.get_per_process_memory_fraction(0)
    cmem.set_per_process_memory_fraction(48 * MIB / capacity, 0)
    try:
        before = cmem.memory_allocated(0)

        def huge():
            with pytest.raises(gt.OutOfMemoryError):
                x.expand(4, 4 * MIB) * 2  # 64 MiB
        _, peak = _host_peak(huge)
    finally:
        cmem.set_per_process_memory_fraction(old, 0)
    assert peak < MIB, f"numpy allocated {peak} bytes before the OOM"
    assert cmem.memory_allocated(0) == before
    verify.check(_allocator())


_OPS = {
    "contiguous": lambda a, b: a + b,
    "transposed": lambda a, b: a.t() * b.t(),
    "broadcast": lambda a, b: a[:, :1] - b[0],
    "mixed dtype": lambda a, b: a + b[0].to(gt.int32),
    "compare": lambda a, b: a < b,
    "unary": lambda a, b: gt.sqrt(b.t()),
    "half": lambda a, b: a.half() * b.half(),  # float32 compute, cast back: both in blocks
}


@pytest.mark.parametrize("case", list(_OPS))
def test_result_bytes_are_the_allocators_and_no_host_buffer_is_made(case):
    a = gt.ones(1024, 1024, device="cuda")  # 4 MiB each, multiples of the rounding
    b = gt.full((1024, 1024), 2.0, device="cuda")
    op = _OPS[case]
    op(a, b)  # warm: the first call of a dtype combination resolves it once
    before = cmem.memory_allocated(0)
    y, peak = _host_peak(lambda: op(a, b))
    nbytes = y.untyped_storage().nbytes()
    assert nbytes == y.numel() * y.element_size() >= MIB
    assert cmem.memory_allocated(0) - before == nbytes
    assert peak < nbytes // 4, f"host buffer of {peak} bytes for a {nbytes}-byte result"
    verify.check(_allocator())
    want = op(a.cpu(), b.cpu())
    assert y.stride() == want.stride() and y.dtype is want.dtype
    np.testing.assert_array_equal(y.cpu().numpy(), want.numpy())


def _layout_cases():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    return {
        "transposed": (lambda t: t.t() + 1, np.arange(12.0).reshape(3, 4)),
        "permuted": (lambda t: t.permute(2, 0, 1) * t.permute(2, 0, 1), x),
        "broadcast": (lambda t: t[:, :1] + t[0], np.arange(12.0).reshape(3, 4)),
        "broadcast transposed": (lambda t: t.t() + t[:, 0], np.arange(16.0).reshape(4, 4)),
        "expanded": (lambda t: t.expand(3, 4) - 1, np.arange(4.0).reshape(1, 4)),
        "sliced": (lambda t: t[:, ::2] > 2, np.arange(12.0).reshape(3, 4)),
        "flipped stride": (lambda t: t.permute(1, 0, 2)[:, :1] + 0.5, x),
        "size-1 dims": (lambda t: t.view(3, 1, 4).transpose(0, 2) * 3, np.arange(12.0)),
        "0-d": (lambda t: t + 2, np.float32(3.0)),
        "0-d with 2-d": (lambda t: t.sum() * t.t(), np.arange(6.0).reshape(2, 3)),
        "empty": (lambda t: t.t() * 2, np.ones((0, 3), np.float32)),
        "empty broadcast": (lambda t: t[:0] + t[0], np.ones((3, 4), np.float32)),
        "mixed dtype": (lambda t: t.t() + t.t().to(gt.int64), np.arange(6).reshape(2, 3)),
        "int with float scalar": (lambda t: t.t() * 2.5, np.arange(6).reshape(2, 3)),
        "bool": (lambda t: (t > 2).t() & (t < 5).t(), np.arange(6.0).reshape(2, 3)),
        "half": (lambda t: t.half().t() + 1, np.arange(6.0).reshape(2, 3)),
        "complex": (lambda t: t.to(gt.complex64).t() * 1j, np.arange(6.0).reshape(2, 3)),
    }


def _layout(t):
    """The strides of t's dims of size > 1. A size-1 dim's stride addresses nothing: numpy
    (cpu) leaves what its allocation gave, the emulated device has always set its own
    (adopt's order rule); the exact comparison with the old path is the test below.
    An empty tensor's strides address nothing either: compared by shape alone."""
    if not t.numel():
        return ()
    return tuple(s for s, n in zip(t.stride(), t.shape, strict=True) if n > 1)


@pytest.mark.parametrize("name", list(_layout_cases()))
def test_layout_and_values_match_cpu(name):
    fn, values = _layout_cases()[name]
    src = gt.tensor(values)
    want = fn(src)
    got = fn(src.cuda())
    assert got.device.type == "cuda" and got.dtype is want.dtype
    assert got.shape == want.shape and _layout(got) == _layout(want), name
    np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())


def test_every_layout_matches_numpys_own_allocation():
    """Random strided, permuted, flipped and broadcast operands of several dtypes: the
    result planned into allocator memory equals (values, dtype, layout) what numpy
    allocates itself and adopt() copied in before (the old path)."""
    from gpu_tensor.backends import get_backend

    bk = get_backend(gt.device("cuda"))
    rng = np.random.default_rng(18)
    ufuncs = [np.add, np.multiply, np.greater, np.exp, np.maximum, np.logical_and,
              np.negative, np.true_divide]
    dtypes = [np.float32, np.float64, np.int32, np.int64, np.bool_, np.float16]
    checked = 0
    for _ in range(600):
        shape = [int(rng.choice([1, 1, 2, 3, 4])) for _ in range(int(rng.integers(0, 5)))]
        fn = ufuncs[rng.integers(len(ufuncs))]
        args = [_strided(rng, shape, dtypes) if rng.random() > 0.15 else 1.5
                for _ in range(fn.nin)]
        if not any(isinstance(a, np.ndarray) for a in args):
            continue
        with np.errstate(all="ignore"):
            try:
                old = np.asarray(fn(*args))
            except TypeError:  # e.g. negative of bool: numpy refuses either way
                with pytest.raises(TypeError):
                    bk.elementwise("op", fn, args, None)
                continue
            old, _ = bk.adopt(old)
            new, st = bk.adopt(bk.elementwise("op", fn, args, None))
        assert st._block is not None  # allocator memory, taken by adopt() with no copy
        assert (new.dtype, new.shape, new.strides) == (old.dtype, old.shape, old.strides)
        np.testing.assert_array_equal(new, old)
        checked += 1
    assert checked > 400


def _strided(rng, shape, dtypes):
    """A view of `shape`: axes permuted, some stepped or flipped, sometimes broadcast."""
    nd = len(shape)
    perm = rng.permutation(nd)
    steps = [int(rng.choice([1, 2, -1])) for _ in range(nd)]
    inner = [shape[i] for i in perm]
    base = rng.standard_normal([n * abs(s) for n, s in zip(inner, steps, strict=True)])
    a = base.astype(dtypes[rng.integers(len(dtypes))])
    a = a[tuple(slice(None, None, s) for s in steps)]
    a = a[tuple(slice(0, n) for n in inner)].transpose(np.argsort(perm))
    if nd and rng.random() < 0.25:
        i = int(rng.integers(nd))
        a = np.broadcast_to(a[tuple(slice(0, 1) if j == i else slice(None)
                                    for j in range(nd))], shape)
    if nd and rng.random() < 0.25:
        a = a[(0,) * int(rng.integers(nd + 1))]  # fewer dims: broadcast from the left
    return a
