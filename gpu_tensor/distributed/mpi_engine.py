"""The MPI engine: collectives over C-contiguous numpy buffers through mpi4py.

Every operation is started non-blocking (MPI_I*) and returned as a request the Work polls,
so a blocking call can still time out instead of hanging. Buffers are host memory: cpu
tensors directly, cuda tensors staged through the pinned pool by the caller (the MPI wheels
are not CUDA-aware). Data-movement ops send raw bytes, so every dtype moves unchanged;
reductions get buffers in a dtype MPI can reduce (see `staging.py`).
"""

from __future__ import annotations

from . import _mpi
from .work import poll

__all__ = ["MpiEngine"]


class _Requests:
    """One or more MPI requests seen as one (the protocol Work polls)."""

    __slots__ = ("_reqs", "status")

    def __init__(self, *reqs):
        self._reqs = list(reqs)
        self.status = None

    def test(self) -> bool:
        MPI = _mpi.mpi()
        if len(self._reqs) == 1:
            st = MPI.Status()
            done = self._reqs[0].Test(st)
            if done:
                self.status = st
            return done
        return MPI.Request.Testall(self._reqs)

    def wait(self, limit_s: float) -> None:
        poll(self.test, limit_s)


class MpiEngine:
    """Collectives on one MPI communicator. `comm` is an mpi4py Intracomm."""

    name = "mpi"
    device_engine = False  # buffers are host numpy arrays
    native_avg = False  # MPI has no AVG: SUM, then staging divides

    def __init__(self, comm):
        MPI = _mpi.mpi()
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self._ops = {
            "SUM": MPI.SUM,
            "AVG": MPI.SUM,
            "PRODUCT": MPI.PROD,
            "MIN": MPI.MIN,
            "MAX": MPI.MAX,
            "BAND": MPI.BAND,
            "BOR": MPI.BOR,
            "BXOR": MPI.BXOR,
        }
        self._in_place = MPI.IN_PLACE

    def allreduce(self, buf, op: str):
        return _Requests(self.comm.Iallreduce(self._in_place, buf, op=self._ops[op]))

    def broadcast(self, buf, root: int):
        return _Requests(self.comm.Ibcast(_bytes(buf), root=root))

    def reduce(self, buf, op: str, root: int):
        if self.rank == root:
            return _Requests(self.comm.Ireduce(self._in_place, buf, op=self._ops[op], root=root))
        return _Requests(self.comm.Ireduce(buf, None, op=self._ops[op], root=root))

    def allgather(self, send, recv):
        return _Requests(self.comm.Iallgather(_bytes(send), _bytes(recv)))

    def reduce_scatter(self, send, recv, op: str):
        return _Requests(self.comm.Ireduce_scatter_block(send, recv, op=self._ops[op]))

    def alltoall(self, send, recv, send_counts, recv_counts, itemsize: int):
        """Counts in elements per peer (all_to_all_single's split sizes times row length)."""
        MPI = _mpi.mpi()
        sc = [c * itemsize for c in send_counts]
        rc = [c * itemsize for c in recv_counts]
        return _Requests(
            self.comm.Ialltoallv(
                [_bytes(send), (sc, _displs(sc)), MPI.BYTE],
                [_bytes(recv), (rc, _displs(rc)), MPI.BYTE],
            )
        )

    def gather(self, send, recv, root: int):
        return _Requests(
            self.comm.Igather(_bytes(send), None if recv is None else _bytes(recv), root=root)
        )

    def scatter(self, send, recv, root: int):
        return _Requests(
            self.comm.Iscatter(None if send is None else _bytes(send), _bytes(recv), root=root)
        )

    def send(self, buf, peer: int, tag: int):
        return _Requests(self.comm.Isend(_bytes(buf), dest=peer, tag=tag))

    def recv(self, buf, peer: int | None, tag: int):
        MPI = _mpi.mpi()
        src = MPI.ANY_SOURCE if peer is None else peer
        return _Requests(self.comm.Irecv(_bytes(buf), source=src, tag=tag))

    def barrier(self):
        return _Requests(self.comm.Ibarrier())

    # objects (pickled) and small control messages: blocking, MPI's lowercase calls
    def allgather_object(self, obj):
        return self.comm.allgather(obj)

    def bcast_object(self, obj, root: int):
        return self.comm.bcast(obj, root=root)

    def gather_object(self, obj, root: int):
        return self.comm.gather(obj, root=root)

    def scatter_object(self, objs, root: int):
        return self.comm.scatter(objs, root=root)


def _bytes(arr):
    """A byte view: MPI moves the bits, whatever the dtype (bfloat16 has no MPI type)."""
    return arr.reshape(-1).view("u1")


def _displs(counts):
    out, at = [], 0
    for c in counts:
        out.append(at)
        at += c
    return out
