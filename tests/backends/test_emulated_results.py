"""The emulated cuda device computes its results straight into allocator memory: ufuncs,
reductions, products and joins through `out=`; composite functions, sorts, gathers,
selections, rearrangements, reductions' temporaries and generated factories piece by
piece. An impossible result is the allocator's OutOfMemoryError before any host temporary
is made, the allocator accounts for every result byte, numpy's temporaries stay
piece-sized, and results keep the values and layout the cpu device (numpy) gives."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor import _torch_samplers as samplers
from gpu_tensor._mt19937 import MTStream
from gpu_tensor.cuda import memory as cmem
from gpu_tensor.device import cuda_is_emulated
from gpu_tensor.memory import registry, verify
from gpu_tensor.memory.sizes import round_size
from gpu_tensor.testing import host_peak

pytestmark = pytest.mark.skipif(not cuda_is_emulated(), reason="the emulated cuda device")

MIB = 1 << 20


def _allocator():
    return registry.find(0)


def _refused_by_the_allocator(fn, match=r"Tried to allocate \d+\.\d+ TiB"):
    """fn() is refused by the allocator itself (gt.OutOfMemoryError, num_ooms up by one),
    which is left as it was and consistent."""
    before = cmem.memory_allocated(0)
    ooms = cmem.memory_stats(0)["num_ooms"]
    with pytest.raises(gt.OutOfMemoryError, match=match):
        fn()
    assert cmem.memory_stats(0)["num_ooms"] == ooms + 1
    assert cmem.memory_allocated(0) == before
    verify.check(_allocator())


def _refused_under_a_cap(fn, headroom=48 * MIB):
    """fn() under a per-process cap `headroom` above what is allocated is refused before
    numpy allocates (host memory is plentiful, so the old path built the result and only
    then failed to copy it in), and leaves the allocator as it was. The cap counts reserved
    memory and a cached block is reused without meeting it, so the cache earlier tests left
    is emptied first and the cap set above what stays reserved."""
    cmem.empty_cache()
    capacity = cmem.mem_get_info(0)[1]
    old = cmem.get_per_process_memory_fraction(0)
    before = cmem.memory_allocated(0)
    cmem.set_per_process_memory_fraction((cmem.memory_reserved(0) + headroom) / capacity, 0)
    try:

        def refused():
            with pytest.raises(gt.OutOfMemoryError):
                fn()

        _, peak = host_peak(refused)
    finally:
        cmem.set_per_process_memory_fraction(old, 0)
    assert peak < MIB, f"numpy allocated {peak} bytes before the OOM"
    assert cmem.memory_allocated(0) == before
    verify.check(_allocator())


def _result_in_allocator(op, *args):
    """op(*args) run warm (the first call of a dtype combination resolves it once): the
    result, its bytes, the host bytes numpy traced meanwhile, and op on cpu copies of the
    args. Checks that the allocator grew by exactly the result's bytes (rounded as it
    rounds every block) and stayed consistent, and that shape, dtype and values are the cpu's."""
    op(*args)
    before = cmem.memory_allocated(0)
    y, peak = host_peak(lambda: op(*args))
    nbytes = y.untyped_storage().nbytes()
    assert nbytes == y.numel() * y.element_size()
    assert cmem.memory_allocated(0) - before == round_size(nbytes)
    verify.check(_allocator())
    want = op(*[t.cpu() for t in args])
    assert y.shape == want.shape and y.dtype is want.dtype
    np.testing.assert_array_equal(y.cpu().numpy(), want.numpy())
    return y, want, nbytes, peak


def test_impossible_elementwise_is_the_allocators_oom_and_leaves_it_consistent():
    x = gt.ones(2**20, device="cuda")
    # 2**51 float32 elements: numpy would try, too
    _refused_by_the_allocator(
        lambda: x.expand(2**31, 2**20) + 1, match="Tried to allocate 8192.00 TiB"
    )
    _refused_by_the_allocator(lambda: gt.exp(x.expand(2**31, 2**20)))
    assert (x[:4] + 1).sum().item() == 8.0  # still usable


def test_result_over_the_cap_is_refused_before_numpy_allocates_it():
    """A 64 MiB result with 48 MiB left under the cap: the allocator refuses first, and no
    host buffer of that size ever exists."""
    x = gt.ones(1, 4 * MIB, device="cuda")  # 16 MiB
    _refused_under_a_cap(lambda: x.expand(4, 4 * MIB) * 2)


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
    y, want, nbytes, peak = _result_in_allocator(_OPS[case], a, b)
    assert nbytes >= MIB
    assert peak < nbytes // 4, f"host buffer of {peak} bytes for a {nbytes}-byte result"
    assert y.stride() == want.stride()


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


def _matches_cpu(name, fn, values):
    """fn on emulated cuda against fn on cpu: device, dtype, shape, layout, values. Returns
    the cuda result."""
    src = gt.tensor(values)
    want = fn(src)
    got = fn(src.cuda())
    assert got.device.type == "cuda" and got.dtype is want.dtype
    assert got.shape == want.shape and _layout(got) == _layout(want), name
    np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())
    return got


@pytest.mark.parametrize("name", list(_layout_cases()))
def test_layout_and_values_match_cpu(name):
    _matches_cpu(name, *_layout_cases()[name])


def test_every_layout_matches_numpys_own_allocation():
    """Random strided, permuted, flipped and broadcast operands of several dtypes: the
    result planned into allocator memory equals (values, dtype, layout) what numpy
    allocates itself and adopt() copied in before (the old path)."""
    from gpu_tensor.backends import get_backend

    bk = get_backend(gt.device("cuda"))
    rng = np.random.default_rng(18)
    ufuncs = [
        np.add,
        np.multiply,
        np.greater,
        np.exp,
        np.maximum,
        np.logical_and,
        np.negative,
        np.true_divide,
    ]
    dtypes = [np.float32, np.float64, np.int32, np.int64, np.bool_, np.float16]
    checked = 0
    for _ in range(600):
        shape = [int(rng.choice([1, 1, 2, 3, 4])) for _ in range(int(rng.integers(0, 5)))]
        fn = ufuncs[rng.integers(len(ufuncs))]
        args = [_strided(rng, shape, dtypes) if rng.random() > 0.15 else 1.5 for _ in range(fn.nin)]
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
        a = np.broadcast_to(
            a[tuple(slice(0, 1) if j == i else slice(None) for j in range(nd))], shape
        )
    if nd and rng.random() < 0.25:
        a = a[(0,) * int(rng.integers(nd + 1))]  # fewer dims: broadcast from the left
    return a


# reductions, matrix products and joins: numpy routines with `out=` (backend.compute_into)


def _huge(*shape):
    """A float32 view of `shape` over one element: the size of its result is the point."""
    return gt.ones((1,) * len(shape), device="cuda").expand(*shape)


_IMPOSSIBLE = {  # each result is at least 4 TiB; the operands are a few bytes
    "sum": lambda: _huge(2**40, 2).sum(1),
    "mean keepdim": lambda: _huge(2**40, 2).mean(1, keepdim=True),
    "amax": lambda: _huge(2, 2**40).amax(0),
    "max": lambda: _huge(2**40, 2).max(1),  # the values, then the indices
    "argmax": lambda: _huge(2**40, 2).argmax(1),
    "cumsum": lambda: gt.ones(1, dtype=gt.int64, device="cuda").expand(2**40).cumsum(0),
    "matmul": lambda: _huge(2**21, 1) @ _huge(1, 2**21),
    "outer": lambda: gt.outer(_huge(2**21), _huge(2**21)),
    "cat": lambda: gt.cat([_huge(2**40, 2), _huge(2**40, 2)], 1),
    "stack": lambda: gt.stack([_huge(2**40), _huge(2**40)]),
}


@pytest.mark.parametrize("case", list(_IMPOSSIBLE))
def test_impossible_reduction_product_or_join_is_the_allocators_oom(case):
    _refused_by_the_allocator(_IMPOSSIBLE[case])


_OVER_CAP = {  # 64 MiB results (numpy could allocate them) under a 48 MiB cap
    "sum": lambda: _huge(16 * MIB, 2).sum(1),
    "cumsum": lambda: gt.ones(1, dtype=gt.int64, device="cuda").expand(8 * MIB).cumsum(0),
    "matmul": lambda: _huge(4096, 1) @ _huge(1, 4096),
    "cat": lambda: gt.cat([_huge(8 * MIB, 1), _huge(8 * MIB, 1)]),
    "stack": lambda: gt.stack([_huge(8 * MIB), _huge(8 * MIB)]),
    "x[idx]": lambda: _huge(4096, 1024)[gt.zeros(16384, dtype=gt.int64, device="cuda")],
    "nonzero": lambda: gt.ones(1, dtype=gt.bool, device="cuda").expand(8 * MIB).nonzero(),
    "roll": lambda: _huge(16 * MIB, 1).roll(1, 0),
    "repeat": lambda: _huge(4 * MIB).repeat(4),
    "randn": lambda: gt.randn(16 * MIB, device="cuda"),
    "arange": lambda: gt.arange(8 * MIB, device="cuda"),
}


@pytest.mark.parametrize("case", list(_OVER_CAP))
def test_reduction_product_or_join_over_the_cap_is_refused_before_numpy_allocates(case):
    _refused_under_a_cap(_OVER_CAP[case])


_RESULTS = {  # operand a: (1024, 256, 4) float32 (4 MiB); each result is 1 MiB or more
    "sum": lambda a: a.sum(2),
    "sum permuted": lambda a: a.permute(2, 1, 0).sum(0),
    "mean keepdim": lambda a: a.mean(-1, keepdim=True),
    "prod stepped": lambda a: a[:, :, ::2].prod(2),
    "amax": lambda a: a.amax(2),
    "min values": lambda a: a.min(2).values,
    "any": lambda a: (a > 0).unsqueeze(-1).any(-1),
    "cumsum int64": lambda a: (a > 0).long().cumsum(1),
    "cumsum float32": lambda a: a.cumsum(0),
    "matmul": lambda a: a[:, :, 0] @ a[:256, :, 1].t().contiguous(),
    "mm transposed": lambda a: gt.mm(a[:512, :, 0], a[:512, :, 1].t()),
    "bmm": lambda a: gt.bmm(a.view(4, 512, 512), a.view(4, 512, 512).transpose(1, 2)),
    "outer": lambda a: gt.outer(a[:512, 0, 0], a[:512, 0, 1]),
    "cat": lambda a: gt.cat([a, a], 1),
    "cat transposed": lambda a: gt.cat([a.transpose(0, 2), a.transpose(0, 2)], 2),
    "stack": lambda a: gt.stack([a, a], -1),
}


@pytest.mark.parametrize("case", list(_RESULTS))
def test_reduction_product_and_join_bytes_are_the_allocators(case):
    a = gt.arange(2**20, dtype=gt.float32, device="cuda").reshape(1024, 256, 4) % 7 - 3
    y, want, nbytes, peak = _result_in_allocator(_RESULTS[case], a)
    assert nbytes >= MIB
    assert peak < nbytes // 4, f"host buffer of {peak} bytes for a {nbytes}-byte result"
    assert _layout(y) == _layout(want)


def _reduction_layout_cases():
    m = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    x = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    return {
        "sum contiguous": (lambda t: t.sum(1), x),
        "sum transposed": (lambda t: t.t().sum(0), m),
        "sum stepped keepdim": (lambda t: t[:, ::2].sum(0, keepdim=True), m),
        "sum broadcast": (lambda t: t[:, :1].expand(3, 4).sum(0), m),
        "sum 0-d": (lambda t: t.sum(), np.float32(2.5)),
        "sum empty": (lambda t: t[:, :0].sum(1), m),
        "sum of empty dim": (lambda t: t[:0].t().sum(1), m),
        "sum int keepdim": (
            lambda t: t.permute(2, 0, 1).sum((0, 2), keepdim=True),
            x.astype(np.int32),
        ),
        "mean permuted": (lambda t: t.permute(2, 0, 1).mean(1), x),
        "prod half": (lambda t: t.half().t().prod(0), m / 8),
        "amax keepdim": (lambda t: t.permute(1, 2, 0).amax(2, keepdim=True), x),
        "max values": (lambda t: t.t().max(1).values, m),
        "argmax permuted keepdim": (lambda t: t.permute(2, 0, 1).argmax(1, keepdim=True), x),
        "all": (lambda t: (t > 3).t().all(1), m),
        "cumsum transposed": (lambda t: t.t().cumsum(1), m),
        "cumprod int": (lambda t: t.permute(2, 1, 0).cumprod(0), x.astype(np.int64) % 3),
        "matmul": (lambda t: t @ t.t(), m),
        "matmul transposed": (lambda t: t.t() @ t, m),
        "matmul batched permuted": (
            lambda t: t.transpose(0, 1) @ t.transpose(0, 1).transpose(1, 2),
            x,
        ),
        "matmul broadcast": (lambda t: t @ t[0].t(), x),
        "mv": (lambda t: t.t() @ t[:, 0], m),
        "dot": (lambda t: gt.dot(t[0], t[1]), m),
        "outer stepped": (lambda t: gt.outer(t[0, ::2], t[:, 1]), m),
        "matmul empty": (lambda t: t[:, :0] @ t[:0].t()[:0].t(), m),
        "cat": (lambda t: gt.cat([t, t], 0), m),
        "cat transposed": (lambda t: gt.cat([t.t(), t.t()], 1), m),
        "cat mixed layouts": (lambda t: gt.cat([t.t(), t.t().contiguous()], 0), m),
        "cat broadcast": (lambda t: gt.cat([t[:1].expand(3, 4), t], 1), m),
        "cat empty": (lambda t: gt.cat([t[:0], t[:0]], 0), m),
        "cat promotes": (lambda t: gt.cat([t.t(), t.t().to(gt.int32)], 0), m),
        "stack permuted": (lambda t: gt.stack([t.permute(2, 0, 1)] * 3, 2), x),
        "stack 0-d": (lambda t: gt.stack([t, t]), np.float32(1.5)),
    }


@pytest.mark.parametrize("name", list(_reduction_layout_cases()))
def test_reduction_product_and_join_layout_and_values_match_cpu(name):
    got = _matches_cpu(name, *_reduction_layout_cases()[name])
    assert got.untyped_storage()._block is not None


def test_every_reduction_product_and_join_layout_matches_the_old_path():
    """Random strided, permuted and broadcast operands: results computed into allocator
    memory equal (values, dtype, exact strides) numpy's own result as adopt() copied it
    in before (the old path), over the same operands."""
    from gpu_tensor.backends import get_backend

    bk = get_backend(gt.device("cuda"))
    rng = np.random.default_rng(18)
    checked = 0
    for _ in range(120):
        for got, want in _old_and_new(rng, bk):
            want = bk.adopt(want)[0]
            assert (got.dtype, got.shape, got.strides) == (want.dtype, want.shape, want.strides)
            np.testing.assert_array_equal(got, want)
            checked += 1
    assert checked > 700


def _old_and_new(rng, bk):
    """(the op's result array, numpy's own result over the same operands) for one draw."""
    shape = [int(rng.choice([1, 2, 3, 4])) for _ in range(int(rng.integers(1, 5)))]
    t, u = _strided_tensor(rng, shape), _strided_tensor(rng, shape)
    a, nd = t._data, t.ndim
    axes = tuple(sorted({int(i) for i in rng.integers(0, nd, size=2)}))
    kd = bool(rng.random() < 0.5)
    d = int(rng.integers(-nd, nd))
    pairs = [
        (t.sum(axes, kd), np.sum(a, axis=axes, keepdims=kd)),
        (t.amax(axes, kd), np.max(a, axis=axes, keepdims=kd)),
        (t.mean(axes, kd), np.mean(a, axis=axes, keepdims=kd)),
        (t.argmin(d, kd), np.argmin(a, axis=d, keepdims=kd)),
        (t.to(gt.int64).cumsum(d), np.cumsum(bk.astype(a, np.int64), axis=d)),
        (gt.cat([t, u], d), np.concatenate([a, u._data], d)),
        (gt.stack([t, u], d), np.stack([a, u._data], d)),
    ]
    if nd >= 2:
        y = _strided_tensor(rng, shape[:-2] + [shape[-1], 3])
        pairs.append((t @ y, np.matmul(a, y._data)))
    return [(new._data, old) for new, old in pairs]


def _strided_tensor(rng, shape):
    """A cuda float64 view of `shape`: axes permuted, some stepped, sometimes broadcast."""
    nd = len(shape)
    perm = rng.permutation(nd)
    steps = [int(rng.choice([1, 2, 3])) for _ in range(nd)]
    inner = [shape[i] for i in perm]
    base = gt.tensor(
        rng.integers(-4, 5, [n * s for n, s in zip(inner, steps, strict=True)]).astype(np.float64),
        device="cuda",
    )
    t = base[tuple(slice(0, n * s, s) for n, s in zip(inner, steps, strict=True))]
    t = t.permute(*np.argsort(perm).tolist())
    if rng.random() < 0.25:
        i = int(rng.integers(nd))
        t = t.narrow(i, 0, 1).expand(*shape)
    return t


# composite elementwise functions, float -> int casts, sorts and gathers: numpy routines
# that make temporaries or take no `out=`, filled piece by piece (backend.by_pieces)


@gt.fuse
def _fused(x, y):
    return gt.sigmoid(x * 0.5 + y) * y


@gt.fuse
def _fused_two(x, y):  # outputs of different shapes: each reads only its own inputs
    s = gt.sigmoid(x * 0.5)
    return s * y, s + 1


_PIECED = {  # operand a: (2048, 256, 4) float32 (8 MiB); i: int64 indices of its shape
    "sigmoid": lambda a, i: gt.sigmoid(a),
    "gelu transposed": lambda a, i: gt.nn.functional.gelu(a.transpose(0, 2)),
    "gelu tanh": lambda a, i: gt.nn.functional.gelu(a, approximate="tanh"),
    "silu broadcast": lambda a, i: gt.nn.functional.silu(a[:, :1] + a[0]),
    "where broadcast": lambda a, i: gt.where(a[:, :1] > 0, a, a[0]),
    "clamp permuted": lambda a, i: gt.clamp(a.permute(1, 2, 0), -0.5, 0.5),
    "pow": lambda a, i: a.abs() ** 1.5,
    "round stepped": lambda a, i: a[:, ::2].round(),
    "to int32": lambda a, i: (a * 1e9).to(gt.int32),
    "to uint8 transposed": lambda a, i: a.transpose(0, 1).to(gt.uint8),
    "asin transposed": lambda a, i: gt.asin(a.transpose(0, 2) / 4),
    "atan2 broadcast": lambda a, i: gt.atan2(a, a[0]),
    "gcd": lambda a, i: gt.gcd(i, i[:, :1] + 6),
    "isnan": lambda a, i: gt.isnan(a.transpose(0, 1)),
    "isposinf transposed": lambda a, i: gt.isposinf(
        gt.where(a > 2, float("inf"), a).transpose(0, 1)
    ),
    "signbit": lambda a, i: gt.signbit(a),
    "nan_to_num": lambda a, i: gt.nan_to_num(gt.log(a)),
    "trunc division": lambda a, i: gt.div(a, 3, rounding_mode="trunc"),
    "left shift": lambda a, i: gt.bitwise_left_shift(i, 2),
    "fused broadcast": lambda a, i: _fused(a.transpose(0, 1), a[:, 0]),
    "fused two outputs": lambda a, i: _fused_two(a, a[:, :1])[0],
    "fused two outputs, second": lambda a, i: _fused_two(a, a[0])[1],
    "fused two outputs of two shapes": lambda a, i: _fused_two(a[0], a)[0],
    "flip": lambda a, i: a.flip(1),
    "flip transposed": lambda a, i: a.transpose(0, 2).flip((0, 2)),
    "sort": lambda a, i: gt.sort(a, 1).values,
    "argsort descending": lambda a, i: gt.argsort(a, 0, descending=True),
    "topk": lambda a, i: gt.topk(a, 128, 1).values,
    "gather": lambda a, i: a.gather(1, i),
    "index_select": lambda a, i: a.index_select(0, i[:, 0, 0]),
    "take": lambda a, i: gt.take(a, i - 2**20),
    # selections: a take into a planned result, or a count then a fill over runs of rows
    "x[idx]": lambda a, i: a[i[:, 0, 0]],
    "x[:, idx]": lambda a, i: a[:, i[:256, 0, 0]],
    "x[idx, 1:]": lambda a, i: a[i[:, 0, 0] - 256, 1:],
    "x[i, j]": lambda a, i: a[i[:, 0, :1] * 7, i[0, :, 0]],
    "x[i, j, k]": lambda a, i: a[i[:, :, 0] * 7, i[:, :, 1], i[:, :, 2] % 4],
    "x[i] 2-D index transposed": lambda a, i: a[i[:8, :, 0].t()],
    "x[mask]": lambda a, i: a[a > 0],
    "x[row mask]": lambda a, i: a[a[:, 0, 0] > 0],
    "masked_select broadcast": lambda a, i: gt.masked_select(a, a[0] > 0),
    "nonzero": lambda a, i: (a > 0).nonzero(),
    # rearrangements: block copies into a fresh result
    "roll": lambda a, i: a.roll(5, 1),
    "roll two dims": lambda a, i: a.roll((1, -2), (0, 2)),
    "roll flat transposed": lambda a, i: a.transpose(0, 2).roll(-3),
    "repeat": lambda a, i: a[:1024].repeat(1, 2, 1),
    "tile transposed": lambda a, i: a[:, :, :2].transpose(0, 1).tile((2,)),
    # along one dim: by pieces of the others; a product with a planned result
    "cummax": lambda a, i: a.cummax(1).values,
    "cummin indices": lambda a, i: a.cummin(0).indices,
    "einsum": lambda a, i: gt.einsum("ijk,ijk->ij", a, a),
    "einsum outer": lambda a, i: gt.einsum("i,j->ij", a[:, 0, 0], a[:1024, 1, 1]),
    "searchsorted": lambda a, i: gt.searchsorted(a[0, :, 0].sort().values, a),
    "searchsorted rows": lambda a, i: gt.searchsorted(
        a.view(2048, 1024).sort(-1).values, a.view(2048, 1024)[:, ::4]
    ),
    "scatter_reduce amax": lambda a, i: a.scatter_reduce(1, i, a, "amax"),
    "scatter_reduce prod": lambda a, i: a.scatter_reduce(1, i, a, "prod", include_self=False),
    # reductions over inner dims: by pieces of the others, numpy's order within each line
    "var": lambda a, i: a.var(-1),
    "std keepdim": lambda a, i: a.std(-1, keepdim=True),
    "var two dims": lambda a, i: a.view(2**19, 2, 2).var((1, 2)),
    "norm": lambda a, i: a.norm(dim=-1),
    "norm 1": lambda a, i: a.norm(1, dim=-1),
    "logsumexp": lambda a, i: a.logsumexp(-1),
}


@pytest.mark.parametrize("case", list(_PIECED))
def test_pieced_results_are_the_allocators_and_numpys_temporaries_stay_small(case):
    a = gt.arange(2**21, dtype=gt.float32, device="cuda").reshape(2048, 256, 4) % 7 - 3.5
    i = (gt.arange(2**21, device="cuda").reshape(2048, 256, 4) * 7919) % 256
    y, want, nbytes, peak = _result_in_allocator(_PIECED[case], a, i)
    assert nbytes >= 2 * MIB
    assert peak < 2 * MIB, f"host buffers of {peak} bytes for a {nbytes}-byte result"
    assert _layout(y) == _layout(want)


_IMPOSSIBLE_PIECED = {  # each result is at least 4 TiB; the operands are a few bytes
    "sigmoid": lambda: gt.sigmoid(_huge(2**40, 2)),
    "where": lambda: gt.where(gt.ones(1, dtype=gt.bool, device="cuda"), _huge(2**40, 2), 0.0),
    "clamp": lambda: gt.clamp(_huge(2, 2**40), 0, 1),
    "to int32": lambda: _huge(2**40, 2).to(gt.int32),
    "argsort": lambda: gt.argsort(_huge(2**40, 2), 1),
    "repeat": lambda: _huge(2).repeat(2**41),
    "rand": lambda: gt.rand(2**40, device="cuda"),
    "randint": lambda: gt.randint(0, 5, (2**40,), device="cuda"),
    "arange": lambda: gt.arange(2**40, device="cuda"),
    "linspace": lambda: gt.linspace(0, 1, 2**40, device="cuda"),
    "eye": lambda: gt.eye(2**20, device="cuda"),
}


@pytest.mark.parametrize("case", list(_IMPOSSIBLE_PIECED))
def test_impossible_pieced_result_is_the_allocators_oom(case):
    _refused_by_the_allocator(_IMPOSSIBLE_PIECED[case])


@pytest.mark.parametrize("whole", [(), (0,), (2,), (0, 1, 2)])
@pytest.mark.parametrize("strides", [(96, 16, 4), (4, 20, 140), (-16, 4, 64)])
def test_pieces_cover_the_result_once_and_stay_under_the_limit(strides, whole):
    from gpu_tensor.backends.emulated import _pieces

    shape = (5, 7, 3)
    line = int(np.prod([shape[w] for w in whole]))
    for limit in (1, 2, 4, 7, 21, 100):
        cover = np.zeros(shape, int)
        for piece in _pieces(shape, strides, limit, whole):
            assert cover[piece].size <= max(limit, line)
            assert all(piece[w] == slice(None) for w in whole)
            cover[piece] += 1
        assert (cover == 1).all()


# factories that generate their values (random, ranges, eye): filled piece by piece where
# the device's memory is host memory, and the same values on every device

_GENERATED = {  # each result is 4 MiB or more
    "rand": lambda d: gt.rand(1024, 1024, device=d),
    "randn float64": lambda d: gt.randn(2**19, dtype=gt.float64, device=d),
    "randn half": lambda d: gt.randn(2**21, dtype=gt.float16, device=d),
    "randint": lambda d: gt.randint(-3, 1000, (1024, 512), device=d),
    "randperm": lambda d: gt.randperm(2**19, device=d),
    "randperm float32": lambda d: gt.randperm(2**20, dtype=gt.float32, device=d),
    "arange": lambda d: gt.arange(5, 2**20 * 3 + 5, 3, dtype=gt.float32, device=d),
    "arange int64": lambda d: gt.arange(2**19, device=d),
    "linspace": lambda d: gt.linspace(-2.5, 7, 2**20, device=d),
    "linspace int32": lambda d: gt.linspace(-9, 9, 2**20, dtype=gt.int32, device=d),
    "eye": lambda d: gt.eye(1024, device=d),
    "eye wide": lambda d: gt.eye(700, 1500, device=d),
    # the in-place samplers (parameters' initialisation): drawn into the tensor itself
    "normal_": lambda d: gt.empty(2048, 1024, device=d).normal_(0.5, 2),
    "uniform_": lambda d: gt.empty(2048, 1024, device=d).uniform_(-3, 3),
    "bernoulli_": lambda d: gt.empty(2048, 1024, device=d).bernoulli_(0.25),
    "random_ int32": lambda d: gt.empty(2048, 1024, dtype=gt.int32, device=d).random_(-9, 9),
    "exponential_": lambda d: gt.empty(2048, 1024, device=d).exponential_(3.0),
    "cauchy_": lambda d: gt.empty(2048, 1024, device=d).cauchy_(),
    "bernoulli of probabilities": lambda d: gt.bernoulli(
        gt.linspace(0, 1, 2**21, device=d).view(1024, 2048).t()
    ),
}


@pytest.mark.parametrize("case", list(_GENERATED))
def test_generated_factories_fill_allocator_memory_with_the_cpus_values(case):
    make = _GENERATED[case]
    make("cuda")  # warm
    before = cmem.memory_allocated(0)
    gt.manual_seed(7)
    y, peak = host_peak(lambda: make("cuda"))
    nbytes = y.numel() * y.element_size()
    assert nbytes >= 4 * MIB
    assert cmem.memory_allocated(0) - before == round_size(nbytes)
    verify.check(_allocator())
    assert peak < nbytes // 4, f"host buffers of {peak} bytes for a {nbytes}-byte result"
    gt.manual_seed(7)
    want = make("cpu")
    assert y.dtype is want.dtype and y.stride() == want.stride()
    np.testing.assert_array_equal(y.cpu().numpy(), want.numpy())


def _whole_randperm(st, n):
    """torch's cpu randperm swaps over one whole draw of words (reference for the pieces)."""
    perm = np.arange(n)
    z = st.words(n - 1).astype(np.int64) % np.arange(n, 1, -1)
    for i, zi in enumerate(z.tolist()):
        perm[i], perm[i + zi] = perm[i + zi], perm[i]
    return perm


def _whole_randn64(st, n):
    u = samplers.uniform01(st, n, True)
    out = samplers._box_muller16(u[: n // 16 * 16].reshape(-1, 16), 0.0, 1.0).ravel()
    tail = samplers._box_muller16(samplers.uniform01(st, 16, True).reshape(1, 16), 0.0, 1.0)
    return np.concatenate([out[: n - 16], tail.ravel()])


def test_generated_values_do_not_depend_on_the_piece_boundaries():
    """Values drawn piece by piece are the values of one whole draw of torch's stream
    (_torch_samplers), numpy's linspace and arange."""
    n = 3 * 2**16 + 5  # three whole pieces and a part
    checks = [
        (lambda: gt.rand(n, dtype=gt.float64), lambda st: samplers.uniform01(st, n, True)),
        (lambda: gt.randn(n, dtype=gt.float64), lambda st: _whole_randn64(st, n)),
        (
            lambda: gt.randint(0, 2**40, (n,)),
            lambda st: (st.words64(n) % np.uint64(2**40)).astype(np.int64),
        ),
        (lambda: gt.randperm(n), lambda st: _whole_randperm(st, n)),
    ]
    for dev in ("cpu", "cuda"):
        for ours, numpys in checks:
            gt.manual_seed(3)
            got = ours().to(dev).cpu().numpy()
            np.testing.assert_array_equal(got, numpys(MTStream(3)))
        np.testing.assert_array_equal(
            gt.linspace(-1, 5, n, dtype=gt.float64, device=dev).cpu().numpy(), np.linspace(-1, 5, n)
        )
        np.testing.assert_array_equal(
            gt.arange(0.5, n * 0.25, 0.25, dtype=gt.float64, device=dev).cpu().numpy(),
            0.5 + np.arange(n - 2) * 0.25,
        )


def test_in_place_samplers_draw_the_same_numbers_on_every_device_in_each_layout():
    """torch's rule: a contiguous tensor takes the 16-wide normal kernel, a strided one the
    scalar pairs in memory order; either way cuda gets the cpu's numbers."""
    for layout in (lambda t: t, lambda t: t.t(), lambda t: t[:, ::2]):
        got = {}
        for dev in ("cpu", "cuda"):
            gt.manual_seed(5)
            got[dev] = layout(gt.zeros(600, 300, device=dev)).normal_(1, 3).cpu().numpy()
        np.testing.assert_array_equal(got["cuda"], got["cpu"])
    want = samplers._scalar_normals(MTStream(5), 600 * 300, 1, 3).astype(np.float32)
    np.testing.assert_array_equal(got["cpu"].ravel(), want[: got["cpu"].size])  # (t[:, ::2])
    gt.manual_seed(5)
    transposed = gt.zeros(600, 300, device="cuda").t().normal_(1, 3)
    np.testing.assert_array_equal(transposed.t().cpu().numpy().ravel(), want)


def test_fused_outputs_of_two_shapes_each_keep_their_own():
    a = gt.arange(2**20, dtype=gt.float32, device="cuda").reshape(1024, 256, 4) % 5
    big, small = _fused_two(a[0], a)
    want_big, want_small = _fused_two(a[0].cpu(), a.cpu())
    assert big.shape == a.shape and small.shape == a[0].shape
    np.testing.assert_array_equal(big.cpu().numpy(), want_big.numpy())
    np.testing.assert_array_equal(small.cpu().numpy(), want_small.numpy())


_IN_PLACE = {
    "mode": lambda a: a.mode(-1),
    "var": lambda a: a.var(-1),
    "norm": lambda a: a.norm(dim=-1),
    "logsumexp": lambda a: a.logsumexp(-1),
    "nan_to_num": lambda a: gt.nan_to_num(a),
}


@pytest.mark.parametrize("case", list(_IN_PLACE))
def test_reductions_read_their_input_in_place_with_piece_sized_temporaries(case):
    a = gt.arange(2**22, dtype=gt.float32, device="cuda").reshape(4096, 1024) % 5  # 16 MiB
    op = _IN_PLACE[case]
    op(a)
    _, peak = host_peak(lambda: op(a))
    assert peak < 2 * MIB, f"host buffers of {peak} bytes for a 16 MiB input"
