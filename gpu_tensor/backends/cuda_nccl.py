"""NCCL for cuda tensors, through CuPy's low-level `cupy.cuda.nccl.NcclCommunicator`.

The mechanism only: raw device pointers, element counts, NCCL's dtype and op codes, and a
stream pointer. The policy (which stream, events, record_stream, the watchdog) lives in
`gpu_tensor.distributed.nccl_engine`. cupyx.distributed's NCCLBackend is not used: it takes
only cupy.ndarray and has no bfloat16, AVG or async handles. The library comes from the
optional `nvidia-nccl-cu12`/`-cu13` wheel (about 300 MB), which CuPy preloads.
"""

from __future__ import annotations

import warnings

import numpy as np

from ._cupy import cupy, cupy_installed

__all__ = [
    "available",
    "version",
    "unique_id",
    "Communicator",
    "group_start",
    "group_end",
    "nccl_op",
]

# ncclDataType_t / ncclRedOp_t values from nccl.h. CuPy's module has names for most, not for
# all of them in every version (bfloat16, avg), so the header's numbers are the table.
_DTYPES = {
    "int8": 0,
    "uint8": 1,
    "bool": 1,
    "int32": 2,
    "uint32": 3,
    "int64": 4,
    "uint64": 5,
    "float16": 6,
    "float32": 7,
    "float64": 8,
    "bfloat16": 9,
}
_OPS = {"SUM": 0, "PRODUCT": 1, "MAX": 2, "MIN": 3, "AVG": 4}


def _nccl():
    cupy()  # CuPy finds and preloads the NCCL library
    from cupy.cuda import nccl

    return nccl


def available() -> bool:
    """True when CuPy can load an NCCL library (needs no GPU)."""
    if not cupy_installed():
        return False
    try:
        with warnings.catch_warnings():  # CuPy warns when it finds no NCCL: we answer False
            warnings.simplefilter("ignore")
            return bool(_nccl().available)
    except Exception:  # noqa: BLE001 - a broken CUDA install counts as unavailable
        return False


def version() -> int:
    return int(_nccl().get_version())


def unique_id():
    """A fresh ncclUniqueId (what rank 0 broadcasts to the others)."""
    return _nccl().get_unique_id()


def nccl_dtype(name: str) -> int:
    """NCCL's code for a gpu_tensor dtype name (complex is reduced as its float pairs)."""
    code = _DTYPES.get(name)
    if code is None:
        raise TypeError(
            f"NCCL has no {name} type (it has int8, uint8, int32, int64, float16, "
            "bfloat16, float32 and float64); convert the tensor first, or use the "
            "mpi backend for it"
        )
    return code


def nccl_op(name: str) -> int:
    """NCCL's code for a reduce op name (after reduce_op.check_op). NCCL has no bitwise
    reductions: torch's NCCL backend refuses them with this ValueError too."""
    code = _OPS.get(name)
    if code is None:
        raise ValueError(
            f"Cannot use ReduceOp.{name} with NCCL (NCCL reduces with SUM, "
            "PRODUCT, MIN, MAX and AVG); use the mpi backend for bitwise "
            "reductions"
        )
    return code


class Communicator:
    """One rank's NCCL communicator on one device."""

    def __init__(self, nranks: int, uid, rank: int, device_index: int):
        cp = cupy()
        with cp.cuda.Device(device_index):
            self._comm = _nccl().NcclCommunicator(nranks, uid, rank)
        self.device_index = device_index

    def all_reduce(self, send: int, recv: int, count: int, dtype: str, op: str, stream: int):
        self._comm.allReduce(send, recv, count, nccl_dtype(dtype), nccl_op(op), stream)

    def broadcast(self, ptr: int, count: int, dtype: str, root: int, stream: int):
        self._comm.broadcast(ptr, ptr, count, nccl_dtype(dtype), root, stream)

    def reduce(self, send: int, recv: int, count: int, dtype: str, op: str, root: int, stream: int):
        self._comm.reduce(send, recv, count, nccl_dtype(dtype), nccl_op(op), root, stream)

    def all_gather(self, send: int, recv: int, count: int, dtype: str, stream: int):
        self._comm.allGather(send, recv, count, nccl_dtype(dtype), stream)

    def reduce_scatter(self, send: int, recv: int, count: int, dtype: str, op: str, stream: int):
        self._comm.reduceScatter(send, recv, count, nccl_dtype(dtype), nccl_op(op), stream)

    def send(self, ptr: int, count: int, dtype: str, peer: int, stream: int):
        self._comm.send(ptr, count, nccl_dtype(dtype), peer, stream)

    def recv(self, ptr: int, count: int, dtype: str, peer: int, stream: int):
        self._comm.recv(ptr, count, nccl_dtype(dtype), peer, stream)

    def check_async_error(self) -> None:
        self._comm.check_async_error()

    def abort(self) -> None:
        self._comm.abort()

    def destroy(self) -> None:
        self._comm.destroy()


def group_start() -> None:
    _nccl().groupStart()


def group_end() -> None:
    _nccl().groupEnd()


def wire_dtype(array) -> tuple[str, int]:
    """(NCCL dtype name, element count) for a contiguous device array: bfloat16 arrives as
    its uint16 bits, bool as uint8 and complex as float pairs."""
    dt = np.dtype(array.dtype)
    if dt == np.uint16:  # how the cuda backend stores bfloat16 (backends/cuda.py)
        return "bfloat16", array.size
    if dt.kind == "c":
        return ("float32" if dt.itemsize == 8 else "float64"), 2 * array.size
    return dt.name, array.size
