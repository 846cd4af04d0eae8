"""The hostile-input catalogue (tests/bad_input_cases.py) on every device, the same calls
against torch where it is installed, and a fuzz of creation and view arguments."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpu_tensor as gt
from gpu_tensor.device import cuda_is_emulated, real_cuda_available
from tests.bad_input_cases import GENERAL

_IDS = [c.name for c in GENERAL]


@pytest.fixture(autouse=True, scope="module")
def _deep_recursion():
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 10_000))  # the 5,000-deep case must not hit Python's limit
    yield
    sys.setrecursionlimit(old)


def _value(r):
    if hasattr(r, "tolist") and hasattr(r, "shape"):
        return tuple(r.shape), str(r.dtype).rsplit(".", 1)[-1], r.tolist()
    return r


@pytest.mark.parametrize("case", GENERAL, ids=_IDS)
def test_catalogue(case, device):
    if case.expect is None:
        case.fn(gt, device)  # torch returns a value; so must we
        return
    with pytest.raises(case.expect) as info:
        case.fn(gt, device)
    msg = str(info.value)
    assert msg and "<locals>" not in msg, f"unclear message: {msg!r}"
    assert not type(info.value).__module__.startswith(("numpy", "cupy")), type(info.value)


@pytest.mark.parametrize(
    "case", [c for c in GENERAL if not c.no_torch], ids=[c.name for c in GENERAL if not c.no_torch]
)
def test_catalogue_matches_torch(case):
    torch = pytest.importorskip("torch")
    if case.expect is not None:
        with pytest.raises(case.expect):
            case.fn(torch, "cpu")
        return
    want = _value(case.fn(torch, "cpu"))
    got = _value(case.fn(gt, "cpu"))
    if isinstance(want, tuple) and len(want) == 3 and isinstance(got, tuple):
        assert got[:2] == want[:2]
        np.testing.assert_allclose(
            np.asarray(got[2], dtype=complex), np.asarray(want[2], dtype=complex), rtol=1e-6
        )
    else:
        assert got == want


def test_catalogue_is_big_enough():
    assert len(GENERAL) >= 200


# -- fuzz: creation and view arguments -------------------------------------------------
_leaf = st.one_of(
    st.integers(-3, 6),
    st.floats(-3, 6),
    st.just(float("nan")),
    st.booleans(),
    st.none(),
    st.text(max_size=2),
    st.sampled_from([np.int64(2), np.float64(2.5), np.bool_(True), np.int32(-1), np.float32(3.0)]),
)
_arg = st.one_of(
    _leaf, st.lists(_leaf, max_size=3), st.lists(st.lists(_leaf, max_size=2), max_size=2)
)
_ALLOWED = (TypeError, ValueError, RuntimeError)


def _requested(args):
    """The size a well-formed call asks for, or None when the arguments are not sizes."""
    seq = args[0] if len(args) == 1 and isinstance(args[0], (list, tuple)) else args
    out = []
    for i, a in enumerate(seq):
        if isinstance(a, (bool, np.bool_)):
            if i == 0:
                return None
            a = int(a)
        if not isinstance(a, (int, np.integer)):
            return None
        out.append(int(a))
    return tuple(out)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["ones", "zeros", "empty", "rand"]), st.lists(_arg, max_size=3))
def test_fuzz_creation(fn, args):
    try:
        t = getattr(gt, fn)(*args)
    except _ALLOWED:
        return
    want = _requested(args)
    assert want is not None and all(s >= 0 for s in want), (fn, args)
    assert tuple(t.shape) == want


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["view", "reshape", "expand", "permute"]), st.lists(_arg, max_size=3))
def test_fuzz_views(method, args):
    x = gt.zeros(2, 3)
    try:
        t = getattr(x, method)(*args)
    except _ALLOWED + (IndexError,):  # torch's class for a dim out of range (permute)
        return
    want = _requested(args)
    assert want is not None, (method, args)
    if method == "permute":
        assert sorted(d % 2 for d in want) == [0, 1]
    elif -1 not in want:
        assert tuple(t.shape) == want


@settings(max_examples=100, deadline=None)
@given(st.one_of(_arg, st.lists(_arg, max_size=3)))
def test_fuzz_tensor_data(data):
    try:
        t = gt.tensor(data)
    except _ALLOWED:
        return
    assert isinstance(t, gt.Tensor)


@settings(max_examples=80, deadline=None)
@given(_leaf, _leaf, _leaf)
def test_fuzz_ranges(a, b, c):
    for call in (
        lambda: gt.arange(a, b, c),
        lambda: gt.linspace(a, b, c),
        lambda: gt.full((2,), a),
        lambda: gt.randperm(a),
        lambda: gt.eye(a),
    ):
        try:
            t = call()
        except _ALLOWED:
            continue
        assert isinstance(t, gt.Tensor)


def test_self_referential_list_does_not_hang():
    lst = []
    lst.append(lst)
    with pytest.raises(ValueError, match="too many dimensions"):
        gt.tensor(lst)


@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16"])
def test_cumsum_accumulates_wide(dt, device):
    r = gt.full((10**5,), 0.1, dtype=getattr(gt, dt), device=device).cumsum(0)[-1].item()
    assert abs(r - 10_000) < 10_000 * 2**-7  # float32's own cumsum drifts ~0.3% here


def test_cumsum_float32_million(device):
    assert gt.full((10**6,), 0.1, device=device).cumsum(0)[-1].item() == pytest.approx(
        100000.0, rel=1e-6
    )


def test_std_does_not_overflow(device):
    assert gt.tensor([3e19, 1e20], device=device).std().item() == pytest.approx(
        4.9497475e19, rel=1e-6
    )
    assert (
        gt.tensor([3e300, 1e301], dtype=gt.float64, device=device).var(correction=0).isinf().item()
    )  # the true value is beyond float64, as in torch
    big = gt.tensor([1e200, 3e200], dtype=gt.float64, device=device)
    assert big.std().item() == pytest.approx(2**0.5 * 1e200, rel=1e-12)


def test_unsigned_dtypes(device):
    if device == "cuda" and real_cuda_available():  # the CUDA backend (a GPU, or the sim)
        with pytest.raises(NotImplementedError, match="uint16 tensors are not supported on cuda"):
            gt.from_numpy(np.array([1, 65535], np.uint16)).to(device)
        y = gt.tensor([1, 2**32 - 1], dtype=gt.uint32, device=device)
        assert (y * 1).tolist() == [1, 2**32 - 1] and y.to(gt.int64).sum().item() == 2**32
        assert gt.tensor([2**64 - 1], dtype=gt.uint64, device=device).tolist() == [2**64 - 1]
        return
    x = gt.from_numpy(np.array([1, 65535], np.uint16)).to(device)
    assert x.dtype is gt.uint16 and (x * x).dtype is gt.uint16
    assert x.sum().item() == 65536 and x.sum().dtype is gt.int64
    with pytest.raises(RuntimeError, match="Promotion for uint16"):
        x * gt.ones(2, dtype=gt.int16, device=device)
    with pytest.raises(NotImplementedError, match="UInt16"):
        x + x
    assert gt.promote_types(gt.uint32, gt.float32) is gt.float32
    assert gt.tensor([2**64 - 1], dtype=gt.uint64, device=device).tolist() == [2**64 - 1]


def test_uint8_wraps_like_torch(device):
    x = gt.tensor([1, 250], dtype=gt.uint8, device=device)
    assert (x + 300).tolist() == [45, 38]
    assert (gt.tensor([1, 3], dtype=gt.int8, device=device) * 1000).tolist() == [-24, -72]
    assert gt.ones(2, dtype=gt.uint8, device=device).fill_(-1).tolist() == [255, 255]


def test_impossible_allocation_is_torch_class(device):
    want = gt.OutOfMemoryError if device == "cuda" else RuntimeError
    with pytest.raises(want, match="allocate"):
        gt.empty(2**62, dtype=gt.uint8, device=device)


def _huge(m, device, *shape):
    """A float32 view of `shape` over one element: the size of a result is the point."""
    return m.ones((1,) * len(shape), device=device).expand(*shape)


_IMPOSSIBLE = {  # each result is 2 TiB or more; the operands are a few bytes
    "add": lambda m, d: _huge(m, d, 2**40, 2) + 1,
    "exp": lambda m, d: _huge(m, d, 2**40, 2).exp(),
    "neg": lambda m, d: -_huge(m, d, 2**40, 2),
    "compare": lambda m, d: _huge(m, d, 2**40, 2) > 0,
    "sigmoid": lambda m, d: m.sigmoid(_huge(m, d, 2**40, 2)),
    "sum over a dim": lambda m, d: _huge(m, d, 2**40, 2).sum(1),
    "clone": lambda m, d: _huge(m, d, 2**40, 2).clone(),
    "contiguous": lambda m, d: _huge(m, d, 2**40, 2).t().contiguous(),
    "cast": lambda m, d: _huge(m, d, 2**40, 2).to(m.float64),
    "cat": lambda m, d: m.cat([_huge(m, d, 2**40, 2), _huge(m, d, 2**40, 2)]),
    "index": lambda m, d: _huge(m, d, 2**20, 2**20)[
        m.zeros(1, dtype=m.int64, device=d).expand(2**21)
    ],
    "einsum": lambda m, d: m.einsum("i,j->ij", _huge(m, d, 2**21), _huge(m, d, 2**21)),
    "norm": lambda m, d: _huge(m, d, 2**40, 2).norm(dim=1),
    "logsumexp": lambda m, d: _huge(m, d, 2**40, 2).logsumexp(1),
    "repeat": lambda m, d: m.ones(2, device=d).repeat(2**40),
    "tile": lambda m, d: m.ones(2, device=d).tile(2**40),
    "tril": lambda m, d: _huge(m, d, 2**21, 2**21).tril(),
    "flip": lambda m, d: _huge(m, d, 2**40, 2).flip(0),
    "roll": lambda m, d: _huge(m, d, 2**40, 2).roll(1, 0),
    "count_nonzero": lambda m, d: _huge(m, d, 2**40, 2).count_nonzero(1),
    "inverse": lambda m, d: m.linalg.inv(_huge(m, d, 2**20, 2**20)),
    "sort": lambda m, d: m.sort(_huge(m, d, 2**40, 2), 1),
    "cummax": lambda m, d: m.cummax(_huge(m, d, 2**40, 2), 0),
    "unique": lambda m, d: m.unique(_huge(m, d, 2**40, 2)),
    "nan_to_num": lambda m, d: m.nan_to_num(_huge(m, d, 2**40, 2)),
    "erf": lambda m, d: m.erf(_huge(m, d, 2**40, 2)),
    "repeat_interleave": lambda m, d: m.ones(2, device=d).repeat_interleave(2**40),
    "det": lambda m, d: m.linalg.det(_huge(m, d, 2**20, 2**20)),
}


# on real cuda these run on the host (cupy lacks a routine): the host's refusal, the
# allocator's RuntimeError (the emulated device's host memory is the device's)
_HOST_ON_REAL_CUDA = {"cummax", "erf"}


@pytest.mark.parametrize("case", list(_IMPOSSIBLE))
def test_impossible_result_is_torchs_error_never_numpys(case, device):
    on_device = device == "cuda" and (cuda_is_emulated() or case not in _HOST_ON_REAL_CUDA)
    want = gt.OutOfMemoryError if on_device else RuntimeError  # (OutOfMemoryError is one)
    with pytest.raises(want, match="allocate") as info:
        _IMPOSSIBLE[case](gt, device)
    assert not type(info.value).__module__.startswith(("numpy", "cupy")), type(info.value)


@pytest.mark.parametrize("case", list(_IMPOSSIBLE))
def test_impossible_result_is_a_runtime_error_in_torch(case):
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError):
        _IMPOSSIBLE[case](torch, "cpu")


def test_from_dlpack_legacy_capsule_from_torch():
    torch = pytest.importorskip("torch")
    capsule = torch.utils.dlpack.to_dlpack(torch.arange(4.0))  # a bare "dltensor" capsule
    t = gt.from_dlpack(capsule)
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0] and t.dtype is gt.float32
    with pytest.raises(RuntimeError, match="consumed only once"):
        gt.from_dlpack(capsule)


@pytest.mark.parametrize("name", ["H", "float32", "6"])
def test_view_refuses_a_dtype_name(name):
    # torch takes a dtype object only; numpy's character codes ('H' is uint16) must not leak in
    with pytest.raises(TypeError, match="not its name"):
        gt.zeros(2, 3).view(name)
