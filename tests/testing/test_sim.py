"""The simulated CuPy itself: real signatures, cupy's departures, asynchronous streams,
races named with both streams and the buffer, kernels from source, counters."""

import gc
import re

import numpy as np
import pytest

from gpu_tensor.kernel import emulate
from gpu_tensor.testing import sim
from gpu_tensor.testing.sim import signatures


@pytest.fixture
def cp():
    # earlier tests' garbage first: a finaliser that frees or syncs would otherwise act on
    # the fresh machine mid-test (a host-seen completion orders work the test expects to race)
    gc.collect()
    sim.reset(devices=2, seed=1)
    return sim.module()


def test_cython_signature_table_matches_the_installed_cupy():
    for path, line in signatures.CYTHON.items():
        doc = (signatures.real_object(path).__doc__ or "").strip().splitlines()
        assert doc and doc[0].strip() == line, path


def test_calls_are_bound_against_cupys_signatures(cp):
    with pytest.raises(TypeError, match="sparse"):
        cp.indices((2, 3), sparse=True)
    with pytest.raises(TypeError, match="memcpyAsync"):
        cp.cuda.runtime.memcpyAsync(0, 0, 4, 1)  # the stream argument is missing
    with pytest.raises(AttributeError):
        getattr(cp, "no_such_function")  # noqa: B009 - cupy has no such name
    a = cp.ones(3, dtype=np.float32)
    with pytest.raises(TypeError, match=r"did not understand .*\['out'\]"):
        cp.einsum("i,i", a, a, out=None)  # **kwargs in its signature, refused in its body
    assert float(cp.einsum("i,i", a, a, dtype=np.float64).get()) == 3.0


def _argument_patterns(sig):
    """Calls to try against `sig`: every count of positionals (one past its end too), each
    parameter by keyword after each count, an unknown keyword, and every parameter named."""
    names = [
        p.name for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    for n in range(len(names) + 2):
        yield tuple(range(n)), {}
        for name in names:
            yield tuple(range(n)), {name: 0}
        yield tuple(range(n)), {"no_such_keyword": 0}
    yield (), dict.fromkeys(names, 0)


@pytest.mark.parametrize(
    "path",
    sorted(signatures.CYTHON) + ["indices", "einsum", "asarray", "ElementwiseKernel", "RawKernel"],
)
def test_the_fast_binder_accepts_exactly_what_signature_bind_accepts(path):
    sig = signatures.signature_of(path)
    binder = signatures._binder(path)
    assert binder is not None, path  # written as Python: the slow path is not what runs
    for args, kwargs in _argument_patterns(sig):
        try:
            sig.bind(*args, **kwargs)
            expected = True
        except TypeError:
            expected = False
        try:
            binder(*args, **kwargs)
            got = True
        except TypeError:
            got = False
        assert got == expected, (path, args, kwargs)
        if not expected:
            with pytest.raises(TypeError, match=re.escape(f"cupy.{path}(): ")):
                signatures.bind(path, args, kwargs)  # inspect's message, with cupy's name


def test_empty_arrays_are_contiguous_whatever_their_strides(cp):
    """cupy's _update_c/f_contiguity: size 0 means C- and F-contiguous (core.pyx)."""
    a = cp.arange(12, dtype=cp.float32).reshape(3, 4).T
    assert not a.flags.c_contiguous
    e = cp.ndarray((0, 3), cp.float32, memptr=a.data, strides=(4, 16))  # a[:0]'s layout
    assert e.flags.c_contiguous and e.flags.f_contiguous


# (shape, strides in elements): size-1 dims with any stride, empty, transposed, sliced
_LAYOUTS = [
    ((3, 4), (4, 1)),
    ((3, 4), (1, 3)),
    ((3, 1, 4), (4, 99, 1)),
    ((1, 4), (7, 1)),
    ((4, 1), (1, 5)),
    ((3, 4), (8, 2)),
    ((0, 3), (1, 4)),
    ((2, 0), (9, 9)),
    ((1,), (3,)),
    ((), ()),
    ((5,), (2,)),
]


def _real_cupy_flags(shape, strides):
    """(_c_contiguous, _f_contiguous) of a real cupy.ndarray of this layout, made over host
    memory (no GPU needed to make one; None where this cupy cannot)."""
    cupy = pytest.importorskip("cupy")
    host = np.zeros(64, np.float32)
    try:
        mem = cupy.cuda.UnownedMemory(host.ctypes.data, host.nbytes, host, 0)
        a = cupy.ndarray(shape, np.float32, cupy.cuda.MemoryPointer(mem, 0), strides)
        return bool(a._c_contiguous), bool(a._f_contiguous)
    except Exception:  # noqa: BLE001 - an install that needs a device for it: numpy decides
        return None


@pytest.mark.parametrize("shape,strides", _LAYOUTS)
def test_contiguity_fields_are_cupys(cp, shape, strides):
    """The simulated ndarray's `_c_contiguous` / `_f_contiguous` (cupy's readonly fields,
    read by eager.run_planned's plan key) and `flags` say what numpy's flags say for the
    same layout, and what cupy's own fields say where a cupy array can be made here."""
    base = cp.zeros(64, dtype=cp.float32)
    a = cp.ndarray(shape, cp.float32, memptr=base.data, strides=tuple(4 * s for s in strides))
    host = np.lib.stride_tricks.as_strided(
        np.zeros(64, np.float32), shape, tuple(4 * s for s in strides)
    )
    want = (host.flags.c_contiguous, host.flags.f_contiguous)
    assert (a._c_contiguous, a._f_contiguous) == want
    assert (a.flags.c_contiguous, a.flags.f_contiguous) == want
    real = _real_cupy_flags(shape, tuple(4 * s for s in strides))
    assert real is None or real == want


def test_departures_from_numpy(cp):
    a = cp.arange(5, dtype=cp.float32)
    assert a[cp.array([7, -6])].get().tolist() == [2.0, 4.0]  # wraps
    with pytest.raises(NotImplementedError, match="multiply.at"):
        cp.multiply.at(a, cp.array([0]), 2.0)
    with pytest.raises(TypeError, match="int8"):
        cp.add.at(cp.zeros(3, cp.int8), cp.array([0]), 1)
    f = cp.asarray([np.nan, np.inf, -1.0, 300.0])
    assert f.astype(cp.uint8).get().tolist() == [0, 255, 0, 255]  # saturates
    with pytest.raises(TypeError, match="Implicit conversion"):
        np.asarray(a)
    with pytest.raises(ValueError, match="Unsupported dtype"):
        cp.empty(3, dtype=np.dtype("V2"))
    assert isinstance(a.sum(), cp.ndarray) and a.sum().ndim == 0


def test_functions_numpy_lacks_as_ufuncs_are_ufuncs_with_cupys_loops(cp):
    real = signatures.real_object("sinc")
    assert (cp.sinc.nin, cp.sinc.types) == (real.nin, real.types)
    x = np.array([0.0, 0.5, 2.0], np.float32)
    got = cp.sinc(cp.asarray(x))
    assert got.dtype == np.float32 and np.allclose(got.get(), np.sinc(x))
    assert cp.sinc(cp.arange(3, dtype=cp.int8)).dtype == np.float16  # numpy: float64
    for name in ("fix", "i0", "sinc"):  # against cupy's own choice (private API: may go)
        ops = getattr(signatures.real_object(name), "_ops", None)
        guess = getattr(ops, "_guess_routine_from_in_types", None)
        for dtype in map(np.dtype, "?bBhHiIlLefd" if guess else ""):
            want = guess((dtype,)).out_types[0]
            assert getattr(cp, name)(cp.zeros(2, dtype)).dtype == want, (name, dtype)
    sign, logdet = cp.linalg.slogdet(cp.eye(2, dtype=cp.float64) * 2)
    assert type(cp.linalg.slogdet(cp.eye(2))) is tuple  # plain, as cupy's (numpy: named)
    assert float(sign.get()) == 1.0 and np.isclose(float(logdet.get()), np.log(4.0))


def test_work_runs_only_when_ordered(cp):
    s = cp.cuda.Stream(non_blocking=True)
    host = np.full(4, 5.0, np.float32)
    pinned = cp.cuda.runtime.hostAlloc(16, 1)
    view = np.frombuffer(
        (np.ctypeslib.as_ctypes_type(np.uint8) * 16).from_address(pinned), np.float32
    )
    view[:] = host
    d = cp.empty(4, cp.float32)
    rt = cp.cuda.runtime
    rt.memcpyAsync(d.data.ptr, pinned, 16, rt.memcpyHostToDevice, s.ptr)
    view[:] = 9.0  # the copy is still queued: it will read 9s
    s.synchronize()
    with cp.cuda.Stream.null:
        pass
    ev = cp.cuda.Event()
    ev.record(s)
    cp.cuda.Stream.null.wait_event(ev)
    assert d.get().tolist() == [9.0] * 4


def test_unordered_streams_race_and_the_error_names_both(cp):
    y = cp.zeros(1000, cp.float32)  # legacy default stream
    s = cp.cuda.Stream(non_blocking=True)
    with s, pytest.raises(sim.SimRaceError) as err:
        y += 1
    msg = str(err.value)
    assert "race" in msg and "legacy default stream of cuda:0" in msg
    assert f"stream {s.ptr:#x}" in msg and "device buffer" in msg
    sim.set_race_mode("warn")
    with s, pytest.warns(sim.SimRaceWarning, match="race"):
        y += 1
    ev = cp.cuda.Event()
    ev.record(cp.cuda.Stream.null)
    s.wait_event(ev)
    n = len(sim.races())
    with s:
        y *= 2  # ordered now
    assert len(sim.races()) == n


def test_memcpy_kind_and_dead_handles_are_checked(cp):
    rt = cp.cuda.runtime
    d = cp.empty(4, cp.float32)
    host = np.zeros(4, np.float32)
    with pytest.raises(rt.CUDARuntimeError, match="HostToDevice"):
        rt.memcpyAsync(host.ctypes.data, d.data.ptr, 16, rt.memcpyHostToDevice, 0)
    s = cp.cuda.Stream()
    handle = s.ptr
    del s
    with pytest.raises(rt.CUDARuntimeError, match="does not exist"):
        rt.eventRecord(cp.cuda.Event().ptr, handle)


def test_cudafree_syncs_the_device_and_counters_count(cp):
    sim.reset_counters()
    p = cp.cuda.runtime.malloc(1 << 20)
    cp.cuda.runtime.free(p)
    c = sim.counters()
    assert c["mallocs"] == 1 and c["frees"] == 1 and c["driver_calls"] == 2
    assert c["device_syncs"] == 1
    cp.arange(10).get()
    assert sim.counters()["bytes_copied"] >= 80


def test_legacy_stream_of_each_device_is_its_own(cp):
    with cp.cuda.Device(1):
        x = cp.zeros(100, cp.float32)
    ev = cp.cuda.Event()
    ev.record(cp.cuda.Stream.null)  # on device 0's legacy stream: does not order device 1
    s = cp.cuda.Stream(non_blocking=True)
    s.wait_event(ev)
    with s, pytest.raises(sim.SimRaceError, match="cuda:1"):
        x += 1


@pytest.mark.skipif(emulate.compiler() is None, reason="kernels run under g++ emulation")
def test_raw_kernels_run_their_source(cp):
    src = r"""extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }"""
    k = cp.RawModule(code=src).get_function("axpy")
    x, y = cp.arange(100, dtype=cp.float32), cp.ones(100, cp.float32)
    sim.reset_counters()
    k((4,), (32,), (np.float32(2.0), x, y, np.int32(100)))
    assert sim.counters()["kernel_launches"] == 1
    assert y.get().tolist() == [2.0 * i + 1 for i in range(100)]
    with pytest.raises(cp.cuda.runtime.CUDARuntimeError, match="1024"):
        k((1,), (2048,), (np.float32(2.0), x, y, np.int32(100)))


class _FinaliserAt(dict):
    """A task's clock whose `at`-th read also does what a finaliser the garbage collector
    might run there does: cudaFree, which synchronises the device (runs queued work)."""

    def __init__(self, vc, at):
        super().__init__(vc)
        self.reads, self.at = 0, at

    def items(self):
        self.reads += 1
        if self.reads == self.at:
            rt = sim.module().cuda.runtime
            rt.free(rt.malloc(256))
        return super().items()


@pytest.mark.parametrize("at", [1, 2])  # while the drive gathers what to run; as it picks
def test_a_device_sync_from_a_finaliser_mid_drive_runs_each_task_once(cp, at):
    rt = cp.cuda.runtime
    s = cp.cuda.Stream(non_blocking=True)
    pinned = rt.hostAlloc(16, 1)
    view = np.frombuffer(
        (np.ctypeslib.as_ctypes_type(np.uint8) * 16).from_address(pinned), np.float32
    )
    d = cp.empty(4, cp.float32)
    for value in (1.0, 2.0, 3.0):  # three copies queued on `s`, none run yet
        view[:] = value
        rt.memcpyAsync(d.data.ptr + 4 * int(value), pinned, 4, rt.memcpyHostToDevice, s.ptr)
    queue = sim.machine().queue(s.ptr)
    first = queue.pending[0]
    first.vc = _FinaliserAt(first.vc, at)
    view[:] = 7.0
    s.synchronize()
    assert first.vc.reads >= at and not queue.pending and queue.done == queue.clock
    assert d.get()[1:].tolist() == [7.0] * 3


def test_finalisers_calling_the_driver_at_any_allocation_neither_hang_nor_corrupt(cp):
    """The collector runs finalisers at arbitrary allocations, also inside the simulator's
    own bookkeeping; one that calls cudaMalloc/cudaFree and records an event must find
    the locks re-entrant and the queues consistent."""
    import gc

    fired = []

    class Litter:
        def __init__(self):
            self.me = self  # a cycle: only the collector frees it

        def __del__(self):
            if fired[-1:] != [None]:
                fired.append(1)
                rt = cp.cuda.runtime
                rt.free(rt.malloc(256))
                cp.cuda.Event().record(cp.cuda.Stream.null)
                Litter()

    s = cp.cuda.Stream()
    x = cp.arange(1000, dtype=cp.float32)
    old = gc.get_threshold()
    gc.set_threshold(1)
    try:
        Litter()
        for _ in range(10):
            with s:
                x = x + 1
            x = x * 1
            ev = cp.cuda.Event()
            ev.record(s)
            assert isinstance(ev.done, bool)
    finally:
        gc.set_threshold(*old)
        fired.append(None)
    gc.collect()
    assert len(fired) > 20
    assert x.get().tolist() == (np.arange(1000, dtype=np.float32) + 10).tolist()
