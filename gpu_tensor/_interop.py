"""Zero-copy interop: `__array__` (cpu), DLPack both ways, `__cuda_array_interface__` v3.

Emulated cuda tensors live in host memory, so they export as *host* memory (DLPack device
kDLCPU, no `__cuda_array_interface__`): a consumer that believed a host address was device
memory would crash. Real cuda tensors export through their cupy array; the CAI `stream`
field names our current stream (`gt.cuda.stream(s)` included), DLPack's `stream=` goes to cupy.
cpu tensors wait for a non_blocking copy still landing in them before handing out memory.
"""

from __future__ import annotations

import numpy as np

from . import dtype as _dt
from ._tensor import Tensor
from .backends import get_backend
from .device import CPU, _make

__all__ = ["from_dlpack", "from_cupy"]

_KDLCPU, _KDLCUDA = 1, 2


def _real_cuda(t) -> bool:
    """t's array is device memory (a cupy array), not host memory under a cuda name."""
    return t.device.type == "cuda" and not get_backend(t.device).host_arrays


def __array__(self, dtype=None, copy=None):
    if self.device.type != "cpu":
        raise TypeError(
            f"can't convert {self.device} tensor to numpy; copy it to host memory first with "
            ".cpu() (e.g. np.asarray(t.cpu()))"
        )
    arr = self._host()  # waits for a non_blocking copy still landing in it
    if dtype is not None and np.dtype(dtype) != arr.dtype:
        if copy is False:
            raise ValueError("__array__(copy=False) with a different dtype needs a copy")
        return arr.astype(dtype)
    return arr.copy() if copy else arr


def __dlpack_device__(self):
    if _real_cuda(self):
        return (_KDLCUDA, self.device.index)
    return (_KDLCPU, 0)


def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    if self.requires_grad:  # torch's class and words
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    if self.dtype is _dt.bfloat16 and _real_cuda(self):
        raise BufferError(
            "bfloat16 cuda tensors cannot be exported via DLPack here: cupy has no bfloat16, "
            "so gpu_tensor stores the bits as uint16. Export t.view(gt.int16) or "
            "t.float() instead."
        )
    arr = self._data if self.device.type != "cpu" else self._host()  # host reads wait
    kwargs = {}
    if max_version is not None:
        kwargs["max_version"] = max_version
    if dl_device is not None:
        kwargs["dl_device"] = dl_device
    if copy is not None:
        kwargs["copy"] = copy
    if _real_cuda(self):
        if stream is not None:
            kwargs["stream"] = stream
        return arr.__dlpack__(**kwargs)
    try:
        return arr.__dlpack__(**kwargs)
    except TypeError:  # an older numpy without the keyword arguments
        return arr.__dlpack__()


def _cuda_array_interface(self):
    if not _real_cuda(self):
        raise AttributeError(
            f"__cuda_array_interface__ is only available on real cuda tensors (this one is "
            f"on {self.device}{', emulated in host memory' if self.is_cuda else ''})"
        )
    if self.dtype is _dt.bfloat16:
        raise AttributeError(
            "bfloat16 cuda tensors are stored as uint16 bits and have no "
            "__cuda_array_interface__ typestr; use t.float()"
        )
    from .cuda.streams import _cai_stream

    cai = dict(self._data.__cuda_array_interface__)
    # v3 `stream`: the stream the data is ordered on, i.e. our current stream (which may be
    # one cupy does not know is current), with the legacy default stream spelled 1.
    cai["stream"] = _cai_stream(self.device)
    return cai


def from_cupy(arr):
    """A cuda tensor sharing a cupy array's memory (keeps the array alive)."""
    dev = _make("cuda", arr.device.id)
    return Tensor._make(arr, dev, _dt.from_numpy_dtype(arr.dtype))


def from_dlpack(ext):
    """A tensor sharing the memory of a DLPack producer (numpy, cupy, torch, a Tensor)."""
    if isinstance(ext, Tensor):
        if ext.requires_grad:  # torch exports through __dlpack__, which refuses
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        return ext
    if type(ext).__name__ == "PyCapsule":  # legacy DLPack: a bare "dltensor" capsule
        from ._capsule import LegacyCapsule

        ext = LegacyCapsule(ext)
    if not hasattr(ext, "__dlpack_device__"):
        raise RuntimeError(
            f"from_dlpack expects an object with __dlpack__/__dlpack_device__, "
            f"got {type(ext).__name__}"
        )
    kind, index = ext.__dlpack_device__()
    kind = int(kind)
    if kind == _KDLCPU or kind == 3:  # kDLCPU, kDLCUDAHost (pinned host memory)
        arr = np.from_dlpack(ext)
        return Tensor._make(arr, CPU, _dt.from_numpy_dtype(arr.dtype))
    if kind in (_KDLCUDA, 13):  # kDLCUDA, kDLCUDAManaged
        from .backends._cupy import cupy

        cp = cupy()
        arr = cp.from_dlpack(ext)
        return Tensor._make(arr, _make("cuda", int(index)), _dt.from_numpy_dtype(arr.dtype))
    raise BufferError(f"from_dlpack: unsupported DLPack device type {kind}")
