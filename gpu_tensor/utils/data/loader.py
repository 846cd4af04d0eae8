"""DataLoader: batches from a dataset, in the calling process or in worker processes.

    loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=2, pin_memory=True)
    for xb, yb in loader:           # cpu batches in the pinned pool: .cuda() is one async copy

num_workers=0: batches are gathered in the calling thread (a TensorDataset batch is one
index_select per tensor). num_workers=N: N worker processes (the default multiprocessing
start method, as torch) each fetch and collate the batches sent to them round-robin; the
main process keeps `prefetch_factor` batches per worker in flight and hands them out in
sampler order (in_order=False: as they arrive). Worker seeds are base_seed + worker id,
the base drawn from `generator` (or the default one) for each epoch, as in torch.

Batches cross from workers by pickle (a tensor pickles as its host values): the cost is a
copy of each batch, small against the CPU-heavy work that makes workers worth having.
`pin_memory=True` pins each batch in our pinned pool in the main process; `device=` (our
addition) hands batches to `gt.utils.prefetch`, which uploads batch i+1 on a side stream
while the caller computes on batch i.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import queue
from collections.abc import Callable, Iterable

from .collate import default_collate, default_convert
from .dataset import Dataset, IterableDataset, TensorDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler
from .worker import ExceptionWrapper, Job, _Resumed, _Stop, worker_loop

__all__ = ["DataLoader"]

_POLL_S = 5.0  # while waiting for a batch, check this often that the workers are alive


def _check_workers(num_workers, timeout, prefetch_factor, persistent_workers):
    """torch's checks of the worker arguments, with its messages."""
    if num_workers < 0:
        raise ValueError(
            "num_workers option should be non-negative; use num_workers=0 to "
            "disable multiprocessing."
        )
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError(
            "prefetch_factor option could only be specified in multiprocessing."
            "let num_workers > 0 to enable multiprocessing, otherwise set "
            "prefetch_factor to None."
        )
    if prefetch_factor is not None and prefetch_factor < 0:
        raise AssertionError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")


def _check_sampling(dataset, shuffle, sampler, batch_sampler, batch_size, drop_last):
    """torch's checks of the arguments that choose the indices, with its messages."""
    if isinstance(dataset, IterableDataset):
        for name, value in (
            ("shuffle", shuffle),
            ("sampler", sampler),
            ("batch_sampler", batch_sampler),
        ):
            if value not in (None, False):
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified "
                    f"{name} option, but got {name}={value}"
                )
    if sampler is not None and shuffle:
        raise ValueError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None and (
        batch_size != 1 or shuffle or sampler is not None or drop_last
    ):
        raise ValueError(
            "batch_sampler option is mutually exclusive with batch_size, "
            "shuffle, sampler, and drop_last"
        )
    if batch_size is None and drop_last:
        raise ValueError(
            "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"
        )


class DataLoader:
    def __init__(
        self,
        dataset: Dataset,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Sampler | Iterable | None = None,
        batch_sampler: Sampler | Iterable | None = None,
        num_workers: int = 0,
        collate_fn: Callable | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable | None = None,
        multiprocessing_context=None,
        generator=None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
        device=None,
    ) -> None:
        _check_workers(num_workers, timeout, prefetch_factor, persistent_workers)
        _check_sampling(dataset, shuffle, sampler, batch_sampler, batch_size, drop_last)
        self.dataset, self.num_workers, self.timeout = dataset, num_workers, timeout
        self.drop_last, self.pin_memory, self.generator = drop_last, pin_memory, generator
        self.device, self.in_order = device, in_order
        self.worker_init_fn, self.persistent_workers = worker_init_fn, persistent_workers
        self.multiprocessing_context = multiprocessing_context
        self.prefetch_factor = 2 if prefetch_factor is None and num_workers else prefetch_factor
        self._iterable = isinstance(dataset, IterableDataset)
        if batch_sampler is not None:
            batch_size = None
        if sampler is None and not self._iterable:
            sampler = (
                RandomSampler(dataset, generator=generator)
                if shuffle
                else SequentialSampler(dataset)
            )
        self.sampler = sampler
        if batch_sampler is None and batch_size is not None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_sampler, self.batch_size = batch_sampler, batch_size
        auto = batch_sampler is not None or (self._iterable and batch_size is not None)
        self._auto_collation = auto
        if collate_fn is None:
            collate_fn = default_collate if auto else default_convert
        self.collate_fn = collate_fn
        self._fast = collate_fn is default_collate and isinstance(dataset, TensorDataset)
        self._workers_iter = None

    def __len__(self):
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler) if self.batch_sampler is not None else len(self.sampler)

    def _index_stream(self):
        """What each fetch is given: a list of indices, one index, or (iterable) a count."""
        if self._iterable:
            return itertools.repeat(self.batch_size)
        return iter(self.batch_sampler if self._auto_collation else self.sampler)

    def _base_seed(self) -> int:
        """torch draws one int64 from the loader's generator (default: the global one) for
        each new iterator (every epoch, with workers or without; persistent workers keep
        theirs): making the same draws keeps seeded runs in step with torch's."""
        g = self.generator
        if g is not None and hasattr(g, "integers"):  # a numpy Generator
            return int(g.integers(0, 2**63 - 1))
        from gpu_tensor.creation import empty
        from gpu_tensor.dtype import int64

        return int(empty((), dtype=int64, device="cpu").random_(generator=g).item())

    def __iter__(self):
        from gpu_tensor.utils.prefetch import _map_tensors, prefetch

        if self.num_workers == 0:
            self._base_seed()
            batches = self._batches()
        elif self.persistent_workers:
            if self._workers_iter is None:
                self._workers_iter = _WorkerIter(self)
            else:
                self._workers_iter.reset()
            batches = self._workers_iter
        else:
            batches = _WorkerIter(self)
        if self.pin_memory:
            batches = (_map_tensors(b, _pin) for b in batches)
        if self.device is not None:
            batches = prefetch(batches, self.device, depth=self.prefetch_factor or 2)
        return iter(batches)

    def _batches(self):
        if self._iterable:
            stream = iter(self.dataset)
            if self.batch_size is None:
                yield from (self.collate_fn(s) for s in stream)
                return
            while True:
                chunk = list(itertools.islice(stream, self.batch_size))
                if not chunk or (self.drop_last and len(chunk) < self.batch_size):
                    return
                yield self.collate_fn(chunk)
        if not self._auto_collation:  # batch_size=None: one sample at a time
            for i in self.sampler:
                yield self.collate_fn(self.dataset[i])
            return
        for indices in self.batch_sampler:
            if self._fast:
                yield self._gather(indices)
            else:
                yield self.collate_fn([self.dataset[i] for i in indices])

    def _gather(self, indices):
        """A TensorDataset batch: one index_select per tensor, on the tensor's device."""
        from gpu_tensor.creation import tensor

        return [t.index_select(0, tensor(indices, device=t.device)) for t in self.dataset.tensors]


def _pin(t):
    return t.pin_memory() if t.device.type == "cpu" else t


class _WorkerIter:
    """The batches of one epoch from worker processes (kept across epochs when persistent)."""

    def __init__(self, loader: DataLoader):
        ctx = loader.multiprocessing_context
        if ctx is None or isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        self._loader, n = loader, loader.num_workers
        self._data_queue, self._done = ctx.Queue(), ctx.Event()
        self._index_queues, self._workers = [], []
        self._closed = False
        seed = loader._base_seed()
        job = Job(
            "iterable" if loader._iterable else "map",
            loader.dataset,
            loader._auto_collation,
            loader.collate_fn if not loader._fast else default_collate,
            loader.drop_last,
        )
        for i in range(n):
            iq = ctx.Queue()
            w = ctx.Process(
                target=worker_loop,
                daemon=True,
                args=(
                    job,
                    iq,
                    self._data_queue,
                    self._done,
                    seed + i,
                    loader.worker_init_fn,
                    i,
                    n,
                    os.getpid(),
                ),
            )
            w.start()
            self._index_queues.append(iq)
            self._workers.append(w)
        self._start()

    def _start(self):
        n = self._loader.num_workers
        self._indices = self._loader._index_stream()
        self._cycle = itertools.cycle(range(n))
        self._active = [True] * n
        self._send_idx = self._rcvd_idx = 0
        self._tasks: dict = {}  # task -> [worker] while pending, [worker, data] once here
        for _ in range(self._loader.prefetch_factor * n):
            self._put_task()

    def reset(self):
        """A new epoch on the same (persistent) workers: each acknowledges the restart, so
        answers to the last epoch's tasks still in the queue are told apart and dropped."""
        for iq in self._index_queues:
            iq.put("resume")
        waiting = len(self._workers)
        while waiting:
            _, data = self._get()
            waiting -= isinstance(data, _Resumed)
        self._start()  # torch draws no new base seed here: the workers keep theirs

    def _put_task(self):
        try:
            indices = next(self._indices)
        except StopIteration:
            return
        for _ in range(len(self._workers)):
            w = next(self._cycle)
            if self._active[w]:
                break
        else:
            return
        self._index_queues[w].put((self._send_idx, indices))
        self._tasks[self._send_idx] = [w]
        self._send_idx += 1

    def _get(self):
        timeout = self._loader.timeout
        if timeout > 0:
            try:
                return self._data_queue.get(timeout=timeout)
            except queue.Empty:
                self.close()
                raise RuntimeError(f"DataLoader timed out after {timeout} seconds") from None
        while True:
            try:
                return self._data_queue.get(timeout=_POLL_S)
            except queue.Empty:
                dead = [w.pid for w in self._workers if not w.is_alive()]
                if dead:
                    self.close()
                    pids = ", ".join(str(p) for p in dead)
                    raise RuntimeError(
                        f"DataLoader worker (pid(s) {pids}) exited unexpectedly"
                    ) from None

    def __iter__(self):
        return self

    def __next__(self):
        ordered = self._loader.in_order
        while True:
            if ordered:
                while self._rcvd_idx < self._send_idx:
                    task = self._tasks.get(self._rcvd_idx)
                    if task is not None and (len(task) == 2 or self._active[task[0]]):
                        break
                    self._tasks.pop(self._rcvd_idx, None)  # its worker's stream ended first
                    self._rcvd_idx += 1
                else:
                    self._finish()
                if len(self._tasks[self._rcvd_idx]) == 2:
                    data = self._tasks.pop(self._rcvd_idx)[1]
                    self._rcvd_idx += 1
                    return self._hand_out(data)
            elif not self._tasks:
                self._finish()
            idx, data = self._get()
            if idx is None or idx not in self._tasks:
                continue  # a stale answer (an acknowledgement, a task of a reset epoch)
            if isinstance(data, _Stop):  # the worker's stream ended: nothing more from it
                w = data.worker_id
                self._active[w] = False
                for gone in [i for i, t in self._tasks.items() if t == [w]]:
                    del self._tasks[gone]  # sent before the end was known: no answer comes
                continue
            if ordered and idx != self._rcvd_idx:
                self._tasks[idx].append(data)
                continue
            del self._tasks[idx]
            if ordered:
                self._rcvd_idx += 1
            return self._hand_out(data)

    def _hand_out(self, data):
        self._put_task()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _finish(self):
        if not self._loader.persistent_workers:
            self.close()
        raise StopIteration

    def close(self):
        """Stop the workers: tell them, wait a little, terminate the ones still running."""
        if self._closed:
            return
        self._closed = True
        self._done.set()
        for iq in self._index_queues:
            iq.put(None)
        for w in self._workers:
            w.join(timeout=_POLL_S)
            if w.is_alive():
                w.terminate()
        for q in (*self._index_queues, self._data_queue):
            q.cancel_join_thread()
            q.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown: the queues may be gone
            pass
