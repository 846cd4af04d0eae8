"""Work: the handle an `async_op=True` collective returns (torch's `Work`).

A Work holds the engine's request (an MPI request, or an NCCL event on the communication
stream) and a `finish` step (copy a staged or contiguous buffer back into the user's tensor,
divide for an emulated AVG). `wait()` runs it once. Waiting is bounded by the group's
timeout: past it, the Work raises DistBackendError naming the op and the rank instead of
hanging (the launcher then ends the whole job).
"""

from __future__ import annotations

import time

__all__ = ["Work", "Future", "DistError", "DistBackendError"]


class DistError(RuntimeError):
    """torch.distributed.DistError."""


class DistBackendError(DistError):
    """torch.distributed.DistBackendError: the communication engine failed or timed out."""


class Work:
    """wait(), is_completed(), is_success(), exception(), as torch's Work."""

    def __init__(self, request, finish, op: str, rank: int, timeout_s: float, result=None):
        self._result = result  # the tensors the op writes (what get_future() yields)
        self._request = request  # has .test() -> bool and .wait_device() (NCCL) or None
        self._finish = finish
        self._op = op
        self._rank = rank
        self._timeout_s = timeout_s
        self._done = request is None
        self._error: BaseException | None = None
        if self._done:
            self._run_finish()

    def _run_finish(self) -> None:
        finish, self._finish = self._finish, None
        if finish is not None:
            finish()

    def is_completed(self) -> bool:
        """True once the operation has finished (never blocks)."""
        if not self._done and self._request.test():
            self._done = True
            self._run_finish()
        return self._done

    def is_success(self) -> bool:
        return self.is_completed() and self._error is None

    def exception(self):
        return self._error

    def wait(self, timeout=None) -> bool:
        """Block until done (cpu/MPI), or make the current stream wait for it (NCCL).
        `timeout` (a timedelta or seconds) overrides the group's."""
        if self._error is not None:
            raise self._error
        if self._done:
            return True
        limit = self._timeout_s if timeout is None else _seconds(timeout)
        try:
            self._request.wait(limit)
        except TimeoutError:
            self._error = DistBackendError(
                f"{self._op} timed out on rank {self._rank} after {limit:g} s: another rank "
                "did not join it (it may have failed, or the ranks called collectives in a "
                "different order); raise the timeout with init_process_group(timeout=...)"
            )
            raise self._error from None
        self._done = True
        self._run_finish()
        return True

    def get_future(self) -> Future:
        """A Future whose value() is the list of tensors this op wrote."""
        return Future(self)

    def result(self) -> list:
        return list(self._result or [])

    def __repr__(self) -> str:
        state = "completed" if self._done else "pending"
        return f"<gpu_tensor.distributed.Work {self._op} {state}>"


class Future:
    """torch.futures.Future's reading side: wait() -> value, done(), value(), then()."""

    def __init__(self, work: Work, parent: Future | None = None, callback=None):
        self._work, self._parent, self._callback = work, parent, callback
        self._value, self._has_value = None, False

    def _resolve(self):
        if not self._has_value:
            self._value = (
                self._work.result() if self._callback is None else self._callback(self._parent)
            )
            self._has_value = True
        return self._value

    def wait(self):
        self._work.wait()
        return self._resolve()

    def done(self) -> bool:
        return self._work.is_completed()

    def value(self):
        if not self.done():
            raise RuntimeError("Future.value(): the operation has not completed; call wait()")
        return self._resolve()

    def then(self, callback) -> Future:
        """A Future of callback(this future), run once the work is done (at its wait())."""
        return Future(self._work, self, callback)


def _seconds(timeout) -> float:
    return timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)


BUSY_SPINS = 2000  # tests before the first yield: a short op completes with no sleep at all
YIELD_S = 0.01  # then yield the core (ranks may share cores) on every test for this long,
IDLE_SLEEP_S = 1e-4  # then sleep between tests: a long wait should not burn a core


def poll(test, limit_s: float) -> None:
    """Call `test()` until it says done, or raise TimeoutError after `limit_s` seconds.
    (MPI makes progress inside test(): something must keep calling it.)"""
    spins = 0
    while not test():
        spins += 1
        if spins < BUSY_SPINS:
            continue
        if spins == BUSY_SPINS:
            start = time.monotonic()
        waited = time.monotonic() - start
        if waited > limit_s:
            raise TimeoutError
        time.sleep(0 if waited < YIELD_S else IDLE_SLEEP_S)
