"""The cuda warm path of copies (backends/cuda_warm.py `bind_copy`): a dtype cast, and (below)
`clone()` and `contiguous()`. The first op of a key takes the general path and binds, from
its result, the entry that later ones take: one launch (or one memcpy) and two Python frames
of ours outside the allocator. Checked on the real CUDA backend over the simulated CuPy:
exact counts, and the warm result against the general path's on the same inputs (dtype,
shape, strides, bits, block size and tag, creation site)."""

import inspect

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor import device as dv
from gpu_tensor.testing import requires_real_cuda
from tests.fusion.test_warm_entry import _frames  # frames of ours outside the allocator


def _sim():
    if not dv.cuda_is_simulated():
        pytest.skip("counts launches and frames through the simulated CuPy")
    from gpu_tensor.testing import sim

    return sim


def _counted(sim, fn):
    """(result, the simulator's counters of `fn()` alone, its frames of ours)."""
    sim.synchronize()
    sim.reset_counters()
    r, seen = _frames(fn)
    sim.synchronize()
    return r, sim.counters(), seen


def _same(warm, general):
    """The warm result is the general path's: dtype, shape, strides, bits, and its block's
    size and tag."""
    assert warm.dtype is general.dtype
    assert warm.shape == general.shape and warm.stride() == general.stride()
    w, g = warm.cpu().numpy(), general.cpu().numpy()
    assert w.dtype == g.dtype
    assert w.tobytes() == g.tobytes()  # bit for bit: NaN payloads, -0.0, wrapped integers
    if warm.numel():
        lookup = warm.device._backend._alloc.lookup
        bw, bg = lookup(warm._data.data.ptr), lookup(general._data.data.ptr)
        assert bw.requested_size == bg.requested_size and bw.tag == bg.tag


def _sources():
    """float32/float16/bfloat16/int64/bool/complex64 sources with NaN, inf, -0.0, large and
    negative values, in several layouts: contiguous, transposed, sliced (unaligned start),
    a stride-0 broadcast, 0-dim, empty."""
    rng = np.random.default_rng(3)
    f = rng.standard_normal((5, 8)).astype(np.float32) * 300
    f.flat[:6] = [np.nan, np.inf, -np.inf, -0.0, 3e9, -129.5]
    with np.errstate(over="ignore", invalid="ignore"):
        base = {
            gt.float32: f,
            gt.float16: f.astype(np.float16),
            gt.bfloat16: f,
            gt.int64: rng.integers(-(2**40), 2**40, (5, 8)),
            gt.bool: rng.integers(0, 2, (5, 8)).astype(bool),
            gt.complex64: (f + 1j * f[::-1]).astype(np.complex64),
        }
    out = []
    for dt, host in base.items():
        t = gt.from_numpy(host).to(dtype=dt).to("cuda")
        out += [
            (f"{dt.name} contiguous", t),
            (f"{dt.name} transposed", t.t()),
            (f"{dt.name} sliced", t[1:, 1:]),
            (f"{dt.name} broadcast", t[:1].expand(4, 8)),
            (f"{dt.name} 0-dim", t[2, 3]),
            (f"{dt.name} empty", t[:0]),
        ]
    return out


# Every source is cast to these in its contiguous layout (NaN and inf to int, float to bool,
# complex to real, bfloat16 both ways); in its other layouts, to the first (each pair of
# dtypes and kernel is one more compile on a cold kernel cache: ~13 s for these here).
_TARGETS = [gt.float16, gt.int32, gt.bfloat16, gt.bool, gt.complex64]


@requires_real_cuda
def test_a_warm_cast_gives_what_the_general_path_gives():
    """Every source dtype and layout, cast to dtypes with a kernel: the first cast of a key
    (general, binding) and the next two (warm) are bit for bit the general path's result,
    with its strides and its block's size and tag."""
    _sim()
    from gpu_tensor.transfer.move import astype

    for name, src in _sources():
        for dt in _TARGETS if name.endswith("contiguous") else _TARGETS[:1]:
            if dt is src.dtype:
                continue
            general = astype(src, dt)
            for _ in range(3):
                try:
                    _same(src.to(dt), general)
                except AssertionError as exc:
                    raise AssertionError(f"{name} -> {dt.name}") from exc


_CAST, _RUN = "_caster.<locals>.method", "bind_copy.<locals>.run"  # (code names)


@requires_real_cuda
@pytest.mark.parametrize(
    ("expr", "frames"),
    [
        ("x.half()", [_CAST, _RUN]),
        ("x.to(gt.float64)", ["to", _CAST, _RUN]),
        ("x.type(gt.int32)", ["_type", "to", _CAST, _RUN]),
        ("t.bool()", [_CAST, _RUN]),
        ("s.to(s.device, gt.float16)", ["to", _CAST, _RUN]),
        ("s.to('cuda', gt.float16)", ["to", "resolve", "_make", "Device.__hash__", _CAST, _RUN]),
    ],
)
def test_a_warm_cast_is_one_launch_and_its_entry(expr, frames):
    """A warm cast is one kernel launch, with no sync, host wait, memcpy or cupy routine,
    in the cast method and the entry (and `to`'s parsing where the call goes through it)."""
    sim = _sim()
    x = gt.from_numpy(np.arange(-16, 16, dtype=np.float32).reshape(4, 8)).to("cuda")
    names = {"gt": gt, "x": x, "t": x.t(), "s": x[:, 1:]}
    op = eval("lambda: " + expr, dict(names))  # noqa: S307 - the test's own text
    op()
    r, c, seen = _counted(sim, op)
    assert c["kernel_launches"] == 1, c
    assert c["device_syncs"] == 0 and c["host_waits"] == 0, c
    assert c["memcpy_calls"] == 0 and c["bytes_copied"] == 0 and c["cupy_routines"] == 0, c
    assert seen == frames
    on_cpu = {k: v if k == "gt" else v.cpu() for k, v in names.items()}
    want = eval(expr.replace("'cuda'", "'cpu'"), on_cpu)  # noqa: S307
    assert r.dtype is want.dtype and r.stride() == want.stride()
    np.testing.assert_array_equal(r.cpu().numpy(), want.numpy())


@requires_real_cuda
@pytest.mark.parametrize("kind", ["casts", "copies"])
def test_a_warm_copys_creation_site_is_the_callers_line(kind):
    """A cast's, clone()'s and contiguous()'s block is created, for the allocator's
    record, at the line that wrote the op: on the general path, then on the warm one,
    through `to` too."""
    _sim()
    from gpu_tensor.memory import live

    if not live.enabled():
        pytest.skip("creation sites are off (GPU_TENSOR_RECORD_SITES=0)")
    x = gt.from_numpy(np.ones((3, 5), np.float32)).to("cuda")
    lookup = x.device._backend._alloc.lookup
    me = "test_a_warm_copys_creation_site_is_the_callers_line"
    if kind == "casts":
        ops = [(x, "double", ()), (x, "to", (gt.int8,))]
    else:
        ops = [(x, "clone", ()), (x.t(), "contiguous", ())]
    for _ in range(3):
        for src, name, args in ops:
            line = inspect.currentframe().f_lineno + 1
            r = getattr(src, name)(*args)
            assert lookup(r._data.data.ptr).site[1:] == (line, me), name


@requires_real_cuda
def test_a_cast_that_requires_grad_or_has_no_kernel_takes_the_general_path():
    """A source that requires grad records ToCopyBackward0 on a key already warm; a cast
    with no kernel (uint32) keeps False under its key and is computed by the general path
    each time."""
    _sim()
    host = np.array([[1.5, -2.0, 3.25]], np.float32)
    x = gt.from_numpy(host).to("cuda")
    x.half()
    x.half()
    g = gt.from_numpy(host).to("cuda").requires_grad_()
    h = g.half()
    assert type(h.grad_fn).__name__ == "ToCopyBackward0"
    h.float().sum().backward()
    np.testing.assert_array_equal(g.grad.cpu().numpy(), np.ones_like(host))
    u = gt.from_numpy(np.array([1, 7, 2**31], np.uint32)).to("cuda")
    backend = u.device._backend
    for _ in range(2):
        np.testing.assert_array_equal(u.float().cpu().numpy(), [1.0, 7.0, 2.0**31])
    assert backend.warm[("to:float32", u._warm_key())] is False


def _layouts():
    """Sources for clone()/contiguous() in every layout: contiguous, transposed, sliced (an
    unaligned start), a stride-0 broadcast, size-1 dims, a permuted 3-d, 0-dim, empty; of
    float32, float16, bfloat16, int64, bool and complex64."""
    out = []
    for name, t in _sources():
        if name.endswith(("contiguous", "transposed")):
            out.append((name + " size-1 dims", t[:, :1] if "contiguous" in name else t[1:2]))
        if name.endswith("contiguous"):
            out.append((name + " permuted 3-d", t.reshape(5, 2, 4).permute(2, 0, 1)))
        out.append((name, t))
    return out


@requires_real_cuda
def test_a_warm_clone_or_contiguous_gives_what_the_general_path_gives():
    """clone() (preserve_format and contiguous_format) and contiguous() of every layout:
    the first call of a key (general, binding) and the next two (warm) are bit for bit the
    general path's result, with its strides and its block's size and tag."""
    _sim()
    from gpu_tensor import _layout

    for name, src in _layouts():
        cases = [
            (lambda s=src: s.clone(), _layout._clone(src, None)),
            (lambda s=src: s.clone(memory_format=gt.preserve_format), _layout._clone(src, None)),
            (
                lambda s=src: s.clone(memory_format=gt.contiguous_format),
                _layout._clone(src, gt.contiguous_format),
            ),
        ]
        if not src.is_contiguous():
            cases.append((src.contiguous, _layout._copy_of(src)))
        for k, (op, general) in enumerate(cases):
            for _ in range(3):
                try:
                    _same(op(), general)
                except AssertionError as exc:
                    raise AssertionError(f"{name}, case {k}") from exc


@requires_real_cuda
@pytest.mark.parametrize(
    ("expr", "launches", "memcpys"),
    [
        ("x.clone()", 0, 1),
        ("t.clone()", 0, 1),  # its own (dense) strides kept: the bytes as they are
        ("s.clone()", 1, 0),
        ("t.contiguous()", 1, 0),
        ("s.contiguous()", 1, 0),
    ],
)
def test_a_warm_clone_or_contiguous_is_one_launch_or_memcpy_and_its_entry(expr, launches, memcpys):
    """A warm clone of a dense tensor (contiguous or transposed) is one device-to-device
    memcpy; of a sliced one, and contiguous() of a transposed or sliced one, one kernel
    launch: no sync, host wait or cupy routine, in the op (which makes autograd's check
    itself: no wrapper), the helper both ops share and the entry."""
    sim = _sim()
    x = gt.from_numpy(np.arange(-16, 16, dtype=np.float32).reshape(4, 8)).to("cuda")
    names = {"x": x, "t": x.t(), "s": x[:, 1:]}
    op = eval("lambda: " + expr, dict(names))  # noqa: S307 - the test's own text
    op()
    r, c, seen = _counted(sim, op)
    assert c["kernel_launches"] == launches and c["memcpy_calls"] == memcpys, c
    assert c["bytes_copied"] == memcpys * r.nbytes, c
    assert c["device_syncs"] == 0 and c["host_waits"] == 0 and c["cupy_routines"] == 0, c
    assert seen == [expr[2:-2], "_warm", _RUN]
    want = eval(expr, {k: v.cpu() for k, v in names.items()})  # noqa: S307
    assert r.stride() == want.stride() and r.data_ptr() != names[expr[0]].data_ptr()
    np.testing.assert_array_equal(r.cpu().numpy(), want.numpy())


@requires_real_cuda
def test_a_clone_that_requires_grad_records_its_node_on_a_warm_key():
    """A source that requires grad records CloneBackward0 where a plain source of the same
    key takes the warm entry; its gradient flows back."""
    _sim()
    host = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = gt.from_numpy(host).to("cuda")
    x.t().contiguous()
    x.clone()
    g = gt.from_numpy(host).to("cuda").requires_grad_()
    for r in (g.clone(), g.t().contiguous(), g.clone(memory_format=gt.contiguous_format)):
        assert type(r.grad_fn).__name__ == "CloneBackward0"
    (g.clone() * 2).sum().backward()
    np.testing.assert_array_equal(g.grad.cpu().numpy(), np.full_like(host, 2))


@requires_real_cuda
@pytest.mark.parametrize("src", ["x", "x.t()"])
def test_with_several_devices_a_copy_entry_enters_its_device_and_keeps_the_callers_line(
    src, monkeypatch
):
    """With several devices the entry runs inside its device's `with` (a frame more, which
    malloc's `inside` counts): the same values, and the block's creation site is still the
    line that called the op; entries go with the plan cache when it starts over."""
    _sim()
    from gpu_tensor.fusion import eager
    from gpu_tensor.memory import live
    from gpu_tensor.transfer.move import astype

    x = gt.from_numpy(np.arange(15, dtype=np.float32).reshape(3, 5)).to("cuda")
    s = eval(src, {"x": x})  # noqa: S307 - the test's own text
    backend = x.device._backend
    backend.warm.clear()  # (what other tests planned; compiled kernels stay cached)
    general = astype(s, gt.float16)
    sig = ("test:several", s._data.shape)
    backend._one_device = False
    try:
        backend.copy_entry(sig, s._data, general._data, general._warm_key())
    finally:
        backend._one_device = True
    entry = backend.warm[sig]
    assert entry.__qualname__ == "_current.<locals>.on_device"

    def operator(a):  # stands for the op frame the entry counts as inside
        return entry(a)

    line = inspect.currentframe().f_lineno + 1
    out = operator(s._data)
    warm = gt.Tensor._wrap(out, dtype=gt.float16)
    _same(warm, general)
    if live.enabled():
        assert backend._alloc.lookup(out.data.ptr).site[1] == line
    s.half()  # binds its key
    monkeypatch.setattr(eager, "MAX_PLANS", len(backend.warm))
    s.half()  # a key the cache has: no change
    assert sig in backend.warm
    s.to(gt.int8)  # a new key, and the cache is full: it starts over
    assert sig not in backend.warm and len(backend.warm) <= 2


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning")
def test_a_tensor_subclasss_cast_is_its_own_to():
    """x.int(), x.double(), x.to(dtype): a Tensor subclass with its own `to` casts through
    it (a sparse tensor stays sparse, a quantized one refuses), on any device."""
    s = gt.tensor([[0.0, 1.5], [2.0, 0.0]]).to_sparse()
    for r in (s.double(), s.to(gt.float64), s.type(gt.float64)):
        assert type(r) is type(s) and r.dtype is gt.float64
        np.testing.assert_array_equal(r.to_dense().numpy(), [[0.0, 1.5], [2.0, 0.0]])
    q = gt.quantize_per_tensor(gt.tensor([1.0, 2.0]), 0.5, 0, gt.quint8)
    with pytest.raises(RuntimeError, match="quantized"):
        q.int()
