"""What runs inside a DataLoader worker process, and what it sends back.

Each worker takes `(task, indices)` from its own index queue, fetches and collates the
batch, and puts `(task, batch)` on the shared result queue; an exception travels as an
`ExceptionWrapper` holding the worker's traceback text, re-raised in the main process with
torch's message ("Caught ValueError in DataLoader worker process 0. Original Traceback ...").

Workers compute on the cpu only: a batch holding a device tensor is refused with a message
saying what to do (a forked child must not use the parent's CUDA context; the main process
moves batches, with pin_memory=True making that one async copy).
"""

from __future__ import annotations

import queue
import random
import sys
import traceback
from typing import Any, NamedTuple

__all__ = ["WorkerInfo", "get_worker_info", "ExceptionWrapper", "Job", "worker_loop"]

_POLL_S = 5.0  # torch's MP_STATUS_CHECK_INTERVAL: how often an idle worker checks its parent

_info = None  # this process's WorkerInfo (None in the main process)


class Job(NamedTuple):
    """What every worker of one DataLoader loads, and how (each worker gets a copy)."""

    kind: str  # 'map' or 'iterable'
    dataset: Any
    auto_collation: bool
    collate_fn: Any  # None: the samples go back as fetched
    drop_last: bool


class WorkerInfo:
    """id, num_workers, seed and dataset (this worker's copy) of the current worker."""

    __slots__ = ("id", "num_workers", "seed", "dataset")

    def __init__(self, id, num_workers, seed, dataset):
        self.id, self.num_workers, self.seed, self.dataset = id, num_workers, seed, dataset

    def __setattr__(self, name, value):
        if hasattr(self, name):
            raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")
        object.__setattr__(self, name, value)

    def __repr__(self):
        return (
            f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed}, "
            f"dataset={self.dataset!r})"
        )


def get_worker_info():
    """Inside a DataLoader worker: its WorkerInfo. In the main process: None."""
    return _info


class ExceptionWrapper:
    """An exception and its traceback text, picklable, re-raised elsewhere."""

    def __init__(self, exc_info, where: str):
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where
        try:  # a class defined inside a function cannot cross the queue by name
            import pickle

            pickle.dumps(self.exc_type)
        except Exception:  # noqa: BLE001 - any pickling failure: fall back to RuntimeError
            self.exc_type = RuntimeError

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)  # KeyError's str() would show the text's repr
        try:
            exc = self.exc_type(msg)
        except Exception:  # noqa: BLE001 - a constructor wanting other arguments
            raise RuntimeError(msg) from None
        raise exc


class _KeyErrorMessage(str):
    def __repr__(self):
        return str(self)


class _Stop:
    """An IterableDataset's worker ran out of samples."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class _Resumed:
    """A persistent worker acknowledges the start of a new epoch."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


def _on_cpu(batch, worker_id):
    from gpu_tensor._tensor import Tensor
    from gpu_tensor.utils.prefetch import _map_tensors

    def check(t):
        if isinstance(t, Tensor) and t.device.type != "cpu":
            raise RuntimeError(
                f"DataLoader worker process {worker_id} produced a tensor on {t.device}: "
                "workers must not use the GPU. Return cpu tensors from the dataset and move "
                "batches in the main loop (pin_memory=True makes that one async copy), or "
                "use num_workers=0 for a dataset whose tensors already live on the device"
            )
        return t

    return _map_tensors(batch, check)


def worker_loop(
    job, index_queue, data_queue, done, seed, init_fn, worker_id, num_workers, parent_pid
):
    """The body of worker `worker_id`, loading what `job` (a Job) says."""
    global _info
    from gpu_tensor.device import set_default_device
    from gpu_tensor.ops.random import manual_seed

    init_error, stream = None, None
    try:
        set_default_device("cpu")  # a GPU machine's default is cuda: workers stay off it
        random.seed(seed)
        manual_seed(seed)
        _info = WorkerInfo(worker_id, num_workers, seed, job.dataset)
        if init_fn is not None:
            init_fn(worker_id)
        stream = iter(job.dataset) if job.kind == "iterable" else None
    except Exception:  # noqa: BLE001 - reported through the first task's answer
        init_error = ExceptionWrapper(sys.exc_info(), f"in DataLoader worker process {worker_id}")
    try:
        _serve(job, index_queue, data_queue, done, stream, init_error, worker_id, parent_pid)
    except KeyboardInterrupt:
        pass  # the main process was interrupted too; it reports that
    if done.is_set():  # nobody may read what is still buffered: do not wait to flush it
        data_queue.cancel_join_thread()
        data_queue.close()


def _serve(job, index_queue, data_queue, done, stream, init_error, worker_id, parent_pid):
    import os

    exhausted = False
    while True:
        try:
            task = index_queue.get(timeout=_POLL_S)
        except queue.Empty:
            if done.is_set() or os.getppid() != parent_pid:
                return  # the main process has gone: nobody will read our results
            continue
        if task is None:
            return
        if task == "resume":
            exhausted = False
            stream = iter(job.dataset) if job.kind == "iterable" else None
            data_queue.put((None, _Resumed(worker_id)))
            continue
        if done.is_set() or exhausted:
            continue
        idx, indices = task
        if init_error is not None:
            data_queue.put((idx, init_error))
            init_error = None
            continue
        batch = data = None
        try:
            if job.kind == "iterable":
                batch = _next_from_stream(stream, indices, job.auto_collation, job.drop_last)
                if batch is _Stop:
                    exhausted = True
                    data_queue.put((idx, _Stop(worker_id)))
                    continue
            else:
                batch = _fetch(job.dataset, indices, job.auto_collation)
            if job.collate_fn is not None:
                batch = job.collate_fn(batch)
            data = _on_cpu(batch, worker_id)
        except Exception:  # noqa: BLE001 - every error goes back to the main process
            data = ExceptionWrapper(sys.exc_info(), f"in DataLoader worker process {worker_id}")
        data_queue.put((idx, data))
        batch = data = None  # drop our references before blocking on the next task


def _fetch(dataset, indices, auto_collation):
    if not auto_collation:
        return dataset[indices]
    many = getattr(dataset, "__getitems__", None)
    if callable(many):
        return many(indices)
    return [dataset[i] for i in indices]


def _next_from_stream(stream, n, auto_collation, drop_last):
    """The next sample (n None) or list of up to n samples from an iterable dataset."""
    if not auto_collation:
        return next(stream, _Stop)
    out = []
    for sample in stream:
        out.append(sample)
        if len(out) == n:
            return out
    if not out or drop_last:
        return _Stop
    return out
