"""`gt.utils.prefetch`: upload the next batches on a side stream while the caller computes.

    for x, y in gt.utils.prefetch(loader, "cuda", depth=2):
        loss = model(x, y)          # runs on the current stream while batch i+1 uploads

Ordering: each batch's uploads are queued on a private side stream and an event is recorded
behind them; before a batch is handed out, the consumer's current stream waits on that event
(no host block), and every uploaded tensor records the consumer stream so the caching
allocator does not reuse its memory while the consumer's kernels may still read it.

Host cost: a pinned source uploads with one async copy; a pageable one is staged through the
pinned pool and the call returns once the source has been read, so the source buffers may be
reused by the loader as soon as the batch is yielded.
"""

from __future__ import annotations

from collections import deque

__all__ = ["prefetch"]


def _map_tensors(obj, fn):
    """Apply ``fn`` to every Tensor inside tuples / lists / dicts; leave the rest alone."""
    from gpu_tensor._tensor import Tensor

    if isinstance(obj, Tensor):
        return fn(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
        return type(obj)(*(_map_tensors(v, fn) for v in obj))
    if isinstance(obj, (tuple, list)):
        return type(obj)(_map_tensors(v, fn) for v in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _map_tensors(v, fn)) for k, v in obj.items())
    return obj


def prefetch(iterable, device="cuda", depth: int = 2):
    """Yield the items of ``iterable`` with their tensors on ``device``, keeping ``depth``
    batches uploaded (or uploading) ahead of the one the caller holds."""
    from gpu_tensor.cuda import streams
    from gpu_tensor.device import resolve

    if depth < 1:
        raise ValueError(f"prefetch depth must be >= 1, got {depth}")
    dev = resolve(device)
    if dev.type != "cuda":
        # cpu target: nothing to overlap; keep the contract (tensors moved to dev).
        for item in iterable:
            yield _map_tensors(item, lambda t: t.to(dev))
        return
    side = streams.Stream(dev)
    ahead: deque = deque()
    source = iter(iterable)

    def upload_next() -> bool:
        try:
            item = next(source)
        except StopIteration:
            return False
        with streams.stream(side):
            moved = _map_tensors(item, lambda t: t.to(dev, non_blocking=True))
            done = side.record_event()
        ahead.append((moved, done))
        return True

    while len(ahead) < depth and upload_next():
        pass
    while ahead:
        moved, done = ahead.popleft()
        consumer = streams.current_stream(dev)
        consumer.wait_event(done)

        def hand_over(t, consumer=consumer):
            if t.device == dev:
                t.record_stream(consumer)
            return t

        _map_tensors(moved, hand_over)
        yield moved
        # The caller has queued its work on batch i; refill while the device runs it.
        upload_next()
