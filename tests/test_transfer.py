"""gpu_tensor.transfer through the Tensor API: .to/.cuda/.cpu/.copy_/.pin_memory/.is_pinned.

Runs on the emulated cuda device here (synchronous copies, but the real staging pipeline:
worker threads, chunking, the pinned pool over host pages); the `cuda`-marked tests check
the real asynchronous behaviour and overlap on a GPU.
"""

from __future__ import annotations

import gc
import pickle
import sys
import time

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor import transfer
from gpu_tensor.creation import empty, from_numpy
from gpu_tensor.cuda import streams
from gpu_tensor.device import real_cuda_available
from gpu_tensor.memory import pinned
from gpu_tensor.testing import requires_gpu_hardware, synced_seconds
from tests.staging_config import small_staging_chunks
from tests.threads import run_threads


@pytest.fixture(autouse=True)
def _cuda(monkeypatch):
    if not real_cuda_available():
        monkeypatch.setenv("GPU_TENSOR_FALLBACK", "1")


@pytest.fixture
def small_chunks(monkeypatch):
    """64 KiB chunks, 3 workers, 4 slots: modest tensors run the whole pipeline."""
    return small_staging_chunks(monkeypatch, 64 << 10, 16 << 10)


def _ok(host_expected: np.ndarray, t) -> None:
    got = t.cpu().numpy()
    assert got.shape == host_expected.shape and got.dtype == host_expected.dtype
    assert got.tobytes() == np.ascontiguousarray(host_expected).tobytes()


SOURCES = {
    "odd-size": lambda r: r.integers(0, 256, 300_007, dtype=np.uint8),
    "offset": lambda r: r.standard_normal(100_003).astype(np.float32)[5:],
    "strided": lambda r: r.standard_normal((400, 301))[::3, 1::2],
    "transposed": lambda r: r.integers(-1000, 1000, (513, 129), dtype=np.int32).T,
    "float16-step": lambda r: r.standard_normal(50_001).astype(np.float16)[1::5],
    "permute": lambda r: r.standard_normal((9, 31, 40)).astype(np.float32).transpose(1, 2, 0),
    "int64": lambda r: r.integers(-(1 << 62), 1 << 62, 70_001, dtype=np.int64),
    "bool": lambda r: r.integers(0, 2, (77, 999)).astype(bool)[:, ::2],
    "scalar": lambda r: np.array(3.5, np.float64),
    "empty": lambda r: np.empty((0, 3), np.float32),
}


@pytest.mark.parametrize("name", list(SOURCES))
@pytest.mark.parametrize("non_blocking", [False, True])
def test_round_trip_is_byte_exact(small_chunks, name, non_blocking):
    host = SOURCES[name](np.random.default_rng(11))
    expected = host.copy()
    d = from_numpy(host).to("cuda", non_blocking=non_blocking)
    assert d.device.type == "cuda" and tuple(d.shape) == host.shape
    back = d.to("cpu", non_blocking=non_blocking)
    if non_blocking:
        assert back.is_pinned()  # D2H non_blocking lands in pinned memory
        streams.synchronize()
    assert back.numpy().tobytes() == expected.tobytes()


def test_bfloat16_bits_survive(small_chunks):
    import ml_dtypes

    bits = np.random.default_rng(0).integers(0, 1 << 16, 40_001, dtype=np.uint16)
    host = bits.view(ml_dtypes.bfloat16)
    d = from_numpy(host).cuda()
    assert d.cpu().numpy().view(np.uint16).tobytes() == bits.tobytes()


def test_source_can_be_modified_right_after_non_blocking_upload(small_chunks):
    host = np.arange(1_000_003, dtype=np.float32)
    d = from_numpy(host).to("cuda", non_blocking=True)
    host[...] = -1  # allowed: the call returned only after reading the source
    streams.synchronize()
    assert np.array_equal(d.cpu().numpy(), np.arange(1_000_003, dtype=np.float32))


def test_pinned_tensors(small_chunks):
    p = empty(1000, 3, pin_memory=True)
    assert p.is_pinned() and p.is_cuda is False
    assert p[5:].is_pinned() and p.t().is_pinned()  # views of pinned memory are pinned
    assert not from_numpy(np.zeros(10)).is_pinned()
    assert not p.cuda().is_pinned()
    host = np.random.default_rng(1).standard_normal((300, 200))
    q = from_numpy(host).pin_memory()
    assert q.is_pinned() and np.array_equal(q.numpy(), host)
    assert q.pin_memory() is q  # already pinned: itself, as torch
    assert q.data_ptr() != from_numpy(host).data_ptr()


def test_pinned_block_returns_to_pool_when_last_view_dies():
    p = transfer.empty_pinned((1 << 16,), "float32")
    pool = pinned.default_pool()
    before = pool.stats()["allocation.all.current"]
    view = p.numpy()[10:]
    del p
    gc.collect()
    assert pool.stats()["allocation.all.current"] == before  # a numpy view keeps it
    del view
    gc.collect()
    assert pool.stats()["allocation.all.current"] == before - 1


def test_pinned_upload_records_the_stream(monkeypatch):
    pool = pinned.default_pool()
    seen = []
    real = pool.record_stream
    monkeypatch.setattr(pool, "record_stream", lambda b, s: (seen.append((b, s)), real(b, s)))
    p = from_numpy(np.arange(5000.0)).pin_memory()
    s = streams.Stream()
    with streams.stream(s):
        d = p.to("cuda", non_blocking=True)
    assert seen and seen[0][1] == s, "the pinned block must wait for the copy's stream"
    assert seen[0][0] is pool.owner(p.data_ptr())
    assert np.array_equal(d.cpu().numpy(), np.arange(5000.0))


def test_record_stream_accepts_streams_and_refuses_other_objects():
    p = transfer.empty_pinned((100,), "float32")
    s = streams.Stream()
    p.record_stream(s)
    block = pinned.default_pool().owner(p.data_ptr())
    assert s in block.streams
    with pytest.raises(TypeError, match="record_stream needs"):
        p.record_stream("not a stream")
    d = from_numpy(np.zeros(100)).cuda()
    d.record_stream(s)  # cuda tensors: the device allocator notes the stream
    block = d.untyped_storage()._block
    if block is not None:  # the emulated device's storages carry their allocator block
        assert s.ptr in block.stream_uses


def test_non_blocking_d2h_result_valid_after_wait_ready(small_chunks):
    d = from_numpy(np.arange(70_000, dtype=np.int32)).cuda()
    h = d.to("cpu", non_blocking=True)
    transfer.wait_ready(h)
    assert np.array_equal(h.numpy(), np.arange(70_000, dtype=np.int32))
    transfer.wait_ready(h)  # idempotent
    transfer.wait_ready(from_numpy(np.zeros(3)))  # not a pending copy: no-op


def test_copy_into_strided_and_pinned_destinations(small_chunks):
    rng = np.random.default_rng(5)
    host = rng.standard_normal((200, 300)).astype(np.float32)
    # host -> strided device destination
    dbig = from_numpy(np.zeros((200, 600), np.float32)).cuda()
    dview = dbig[:, ::2]
    dview.copy_(from_numpy(host), non_blocking=True)
    streams.synchronize()
    assert np.array_equal(dbig.cpu().numpy()[:, ::2], host)
    assert not dbig.cpu().numpy()[:, 1::2].any()
    # device -> strided pageable host destination
    hbig = from_numpy(np.zeros((400, 300), np.float32))
    hbig[::2].copy_(dview)
    assert np.array_equal(hbig.numpy()[::2], host) and not hbig.numpy()[1::2].any()
    # device -> pinned destination, non_blocking
    pin = empty(200, 300, dtype="float32", pin_memory=True)
    pin.copy_(dview, non_blocking=True)
    streams.synchronize()
    assert np.array_equal(pin.numpy(), host)


def test_copy_validates_shapes():
    a = from_numpy(np.zeros(4)).cuda()
    with pytest.raises(ValueError, match="equal shapes"):
        transfer.copy_(a, from_numpy(np.zeros(5)))


def test_transfers_from_many_threads(small_chunks):
    errors = []

    def work(seed):
        rng = np.random.default_rng(seed)
        for _ in range(6):
            host = rng.standard_normal((int(rng.integers(1, 400)), 129))[:, ::2]
            d = from_numpy(host).to("cuda", non_blocking=bool(seed % 2))
            back = d.cpu()
            if not np.array_equal(back.numpy(), host):
                errors.append(seed)

    run_threads(work, 4)
    assert not errors


def test_pinning_failure_surfaces_and_pool_stays_usable(small_chunks, monkeypatch):
    from gpu_tensor.backends.cuda_pinned import RegisterSource
    from gpu_tensor.memory.raw import RawOutOfMemory

    fail = {"on": True}

    def register(ptr, n):
        if fail["on"]:
            raise RawOutOfMemory("injected: cudaHostRegister refused")

    pool = pinned.PinnedPool(RegisterSource(register, lambda p: None), transfer._record_event)
    monkeypatch.setattr(pinned, "_default", pool)
    host = np.ones(300_000, np.float32)
    with pytest.raises(pinned.PinnedMemoryError, match="could not page-lock"):
        from_numpy(host).cuda()
    assert pool.stats()["allocation.all.current"] == 0
    fail["on"] = False
    assert np.array_equal(from_numpy(host).cuda().cpu().numpy(), host)


def test_host_memory_stats_count_staging(small_chunks):
    from_numpy(np.ones(500_000, np.float32)).cuda()
    s = pinned.host_memory_stats()
    assert s["reserved_bytes.all.current"] > 0
    assert s["allocation.all.current"] >= 0 and s["num_host_alloc"] >= 1
    pinned.empty_host_cache()
    assert pinned.host_memory_stats()["cached_bytes"] == 0


def test_synced_seconds_times_one_call_of_fn():
    calls = []
    t = synced_seconds(lambda: (calls.append(1), time.sleep(0.01)))
    assert calls == [1] and t >= 0.01


@pytest.mark.cuda
@requires_gpu_hardware  # real timing / a real GPU in a subprocess
def test_real_copies_overlap_compute():
    from gpu_tensor.testing import cupy_module

    cupy = cupy_module()

    x = cupy.ones(1 << 27, cupy.float32)  # 512 MiB: each multiply moves 1 GiB of HBM
    pinned_src = empty(512 << 20, dtype="uint8", pin_memory=True)
    pageable_src = np.ones(512 << 20, np.uint8)
    comp, side = streams.Stream(), streams.Stream()

    def compute():
        with streams.stream(comp):
            for _ in range(40):
                cupy.multiply(x, 1.0001, out=x)

    def upload(src):
        with streams.stream(side):
            src.to("cuda", non_blocking=True)

    for src in (pinned_src, from_numpy(pageable_src)):
        upload(src)  # warm: pool fill, allocator
        t_comp, t_copy = synced_seconds(compute), synced_seconds(lambda s=src: upload(s))
        t_both = synced_seconds(lambda s=src: (compute(), upload(s)))
        hidden = (t_comp + t_copy - t_both) / min(t_comp, t_copy)
        assert hidden > 0.5, f"only {hidden:.0%} of the shorter phase was overlapped"


@pytest.mark.cuda
@requires_gpu_hardware  # real timing / a real GPU in a subprocess
def test_real_non_blocking_upload_returns_before_the_copy_ends():
    host = empty(1 << 30, dtype="uint8", pin_memory=True)  # ~20 ms over PCIe
    host.numpy()[:] = 7
    s = streams.Stream()
    with streams.stream(s):
        d = host.to("cuda", non_blocking=True)
        assert not s.query(), "a pinned non_blocking upload should still be in flight"
    s.synchronize()
    assert int(d[-1].item()) == 7


class _Landing:
    """A device->host copy still in flight: its bytes arrive when the host waits on it."""

    def __init__(self, t, values):
        self.t, self.values, self.waits = t, values, 0

    def query(self) -> bool:
        return False

    def synchronize(self) -> None:
        self.waits += 1
        self.t._data[...] = self.values


def _in_flight(h):
    """Make pinned `h` look like a non_blocking copy's result that has not landed yet."""
    block = transfer._pinned_block(h)
    event = _Landing(h, h._data.copy())
    h._data[...] = 0  # stale bytes until the copy lands
    transfer._mark_landing(block, event)
    return event


HOST_READS = {
    "numpy": lambda t: t.numpy().tolist(),
    "item": lambda t: [t.item()],
    "tolist": lambda t: t.tolist(),
    "__array__": lambda t: np.asarray(t).tolist(),
    "repr": lambda t: [41] if "[41]" in repr(t) else repr(t),
    "tensor(t)": lambda t: gt.tensor(t).tolist(),
    "pickle": lambda t: pickle.loads(pickle.dumps(t)).tolist(),
}


@pytest.mark.parametrize("read", list(HOST_READS))
def test_host_reads_wait_for_a_copy_still_landing(read):
    h = from_numpy(np.array([41], np.int64)).cuda().to("cpu", non_blocking=True)
    assert h.is_pinned()
    event = _in_flight(h)
    assert HOST_READS[read](h) == [41]
    assert event.waits == 1
    HOST_READS[read](h)
    assert event.waits == 1  # landed: later reads do not wait again


def test_ops_on_a_landing_copy_do_not_wait():
    """As in torch: computing on a non_blocking copy's result needs a sync by the user."""
    h = from_numpy(np.array([41], np.int64)).cuda().to("cpu", non_blocking=True)
    event = _in_flight(h)
    h + 1
    assert event.waits == 0
    transfer.wait_ready(h)  # land it: the fake event holds h, which must not outlive the test


@pytest.mark.parametrize("non_blocking", [False, True])
def test_moves_keep_a_dense_layout(non_blocking):
    x = from_numpy(np.arange(24.0, dtype=np.float32).reshape(2, 3, 4))
    for src in (x.permute(2, 0, 1), x.transpose(0, 1), x[1].t(), x.mT):
        d = src.to("cuda", non_blocking=non_blocking)
        assert d.stride() == src.stride() and d.tolist() == src.tolist()
        assert d.cuda().stride() == src.stride()
        assert src.to("cuda", gt.float64, non_blocking).stride() == src.stride()
        h = d.to("cpu", non_blocking=non_blocking)
        if non_blocking:
            assert h.is_pinned()
            streams.synchronize()
        assert h.stride() == src.stride() and h.tolist() == src.tolist()
        assert d.cpu().stride() == src.stride()


def test_moves_of_gapped_or_overlapping_sources_are_contiguous():
    x = from_numpy(np.arange(24.0, dtype=np.float32).reshape(4, 6))
    for src in (x[:, ::2], x[:1].expand(3, 6), x[:, 1:].t()):
        d = src.cuda()
        assert d.is_contiguous() and d.tolist() == src.tolist()
        h = d.cpu()
        assert h.tolist() == src.tolist() and h.is_contiguous()


def test_a_missing_transfer_module_is_an_error_not_a_silent_fallback(monkeypatch):
    x = from_numpy(np.arange(4.0))
    monkeypatch.delattr(gt, "transfer")
    monkeypatch.setitem(sys.modules, "gpu_tensor.transfer", None)
    with pytest.raises(ImportError):
        x.cuda()


def test_finished_landings_are_forgotten():
    """Results nobody reads must not pile up in the in-flight table (their copies are done)."""
    d = from_numpy(np.arange(8, dtype=np.int32)).cuda()
    keep = [d.to("cpu", non_blocking=True) for _ in range(3 * transfer._LANDING_PRUNE_FROM)]
    assert len(transfer._landing) <= transfer._LANDING_PRUNE_FROM
    assert all(h.tolist() == list(range(8)) for h in keep)
