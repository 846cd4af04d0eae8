"""Stream identity: cudaStreamPerThread (handle 2) is one stream per thread, every other
handle one stream. Threads are real threads; events are fakes that record their handle."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from gpu_tensor.memory import stream_ids, verify
from gpu_tensor.memory.allocator import CachingAllocator
from gpu_tensor.memory.config import parse_alloc_conf
from gpu_tensor.memory.raw import HostRawSource

MiB = 1 << 20
PTDS = stream_ids.PER_THREAD_STREAM


class FakeEvent:
    def __init__(self, handle, log):
        self.handle, self.done = handle, False
        log.append(self)

    def query(self):
        return self.done

    def synchronize(self):
        self.done = True


def make(log=None):
    factory = None if log is None else (lambda handle: FakeEvent(handle, log))
    # peak_guard off: freed segments stay cached, so a test can see who may reuse them
    return CachingAllocator(
        HostRawSource(256 * MiB),
        0,
        event_factory=factory,
        config=parse_alloc_conf("peak_guard:False"),
    )


def run_in(thread: ThreadPoolExecutor, fn, *args):
    """Run fn on `thread` (a one-worker pool: the same OS thread every call)."""
    return thread.submit(fn, *args).result()


def test_keys_are_per_thread_for_handle_2_only():
    mine = stream_ids.stream_key(PTDS)
    assert mine < 0 and stream_ids.stream_key(PTDS) == mine == stream_ids.per_thread_key()
    for handle in (0, 1, 3, 0x7F00_1234_5000):  # null, legacy, ordinary streams keep theirs
        assert stream_ids.stream_key(handle) == handle
    assert stream_ids.stream_key(type("S", (), {"ptr": PTDS})()) == mine
    # Sequential threads (each finished before the next starts) never share an identity,
    # unlike keys built from id(), which a later thread can inherit.
    keys = []
    for _ in range(20):
        t = threading.Thread(target=lambda: keys.append(stream_ids.stream_key(PTDS)))
        t.start()
        t.join()
    assert len(set(keys + [mine])) == 21 and all(k < 0 for k in keys)


def test_threads_on_per_thread_streams_do_not_reuse_each_others_blocks():
    a = make()
    with ThreadPoolExecutor(1) as ta, ThreadPoolExecutor(1) as tb:

        def alloc_free():
            block = a.malloc(3 * MiB, PTDS)
            ptr, key = block.ptr, block.stream
            a.free(block)
            return ptr, key

        ptr_a, key_a = run_in(ta, alloc_free)
        block_b = run_in(tb, lambda: a.malloc(3 * MiB, PTDS))
        assert key_a < 0 and block_b.stream < 0 and block_b.stream != key_a
        assert block_b.ptr != ptr_a  # fresh memory, not A's freed (maybe still queued) block
        again = run_in(ta, lambda: a.malloc(3 * MiB, PTDS))
        assert again.ptr == ptr_a  # A's own stream order makes its cache safe to reuse
        a.free(again)
        a.free(block_b)
    verify.check(a)


def test_ordinary_stream_handles_are_shared_across_threads_as_before():
    a = make()
    with ThreadPoolExecutor(1) as ta, ThreadPoolExecutor(1) as tb:
        block = run_in(ta, lambda: a.malloc(3 * MiB, 5))
        ptr = block.ptr
        run_in(ta, a.free, block)
        again = run_in(tb, lambda: a.malloc(3 * MiB, 5))
        assert again.ptr == ptr and again.stream == 5
        a.free(again)


def test_record_stream_on_per_thread_stream_records_on_a_stream_that_orders_it():
    log = []
    a = make(log)
    with ThreadPoolExecutor(1) as tb:
        # A block of this thread's per-thread stream, used by thread B's per-thread stream.
        block = a.malloc(3 * MiB, PTDS)
        ptr = block.ptr
        run_in(tb, a.record_stream, block, PTDS)
        a.free(block)  # freed here, not on B: B's stream cannot be named from this thread
        assert [e.handle for e in log] == [stream_ids.LEGACY_STREAM]
        assert a.malloc(3 * MiB, PTDS).ptr != ptr  # held until the event completes
        log[0].done = True
        assert a.malloc(3 * MiB, PTDS).ptr == ptr

        # Freed by the thread that owns the recorded stream: the event goes on handle 2.
        other = run_in(tb, lambda: a.malloc(3 * MiB, 9))
        run_in(tb, a.record_stream, other, PTDS)
        run_in(tb, a.free, other)
        assert log[-1].handle == PTDS
        # This thread's own per-thread stream is the block's own stream: no event at all.
        mine = a.malloc(MiB, PTDS)
        a.record_stream(mine, PTDS)
        assert mine.stream_uses is None
        n = len(log)
        a.free(mine)
        assert len(log) == n


def test_ordinary_record_stream_events_keep_their_handle():
    log = []
    a = make(log)
    block = a.malloc(MiB, 7)
    a.record_stream(block, 11)
    a.free(block)
    assert [e.handle for e in log] == [11]
