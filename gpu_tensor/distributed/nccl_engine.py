"""The NCCL engine: collectives on cuda tensors' device memory, on a communication stream.

Ordering and lifetime, as torch's ProcessGroupNCCL:
- each op runs on the group's communication stream, which first waits on the caller's
  current stream (so the op sees every kernel that wrote its inputs);
- the buffers are marked used by the communication stream (`record_stream`), so the caching
  allocator does not hand their memory out again before NCCL is done with it;
- `Work.wait()` makes the caller's current stream wait on the op's event (the CPU does not
  block); `is_completed()` queries the event;
- a watchdog thread checks pending ops: one that outlives the group's timeout aborts the
  communicator, and the next wait() raises an error naming the op and the rank.
The communicator is made on the first cuda collective: rank 0 makes the unique id and MPI
broadcasts it. The NCCL mechanism itself is `gpu_tensor.backends.cuda_nccl`.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from ..backends import cuda_nccl

__all__ = ["NcclEngine", "usable", "library_available"]


def library_available() -> bool:
    return cuda_nccl.available()


def usable() -> bool:
    """NCCL can serve cuda tensors here: a real GPU and an NCCL library."""
    from ..backends import cuda_kind

    return cuda_kind().nccl_usable()


class _Event:
    """A pending op: its event on the communication stream, and what it keeps alive."""

    __slots__ = ("event", "deadline", "op", "keep", "error", "event_device")

    def __init__(self, event, deadline, op, keep):
        self.event, self.deadline, self.op, self.keep, self.error = event, deadline, op, keep, None
        self.event_device = None

    def test(self) -> bool:
        if self.error is not None:
            raise self.error
        return self.event.query()

    def wait(self, limit_s: float) -> None:
        if self.error is not None:
            raise self.error
        from ..cuda import current_stream

        current_stream(self.event_device).wait_event(self.event)


class NcclEngine:
    name = "nccl"
    device_engine = True
    native_avg = True

    def __init__(self, mpi_engine, timeout_s: float):
        if not usable():
            raise RuntimeError(
                "the nccl backend needs a CUDA GPU and the NCCL library: install it with "
                "`pip install nvidia-nccl-cu12` (or -cu13, to match CuPy), or use "
                "backend='mpi', which stages cuda tensors through pinned host memory"
            )
        self.mpi = mpi_engine
        self.rank, self.size = mpi_engine.rank, mpi_engine.size
        self.timeout_s = timeout_s
        self._comm = None
        self._stream = None
        self._pending: list[_Event] = []
        self._lock = threading.Lock()
        self._watchdog = None

    # -- setup ---------------------------------------------------------------------------
    def _ready(self, array):
        from ..cuda import Stream

        index = array.device.id
        if self._comm is None:
            uid = cuda_nccl.unique_id() if self.rank == 0 else None
            uid = self.mpi.bcast_object(uid, 0)
            self._comm = cuda_nccl.Communicator(self.size, uid, self.rank, index)
            self._stream = Stream(f"cuda:{index}")
            self._watchdog = threading.Thread(
                target=self._watch, daemon=True, name="gpu_tensor-nccl-watchdog"
            )
            self._watchdog.start()
        elif index != self._comm.device_index:
            raise RuntimeError(
                f"this group's NCCL communicator is on cuda:"
                f"{self._comm.device_index} but the tensor is on cuda:{index}; "
                "one rank drives one GPU (pick it with cuda:LOCAL_RANK)"
            )
        return self._comm, self._stream

    def _run(self, op: str, arrays, enqueue):
        """Run `enqueue(comm, stream_ptr)` on the communication stream after the current
        stream's work; returns the pending op."""
        from .._tensor import Tensor
        from ..cuda import current_stream

        arrays = [a for a in arrays if a is not None]
        comm, stream = self._ready(arrays[0])
        device = f"cuda:{comm.device_index}"
        stream.wait_stream(current_stream(device))
        enqueue(comm, stream.cuda_stream)
        event = stream.record_event()
        for a in arrays:  # (as bytes: bfloat16 bits are uint16, which has no Tensor dtype)
            Tensor._wrap(a.view(np.uint8), device).record_stream(stream)
        pending = _Event(event, time.monotonic() + self.timeout_s, op, arrays)
        pending.event_device = device
        with self._lock:
            self._pending.append(pending)
        return pending

    def _watch(self) -> None:
        while self._comm is not None:
            time.sleep(0.1)
            with self._lock:
                pending = [p for p in self._pending if not p.event.query()]
                self._pending = pending
            now = time.monotonic()
            late = [p for p in pending if now > p.deadline]
            if late:
                from .work import DistBackendError

                for p in late:
                    p.error = DistBackendError(
                        f"{p.op} timed out on rank {self.rank} after {self.timeout_s:g} s "
                        "(NCCL); the communicator was aborted"
                    )
                comm = self._comm
                if comm is not None:  # (destroy() may have run meanwhile)
                    comm.abort()
                return

    def synchronize(self) -> None:
        """Block until every op this engine started has finished on the device."""
        if self._stream is not None:
            self._stream.synchronize()

    def destroy(self) -> None:
        comm, self._comm = self._comm, None
        if comm is not None:
            comm.destroy()

    # -- collectives (buffers are contiguous cupy arrays) --------------------------------
    def allreduce(self, buf, op):
        cuda_nccl.nccl_op(op)  # an op NCCL lacks is refused before anything is enqueued
        name, n = cuda_nccl.wire_dtype(buf)
        return self._run(
            "all_reduce",
            [buf],
            lambda c, s: c.all_reduce(buf.data.ptr, buf.data.ptr, n, name, op, s),
        )

    def broadcast(self, buf, root):
        name, n = cuda_nccl.wire_dtype(buf)
        return self._run(
            "broadcast", [buf], lambda c, s: c.broadcast(buf.data.ptr, n, name, root, s)
        )

    def reduce(self, buf, op, root):
        cuda_nccl.nccl_op(op)  # an op NCCL lacks is refused before anything is enqueued
        name, n = cuda_nccl.wire_dtype(buf)
        return self._run(
            "reduce", [buf], lambda c, s: c.reduce(buf.data.ptr, buf.data.ptr, n, name, op, root, s)
        )

    def allgather(self, send, recv):
        name, n = cuda_nccl.wire_dtype(send)
        return self._run(
            "all_gather",
            [send, recv],
            lambda c, s: c.all_gather(send.data.ptr, recv.data.ptr, n, name, s),
        )

    def reduce_scatter(self, send, recv, op):
        cuda_nccl.nccl_op(op)  # an op NCCL lacks is refused before anything is enqueued
        name, n = cuda_nccl.wire_dtype(recv)
        return self._run(
            "reduce_scatter",
            [send, recv],
            lambda c, s: c.reduce_scatter(send.data.ptr, recv.data.ptr, n, name, op, s),
        )

    def _grouped(self, op, arrays, pairs):
        """NCCL has no alltoall/gather/scatter: grouped sends and receives
        ((kind, array, byte offset, bytes, peer) per pair, moved as uint8)."""

        def enqueue(c, s):
            cuda_nccl.group_start()
            try:
                for kind, arr, off, nbytes, peer in pairs:
                    ptr = arr.data.ptr + off
                    (c.send if kind == "send" else c.recv)(ptr, nbytes, "uint8", peer, s)
            finally:
                cuda_nccl.group_end()

        return self._run(op, arrays, enqueue)

    def alltoall(self, send, recv, send_counts, recv_counts, itemsize):
        pairs, so, ro = [], 0, 0
        for peer in range(self.size):
            sb, rb = send_counts[peer] * itemsize, recv_counts[peer] * itemsize
            pairs += [("send", send, so, sb, peer), ("recv", recv, ro, rb, peer)]
            so, ro = so + sb, ro + rb
        return self._grouped("all_to_all", [send, recv], pairs)

    def gather(self, send, recv, root):
        return self._rooted("gather", send, recv, root, own="send")

    def scatter(self, send, recv, root):
        return self._rooted("scatter", send, recv, root, own="recv")

    def _rooted(self, op, send, recv, root, own):
        """gather (`own` "send") and scatter ("recv"): every rank moves its own block with
        the root, and the root moves block p (at byte offset p * block) with each rank p,
        in the other direction."""
        arrays = {"send": send, "recv": recv}
        other = "recv" if own == "send" else "send"
        nb = arrays[own].nbytes
        pairs = [(own, arrays[own], 0, nb, root)]
        if self.rank == root:
            pairs += [(other, arrays[other], p * nb, nb, p) for p in range(self.size)]
        return self._grouped(op, [send, recv], pairs)

    def send(self, buf, peer, tag):
        return self._grouped("send", [buf], [("send", buf, 0, buf.nbytes, peer)])

    def recv(self, buf, peer, tag):
        if peer is None:
            raise ValueError(
                "recv(): NCCL needs an explicit src (it cannot receive from any rank); give src="
            )
        return self._grouped("recv", [buf], [("recv", buf, 0, buf.nbytes, peer)])
