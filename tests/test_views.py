"""Views and layout: every view op checked against numpy, storage sharing, view vs reshape."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpu_tensor.dtype as dt
from gpu_tensor import creation as cr
from gpu_tensor._views import compute_stride
from gpu_tensor.testing import assert_close


def _pair(device, shape=(2, 3, 4)):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    return cr.tensor(a, device=device), a


def _same_storage(v, x):
    assert v.untyped_storage() is x.untyped_storage()


@pytest.mark.parametrize(
    "op, ref",
    [
        (lambda t: t.view(6, 4), lambda a: a.reshape(6, 4)),
        (lambda t: t.view(-1), lambda a: a.reshape(-1)),
        (lambda t: t.transpose(0, 2), lambda a: a.transpose(2, 1, 0)),
        (lambda t: t.permute(1, 2, 0), lambda a: a.transpose(1, 2, 0)),
        (lambda t: t.mT, lambda a: np.swapaxes(a, -1, -2)),
        (lambda t: t.T, lambda a: a.T),
        (lambda t: t.narrow(2, 1, 2), lambda a: a[:, :, 1:3]),
        (lambda t: t.narrow(-1, -2, 2), lambda a: a[:, :, 2:4]),
        (lambda t: t.select(1, -1), lambda a: a[:, -1]),
        (lambda t: t[1], lambda a: a[1]),
        (lambda t: t[:, 1:, ::2], lambda a: a[:, 1:, ::2]),
        (lambda t: t[..., None, 0], lambda a: a[..., None, 0]),
        (lambda t: t[None, 1, ..., 2:], lambda a: a[None, 1, ..., 2:]),
        (lambda t: t[:, :1].expand(2, 5, 4), lambda a: np.broadcast_to(a[:, :1], (2, 5, 4))),
        (lambda t: t[:1].expand(3, -1, -1, -1), lambda a: np.broadcast_to(a[:1], (3, 1, 3, 4))),
        (lambda t: t.unsqueeze(1), lambda a: a[:, None]),
        (lambda t: t.unsqueeze(-1), lambda a: a[..., None]),
        (lambda t: t[:, :1].squeeze(), lambda a: a[:, 0]),
        (lambda t: t[:, :1].squeeze(1), lambda a: a[:, 0]),
        (lambda t: t.squeeze(0), lambda a: a),
        (lambda t: t.flatten(), lambda a: a.reshape(-1)),
        (lambda t: t.flatten(1), lambda a: a.reshape(2, 12)),
        (lambda t: t.unflatten(2, (2, 2)), lambda a: a.reshape(2, 3, 2, 2)),
        (lambda t: t.unfold(2, 2, 1), lambda a: np.lib.stride_tricks.sliding_window_view(a, 2, 2)),
        (lambda t: t.unfold(2, 2, 2), lambda a: a.reshape(2, 3, 2, 2)),
        (
            lambda t: t.as_strided((3, 2), (1, 4), 1),
            lambda a: np.lib.stride_tricks.as_strided(a.reshape(-1)[1:], (3, 2), (4, 16)),
        ),
        (lambda t: t.diagonal(0, 1, 2), lambda a: np.diagonal(a, 0, 1, 2)),
        (lambda t: t.movedim(0, -1), lambda a: np.moveaxis(a, 0, -1)),
        (lambda t: t.detach(), lambda a: a),
        (lambda t: t.split(2, dim=2)[1], lambda a: a[:, :, 2:]),
        (lambda t: t.chunk(3, dim=1)[2], lambda a: a[:, 2:]),
        (lambda t: t.unbind(1)[1], lambda a: a[:, 1]),
    ],
)
def test_view_ops_match_numpy_and_share_storage(device, op, ref):
    x, a = _pair(device)
    v = op(x)
    assert_close(v, ref(a).astype(np.float32))
    _same_storage(v, x)


def test_transpose_strides(device):
    x, _ = _pair(device)
    assert x.transpose(0, 1).stride() == (4, 12, 1)
    assert cr.zeros(2, 3, device=device).t().stride() == (1, 3)


def test_writes_through_views(device):
    x = cr.zeros(3, 4, device=device)
    x.t()[1].fill_(5)
    x[2, 1:3] = 7
    expect = np.zeros((3, 4), np.float32)
    expect[:, 1] = 5
    expect[2, 1:3] = 7
    assert_close(x, expect)


def test_view_refuses_incompatible_strides(device):
    x, _ = _pair(device)
    with pytest.raises(RuntimeError, match=r"Use \.reshape"):
        x.transpose(0, 1).view(-1)


def test_reshape_copies_only_when_it_must(device):
    x, a = _pair(device)
    r = x.reshape(4, 6)
    assert r.data_ptr() == x.data_ptr()
    t = x.transpose(1, 2)
    r2 = t.reshape(2, 12)  # needs a copy
    assert r2.untyped_storage() is not x.untyped_storage()
    assert_close(r2, a.transpose(0, 2, 1).reshape(2, 12))
    r3 = x[:, :, :2].reshape(2, 3, 2, 1)  # strided but viewable
    assert r3.untyped_storage() is x.untyped_storage()


def test_contiguous_and_clone(device):
    x, a = _pair(device)
    assert x.contiguous() is x
    t = x.permute(2, 0, 1)
    c = t.contiguous()
    assert c.is_contiguous() and c.data_ptr() != x.data_ptr()
    assert_close(c, a.transpose(2, 0, 1))
    cl = t.clone()  # preserve_format keeps the dense permuted layout
    assert cl.stride() == t.stride() and cl.data_ptr() != t.data_ptr()
    assert_close(cl, a.transpose(2, 0, 1))
    e = x[:, :1].expand(2, 3, 4).clone()
    assert e.is_contiguous()


@pytest.mark.parametrize(
    "cut",
    [
        lambda t: t[:0],
        lambda t: t[1:1],
        lambda t: t.narrow(1, 0, 0),
        lambda t: t[:, :0],
        lambda t: t[:0].t(),
        lambda t: t.as_strided((0, 3), (1, 5)),
    ],
    ids=["rows0", "rows1:1", "narrow0", "cols0", "rows0_t", "as_strided0"],
)
def test_empty_cut_of_a_strided_view_is_contiguous(device, cut):
    """torch: a tensor with no elements is contiguous whatever its strides (issue 24, item
    8: the cuda backend over the simulated CuPy said False for t[:0] of a transpose)."""
    t = cr.arange(12.0, device=device).reshape(3, 4).t()
    assert not t.is_contiguous()
    e = cut(t)
    assert e.numel() == 0 and e.is_contiguous()


def test_view_dtype(device):
    x = cr.tensor([1.0, 2.0], device=device)
    v = x.view(dt.int32)
    assert (
        v.dtype is dt.int32
        and v.tolist() == np.array([1.0, 2.0], np.float32).view(np.int32).tolist()
    )
    assert v.data_ptr() == x.data_ptr()


def test_compute_stride_is_torchs():
    assert compute_stride((2, 3), (3, 1), (6,)) == (1,)
    assert compute_stride((2, 3), (1, 2), (6,)) is None
    assert compute_stride((4, 1), (1, 1), (2, 2)) == (2, 1)
    assert compute_stride((2, 4), (8, 1), (2, 2, 2)) == (8, 2, 1)


# -- property test: random view chains ----------------------------------------------------
def _apply_random_op(draw, t, a):
    """One random view op applied to both; returns (t, a) or None when not applicable."""
    kind = draw(
        st.sampled_from(
            [
                "transpose",
                "narrow",
                "select",
                "unsqueeze",
                "squeeze",
                "expand",
                "slice",
                "view",
                "permute",
                "unfold",
                "flatten",
            ]
        )
    )
    nd = a.ndim
    if kind == "unsqueeze" and nd < 5:
        d = draw(st.integers(-nd - 1, nd))
        return t.unsqueeze(d), np.expand_dims(a, d)
    if nd == 0:
        return None
    d = draw(st.integers(-nd, nd - 1))
    n = a.shape[d]
    if kind == "transpose":
        e = draw(st.integers(-nd, nd - 1))
        return t.transpose(d, e), np.swapaxes(a, d, e)
    if kind == "permute":
        perm = draw(st.permutations(range(nd)))
        return t.permute(*perm), a.transpose(perm)
    if kind == "narrow" and n > 0:
        start = draw(st.integers(0, n - 1))
        length = draw(st.integers(0, n - start))
        return t.narrow(d, start, length), np.take(a, range(start, start + length), axis=d)
    if kind == "select" and n > 0:
        i = draw(st.integers(-n, n - 1))
        return t.select(d, i), np.take(a, i, axis=d)
    if kind == "squeeze":
        return t.squeeze(d), (np.squeeze(a, d) if n == 1 else a)
    if kind == "expand" and n == 1:
        k = draw(st.integers(0, 3))
        shape = list(a.shape)
        shape[d] = k
        return t.expand(*shape), np.broadcast_to(a, shape)
    if kind == "slice" and n > 0:
        start = draw(st.integers(0, n))
        step = draw(st.integers(1, 3))
        idx = (slice(None),) * (d % nd) + (slice(start, None, step),)
        return t[idx], a[idx]
    if kind == "view":
        # numpy reshape without copy == torch view: both must agree on feasibility
        strides = compute_stride(a.shape, t.stride(), (a.size,))
        if strides is None:
            with pytest.raises(RuntimeError, match="reshape"):
                t.view(-1)
            return None
        return t.view(-1), a.reshape(-1)
    if kind == "unfold" and n > 0:
        size = draw(st.integers(1, n))
        step = draw(st.integers(1, 2))
        w = np.lib.stride_tricks.sliding_window_view(a, size, axis=d)
        idx = (slice(None),) * (d % nd) + (slice(None, None, step),)
        return t.unfold(d, size, step), w[idx]
    if kind == "flatten":
        return t.flatten(), a.reshape(-1)
    return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_view_chains_match_numpy_and_share_storage(data):
    shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3), label="shape")
    device = data.draw(st.sampled_from(["cpu", "cuda"]), label="device")
    a = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    x = cr.tensor(a, device=device)
    t = x
    for _ in range(data.draw(st.integers(1, 6), label="steps")):
        before = t
        res = _apply_random_op(data.draw, t, a)
        if res is None:
            continue
        t, a = res
        np.testing.assert_array_equal(t.cpu().numpy(), a)
        assert t.shape == a.shape
        if t.untyped_storage() is not before.untyped_storage():
            # only flatten may copy, and only when no view can express it
            assert compute_stride(before.shape, before.stride(), (before.numel(),)) is None
            assert t.is_contiguous()
        elif t.numel():  # torch lets an empty view's offset pass the end (x[1:].narrow)
            assert 0 <= t.storage_offset() <= t.untyped_storage().nbytes() // t.element_size()


@pytest.mark.parametrize(
    "make",
    [
        lambda x: x[:, :1],  # a sliced source (not contiguous): built on the storage's buffer
        lambda x: x[:1].contiguous()[:, :1].contiguous(),  # a contiguous source: on its own
        lambda x: x.transpose(0, 2)[:1],  # a transposed source
    ],
)
def test_expand_is_a_view_that_refuses_writes(device, make):
    x, a = _pair(device)
    src = make(x)
    e = src.expand(3, *src.shape[:-1], 5 if src.shape[-1] == 1 else -1)
    assert_close(e, np.broadcast_to(src.cpu().numpy(), tuple(e.shape)))
    assert e.storage_offset() == src.storage_offset() and e.data_ptr() == src.data_ptr()
    # the new leading dim and the repeated size-1 dims read one element (stride 0)
    assert e.stride() == (0,) + tuple(
        0 if n == 1 and m > 1 else s
        for s, n, m in zip(src.stride(), src.shape, e.shape[1:], strict=True)
    )
    with pytest.raises(RuntimeError, match="single memory location"):
        e.add_(1)
    e.fill_(7)  # torch allows fill_: every alias gets the same value
    assert float(src.sum().item()) == 7 * src.numel()


def test_expand_keeps_storage_alive_and_read_only():
    base = np.arange(12.0).reshape(3, 4)[:, :1]
    base.flags.writeable = False
    for t in (cr.from_numpy(base), cr.from_numpy(np.ascontiguousarray(base)).clone()):
        e = t.expand(2, 3, 4)
        del t
        assert e.sum().item() == 2 * 4 * (0 + 4 + 8)
    ro = cr.from_numpy(base).expand(3, 5)
    with pytest.raises(RuntimeError, match="read-only"):
        ro.fill_(0)
    c = np.arange(3.0)[:, None]
    c.flags.writeable = False  # contiguous and read-only: the flag carries over too
    with pytest.raises(RuntimeError, match="read-only"):
        cr.from_numpy(c).expand(3, 2).fill_(0)


def test_expand_errors_and_size_one_strides(device):
    x = cr.zeros(3, device=device)
    assert x.expand(1, 3).stride() == (3, 1) and x.expand(2, 1, 3).stride() == (0, 3, 1)
    assert cr.zeros(1, 3, device=device).expand(0, 3).stride() == (0, 1)
    with pytest.raises(
        RuntimeError,
        match=r"expanded size of the tensor \(4\) must match "
        r"the existing size \(3\) at non-singleton dimension 1",
    ):
        x.expand(2, 4)
    with pytest.raises(RuntimeError, match="leading, non-existing dimension 0"):
        x.expand(-1, 3)
    with pytest.raises(RuntimeError, match="must be greater or equal"):
        cr.zeros(2, 3, device=device).expand(3)
    with pytest.raises(RuntimeError, match="negative"):
        cr.zeros(1, device=device).expand(-2)
