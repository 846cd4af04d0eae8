"""Asynchronous streams: queued work, happens-before, seeded adversarial order, race checks.

Every operation on a stream (kernel launch, memcpyAsync, a cupy routine) is a `Task` on that
stream's `Queue`. A task runs only when something orders it: a stream/event/device
synchronize, an event wait by another stream that is then driven, a query (a seeded coin
decides whether the work has "finished" yet), a blocking copy to host, or the legacy default
stream's implicit ordering. When the scheduler drives work, it runs the needed tasks of
different queues in a seeded random interleaving, and lets unrelated queues make random
progress too, so code that relies on an order nobody asked for sees it broken.

Ordering is tracked with vector clocks: a task's clock says, for every queue, how much of
that queue is ordered before it (its own queue's earlier tasks; what the host had seen
complete when it enqueued; the events it waited for). Two accesses to overlapping memory,
at least one a write, from different queues with neither ordered before the other, are a
race: `SimRaceError` names both streams, both operations and the buffer (mode "raise"), or
a `SimRaceWarning` says the same (mode "warn").
"""

from __future__ import annotations

import collections
import random
import threading
import warnings

__all__ = ["Queue", "Task", "Scheduler", "SimRaceError", "SimRaceWarning"]


class SimRaceError(RuntimeError):
    """Two streams touch the same memory with nothing ordering them."""


class SimRaceWarning(RuntimeWarning):
    """A race found in mode "warn"."""


class Queue:
    """The logical CUDA stream behind one or more cupy Stream objects."""

    __slots__ = (
        "name",
        "device",
        "blocking",
        "legacy",
        "clock",
        "vc",
        "pending",
        "done",
        "priority",
        "capture",
        "__weakref__",
    )

    def __init__(self, name: str, device: int, blocking: bool, legacy: bool = False):
        self.name, self.device, self.blocking, self.legacy = name, device, blocking, legacy
        self.clock = 0  # tasks enqueued so far
        self.vc: dict = {}  # what the next task is ordered after (besides this queue)
        self.pending: collections.deque = collections.deque()
        self.done = 0  # tasks run so far (in order)
        self.priority = 0
        self.capture = None  # graph.Capture while the stream is capturing (graph.py)

    def __repr__(self) -> str:
        return self.name


class Task:
    __slots__ = ("queue", "clock", "vc", "fn", "label")

    def __init__(self, queue, clock, vc, fn, label):
        self.queue, self.clock, self.vc, self.fn, self.label = queue, clock, vc, fn, label


class _Access:
    __slots__ = ("queue", "clock", "lo", "hi", "write", "label", "buffer")

    def __init__(self, queue, clock, lo, hi, write, label, buffer):
        self.queue, self.clock, self.lo, self.hi = queue, clock, lo, hi
        self.write, self.label, self.buffer = write, label, buffer


def _join(a: dict, b: dict) -> dict:
    out = dict(a)
    for q, c in b.items():
        if out.get(q, 0) < c:
            out[q] = c
    return out


class Scheduler:
    """One per simulated machine. `lock` serialises the simulation (threads may enqueue)."""

    def __init__(self, seed: int = 0, mode: str = "raise"):
        self.rng = random.Random(seed)
        self.mode = mode
        self.host: dict = {}  # queue -> tasks the host has seen complete
        self.queues: list = []  # weak bookkeeping is not needed: queues are few
        self.history: list[_Access] = []
        self.lock = threading.RLock()
        self.races: list[str] = []

    def new_queue(self, name, device, blocking, legacy=False) -> Queue:
        q = Queue(name, device, blocking, legacy)
        self.queues.append(q)
        return q

    # -- enqueueing -----------------------------------------------------------------------

    def enqueue(self, queue: Queue, fn, label: str, accesses=()) -> Task:
        """Queue `fn` (None: an operation whose effect the caller performs itself, after
        `run_through`) on `queue`; `accesses` are (lo, hi, write, buffer_name) ranges."""
        with self.lock:
            if queue.capture is not None:  # recorded into the graph, not run (graph.py)
                return queue.capture.record(queue, fn, label, accesses)
            if queue.legacy:
                self.check_no_capture(
                    "work on the legacy default stream",
                    device=queue.device,
                    status=906,
                    blocking_only=True,
                )
            vc = _join(queue.vc, self.host)
            if queue.legacy:  # the legacy stream waits for every blocking stream's work
                for q in self.queues:
                    if q.blocking and q.device == queue.device and q is not queue:
                        vc = _join(vc, {q: q.clock})
            elif queue.blocking:  # and blocking streams wait for the legacy stream's
                for q in self.queues:
                    if q.legacy and q.device == queue.device:
                        vc = _join(vc, {q: q.clock})
            queue.clock += 1
            vc[queue] = queue.clock
            queue.vc = vc
            task = Task(queue, queue.clock, dict(vc), fn, label)
            queue.pending.append(task)
            for lo, hi, write, buf in accesses:
                self.access(task, lo, hi, write, buf)
            return task

    def access(self, task: Task, lo: int, hi: int, write: bool, buffer: str) -> None:
        """Record that `task` touches [lo, hi); report a race with any unordered access."""
        if hi <= lo:
            return
        with self.lock:
            self._prune()
            for a in self.history:
                if a.queue is task.queue or not (a.lo < hi and lo < a.hi):
                    continue
                if not (write or a.write) or task.vc.get(a.queue, 0) >= a.clock:
                    continue
                self._race(a, task, lo, hi, write, buffer)
            self.history.append(_Access(task.queue, task.clock, lo, hi, write, task.label, buffer))

    def _prune(self) -> None:
        # An access the host has seen complete is ordered before anything enqueued later.
        if len(self.history) > 64:
            host = self.host
            self.history = [a for a in self.history if host.get(a.queue, 0) < a.clock]

    def _race(self, a, task, lo, hi, write, buffer) -> None:
        msg = (
            f"race on {buffer} [{max(lo, a.lo):#x}, {min(hi, a.hi):#x}): "
            f"{task.queue!r} {'writes' if write else 'reads'} it ({task.label}) while "
            f"{a.queue!r} {'writes' if a.write else 'reads'} it ({a.label}) and nothing "
            "orders the two streams; record an event on one stream and wait for it on "
            "the other (stream.wait_event / wait_stream), or synchronize"
        )
        self.races.append(msg)
        if self.mode == "warn":
            warnings.warn(msg, SimRaceWarning, stacklevel=4)
        else:
            raise SimRaceError(msg)

    # -- running --------------------------------------------------------------------------

    def _closure(self, need: dict) -> dict:
        # Walked by clock, not by iterator: a finaliser the garbage collector runs in here may
        # call the driver (cudaFree syncs the device), which appends to or runs these queues.
        need = dict(need)
        changed = True
        while changed:
            changed = False
            for q in list(need):
                pending, c = q.pending, q.done + 1
                while c <= need[q] and pending:
                    i = c - pending[0].clock  # clocks in a queue are consecutive
                    if i >= len(pending):
                        break
                    if i >= 0:
                        for dq, dc in pending[i].vc.items():
                            if need.get(dq, 0) < dc:
                                need[dq] = dc
                                changed = True
                    c += 1
        return need

    def drive(self, need: dict) -> None:
        """Run every task ordered at or before `need` (queue -> clock), interleaving queues
        in a seeded random order; unrelated queues may make progress too. Re-entrant: a
        finaliser may drive (or enqueue) from inside; each step re-reads the queues."""
        with self.lock:
            need = self._closure(need)
            for q in self.queues:  # background progress: the GPU does not wait for the host
                if q.pending and q not in need and self.rng.random() < 0.25:
                    need = self._closure({**need, q: q.pending[0].clock})
            while True:
                ready = [
                    (q, t)
                    for q, c in need.items()
                    if q.pending and (t := q.pending[0]).clock <= c and self._runnable(t)
                ]
                if not ready:
                    break
                q, task = ready[self.rng.randrange(len(ready))] if len(ready) > 1 else ready[0]
                if not q.pending or q.pending[0] is not task:
                    continue  # a nested drive ran it meanwhile
                q.pending.popleft()
                q.done = task.clock
                if task.fn is not None:
                    task.fn()

    def _runnable(self, task) -> bool:
        return all(q.done >= c for q, c in task.vc.items() if q is not task.queue)

    def run_through(self, task: Task) -> None:
        """Run `task` and everything ordered before it."""
        if task.clock is None:  # a captured task: nothing runs until the graph is launched
            self.capture_error(
                task.queue.capture,
                900,
                f"{task.label} waits for the host, which a capturing stream cannot do",
            )
        self.drive({task.queue: task.clock})

    # -- stream capture (graph.py) ----------------------------------------------------------

    def capture_error(self, capture, status: int, what: str):
        """Invalidate `capture` (its end_capture then fails) and raise CUDA's error."""
        from .runtime import CUDARuntimeError

        if capture is not None and capture.invalid is None:
            capture.invalid = what
        raise CUDARuntimeError(status, f"{what} during stream capture")

    def check_no_capture(
        self,
        what: str,
        device=None,
        status: int = 900,
        blocking_only: bool = False,
        modes=(0, 1, 2),
    ) -> None:
        """Raise (invalidating the capture) when a stream of `device` (None: any) captures in
        one of `modes` (0 global, 1 thread-local, 2 relaxed)."""
        for q in self.queues:
            cap = q.capture
            if (
                cap is not None
                and cap.mode in modes
                and (device is None or q.device == device)
                and (q.blocking or not blocking_only)
            ):
                self.capture_error(cap, status, what)

    def synchronize(self, queue: Queue) -> None:
        """The host waits for everything enqueued on `queue` so far."""
        if queue.capture is not None:
            self.capture_error(queue.capture, 900, "synchronizing the capturing stream")
        with self.lock:
            vc = _join(queue.vc, {queue: queue.clock})
            self.drive(vc)
            self.host = _join(self.host, vc)

    def wait_clock(self, vc: dict) -> None:
        """The host waits for a recorded point (an event)."""
        with self.lock:
            self.drive(vc)
            self.host = _join(self.host, vc)

    def complete(self, vc: dict) -> bool:
        return all(q.done >= c for q, c in vc.items())

    def query(self, vc: dict) -> bool:
        """cudaEventQuery / cudaStreamQuery: finished work says True; unfinished work may
        finish now (a seeded coin), otherwise False."""
        for q in vc:
            if q.capture is not None:
                self.capture_error(q.capture, 900, "querying the capturing stream")
        with self.lock:
            if not self.complete(vc) and self.rng.random() < 0.5:
                self.drive(vc)
            if self.complete(vc):
                self.host = _join(self.host, vc)
                return True
            return False

    def synchronize_device(self, device: int | None = None) -> None:
        self.check_no_capture("synchronizing the device", device=device)
        with self.lock:
            for q in list(self.queues):
                if device is None or q.device == device:
                    self.synchronize(q)
