"""gpu_tensor.transfer.staging: the chunked pinned-staging pipeline, driven by a fake *asynchronous*
copy engine (a thread that runs queued copies late and completes events in order), so the
CPU tests see real reordering: a slot reused before its DMA finished, or a DMA reading the
source instead of the slot, shows up as wrong bytes."""

from __future__ import annotations

import ctypes
import queue
import random
import threading
import time

import numpy as np
import pytest

from gpu_tensor.backends.cuda_pinned import RegisterSource
from gpu_tensor.memory.pinned import PinnedMemoryError, PinnedPool
from gpu_tensor.memory.raw import FaultInjectingRawSource
from gpu_tensor.transfer import staging as _staging
from tests.staging_config import small_staging_chunks
from tests.threads import run_threads


class _Ev:
    def __init__(self):
        self._done = threading.Event()

    def query(self):
        return self._done.is_set()

    def synchronize(self):
        assert self._done.wait(10), "copy engine stalled"


class AsyncEngine:
    """A stream: copies and events run later, in order, on a background thread."""

    def __init__(self, delay=0.0005, seed=0):
        self.q: queue.Queue = queue.Queue()
        self.rng = random.Random(seed)
        self.delay = delay
        self.copies = 0
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while True:
            op = self.q.get()
            if op[0] == "copy":
                time.sleep(self.rng.random() * self.delay)  # DMA lags behind the host
                ctypes.memmove(op[1], op[2], op[3])
                self.copies += 1
            else:
                op[1]._done.set()

    def memcpy(self, dst, src, nbytes):
        self.q.put(("copy", dst, src, nbytes))

    def record_event(self):
        ev = _Ev()
        self.q.put(("event", ev))
        return ev

    def synchronize(self):
        self.record_event().synchronize()


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 16 KiB so a few hundred KiB already run a multi-slot, multi-thread pipe."""
    return small_staging_chunks(monkeypatch, 16 << 10, 4 << 10)


def _pool():
    return PinnedPool(RegisterSource(), lambda s: s.record_event())


def _addr(a):
    return a.__array_interface__["data"][0]


CASES = [
    ("contig-odd", lambda r: r.integers(0, 256, 100_003, dtype=np.uint8)),
    ("float-offset", lambda r: r.standard_normal(70_001).astype(np.float32)[3:]),
    ("strided-1d", lambda r: r.standard_normal(200_000)[::7]),
    ("negative", lambda r: r.integers(-9, 9, (300, 211), dtype=np.int16)[::-1, ::-2]),
    ("transpose", lambda r: r.standard_normal((257, 129)).astype(np.float32).T),
    (
        "permute-3d",
        lambda r: r.integers(0, 1 << 30, (17, 33, 65), dtype=np.int64).transpose(2, 0, 1)[1:],
    ),
    ("complex", lambda r: (r.standard_normal(5001) + 1j).astype(np.complex64)[::3]),
    ("bool", lambda r: r.integers(0, 2, (123, 457)).astype(bool)[:, 1:]),
    ("tiny", lambda r: np.arange(3, dtype=np.float64)),
    ("empty", lambda r: np.empty((0, 5), np.float32)),
]


@pytest.mark.parametrize("name,make", CASES, ids=[c[0] for c in CASES])
def test_h2d_then_d2h_byte_exact(small_chunks, name, make):
    rng = np.random.default_rng(7)
    src = make(rng)
    expected = src.copy()
    engine, pool = AsyncEngine(), _pool()
    device = np.full(src.nbytes + 64, 0xAB, np.uint8)  # the "device" buffer, contiguous
    _staging.stage_h2d(src, _addr(device), engine, pool, engine.memcpy)
    src[...] = 0  # the source is ours again the moment the call returns
    engine.synchronize()
    got = device[: src.nbytes].view(src.dtype).reshape(src.shape)
    assert got.tobytes() == expected.tobytes()
    assert (device[src.nbytes :] == 0xAB).all(), "wrote past the end"
    # back into a strided pageable destination
    big = np.zeros((2 * max(src.shape[0], 1),) + src.shape[1:], src.dtype)
    dst = big[::2][: src.shape[0]] if src.ndim else big
    _staging.stage_d2h(_addr(device), dst, engine, pool, engine.memcpy)
    assert dst.tobytes() == expected.tobytes()
    pool.synchronize()
    stats = pool.stats()
    assert stats["allocation.all.current"] == 0, "a staging slot leaked"


def test_slots_are_reused_only_after_their_dma(small_chunks):
    """A slow copy engine and many chunks: every slot is refilled several times."""
    src = np.random.default_rng(1).integers(0, 256, 1 << 20, dtype=np.uint8)
    engine, pool = AsyncEngine(delay=0.002), _pool()
    device = np.zeros_like(src)
    _staging.stage_h2d(src, _addr(device), engine, pool, engine.memcpy)
    engine.synchronize()
    assert engine.copies == (1 << 20) // small_chunks.chunk_bytes
    assert np.array_equal(device, src)
    assert pool.stats()["segment.all.current"] <= small_chunks.depth


def test_plan_pieces_cover_every_byte_once():
    rng = np.random.default_rng(3)
    for shape, sl in [((31, 17, 9), np.s_[::2, :, 1:]), ((1000,), np.s_[::3]), ((5, 7), ())]:
        a = rng.standard_normal(shape)[sl]
        for chunk in (8, 100, 1000, 1 << 20):
            pieces = _staging.plan_pieces(a, chunk)
            assert b"".join(p[2].tobytes() for p in pieces) == a.tobytes()
            offsets = [p[0] for p in pieces]
            assert offsets == sorted(offsets) and offsets[0] == 0
            assert all(n <= max(chunk, a.itemsize) for _, n, _ in pieces)
            assert sum(n for _, n, _ in pieces) == a.nbytes


def test_pinning_failure_midway_releases_every_slot(small_chunks):
    # slots just over 1 MiB: each one pins its own segment, and the third pinning fails
    small_chunks.chunk_bytes = small_chunks.min_chunk_bytes = (1 << 20) + 4096
    raw = FaultInjectingRawSource(RegisterSource(), fail_at=lambda i: i >= 2)
    pool = PinnedPool(raw, lambda s: s.record_event())
    engine = AsyncEngine()
    src = np.ones(8 << 20, np.uint8)
    dst = np.zeros_like(src)
    with pytest.raises(PinnedMemoryError, match="could not page-lock"):
        _staging.stage_h2d(src, _addr(dst), engine, pool, engine.memcpy)
    stats = pool.stats()
    assert stats["allocation.all.current"] == 0 and stats["num_ooms"] == 1
    assert stats["num_host_alloc"] == 2  # two slots were pinned before the failure
    assert engine.copies == 0


def test_copy_engine_error_leaves_pool_consistent(small_chunks):
    engine, pool = AsyncEngine(), _pool()
    calls = []

    def failing_memcpy(dst, src, n):
        calls.append(n)
        if len(calls) == 3:
            raise RuntimeError("injected: cudaMemcpyAsync failed")
        engine.memcpy(dst, src, n)

    src = np.ones(1 << 18, np.uint8)
    target = np.zeros_like(src)  # kept alive: the engine may still be writing into it
    with pytest.raises(RuntimeError, match="injected"):
        _staging.stage_h2d(src, _addr(target), engine, pool, failing_memcpy)
    assert pool.stats()["allocation.all.current"] == 0
    # the pool still works
    out = np.zeros_like(src)
    _staging.stage_h2d(src, _addr(out), engine, pool, engine.memcpy)
    engine.synchronize()
    assert (out == 1).all()


def test_concurrent_pipelines_share_workers_and_pool(small_chunks):
    pool = _pool()
    errors = []

    def run(seed):
        rng = np.random.default_rng(seed)
        engine = AsyncEngine(seed=seed)
        for _ in range(5):
            src = rng.standard_normal((rng.integers(1, 300), 97))[:, ::2]
            dev = np.zeros(src.nbytes, np.uint8)
            _staging.stage_h2d(src, _addr(dev), engine, pool, engine.memcpy)
            back = np.empty(src.shape, src.dtype)
            _staging.stage_d2h(_addr(dev), back, engine, pool, engine.memcpy)
            if not np.array_equal(back, src):
                errors.append(seed)

    run_threads(run, 4)
    assert not errors
    pool.synchronize()
    assert pool.stats()["allocation.all.current"] == 0


def test_parallel_copy(monkeypatch):
    monkeypatch.setattr(_staging, "PARALLEL_COPY_FROM", 1 << 10)
    a = np.random.default_rng(0).standard_normal(100_003)
    b = np.empty_like(a)
    _staging.parallel_copy(b, a)
    assert np.array_equal(a, b)
    c = np.empty((10, 10))
    _staging.parallel_copy(c, np.arange(100.0).reshape(10, 10).T)
    assert np.array_equal(c, np.arange(100.0).reshape(10, 10).T)


def test_chunk_size_rule():
    cfg = _staging.StagingConfig()
    assert cfg.pieces_for(1000) == 1000
    assert cfg.pieces_for(1 << 30) == cfg.chunk_bytes
    mid = cfg.pieces_for(16 << 20)  # mid-size transfers still split for overlap
    assert cfg.min_chunk_bytes <= mid < 16 << 20 and mid % 4096 == 0
