"""A tensor's values as a buffer an engine can use, and the way back into the tensor.

Collectives are in place, as in torch, but engines need C-contiguous buffers of a type they
can reduce. `Staged` makes that buffer with the fewest copies:
- MPI, cpu tensor, contiguous, MPI-reducible dtype: the tensor's own memory (no copy);
- MPI, non-contiguous: a contiguous copy, copied back when the op finishes (torch does the
  same for gloo);
- MPI, cuda tensor (emulated or real): a page-locked host buffer from our pinned pool (the
  MPI wheels are not CUDA-aware), copied back to the device when the op finishes;
- NCCL: the tensor's device array, or a contiguous device copy.
For reductions, bfloat16 (no MPI type) is widened to float32 and rounded back, bool is
reduced as uint8 (its SUM/PRODUCT already mapped to MAX/MIN, torch's logical or/and), and
an emulated AVG is a SUM followed by the division here.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Staged"]

_F32 = np.dtype(np.float32)
_U8 = np.dtype(np.uint8)


class Staged:
    """`buf`: the engine's buffer. `finish()`: divide for AVG, write back, once."""

    def __init__(
        self,
        t,
        *,
        device_engine: bool = False,
        reduce: bool = False,
        read: bool = True,
        avg_divisor: int | None = None,
    ):
        self.t = t
        self.avg_divisor = avg_divisor
        self._convert = None  # numpy dtype the buffer is reduced in, if not the tensor's
        if device_engine:
            self._stage_device(t)
            return
        if t.device.type == "cpu":
            data = t._data
            self._host = None
        else:  # through the pinned pool: one D2H copy in, one H2D copy out
            from ..creation import empty

            self._host = empty(tuple(t.shape), dtype=t.dtype, pin_memory=True)
            if read:
                self._host.copy_(t)
            data = self._host._data
        self._copy_back = not data.flags.c_contiguous
        buf = np.ascontiguousarray(data) if self._copy_back else data
        if reduce and t.dtype.name == "bfloat16":
            self._convert, self._raw = buf, buf
            buf = buf.astype(_F32)
        elif reduce and buf.dtype == np.bool_:
            buf = buf.view(_U8)
        self._data = data
        self.buf = buf

    def _stage_device(self, t) -> None:
        from ..backends import get_backend

        data = t._data
        self._host = None
        self._device = True
        self._copy_back = not data.flags.c_contiguous
        buf = get_backend(t.device).contiguous(data) if self._copy_back else data
        self._data = data
        self.buf = buf.view(np.uint8) if buf.dtype == np.bool_ else buf

    def finish(self) -> None:
        buf = self.buf
        if self.avg_divisor is not None:
            _divide(buf, self.avg_divisor)
        if self._convert is not None:  # float32 back to bfloat16 (round to nearest even)
            self._raw[...] = buf.astype(self._raw.dtype)
            buf = self._raw
        if getattr(self, "_device", False):
            if self._copy_back:
                from ..backends import get_backend

                get_backend(self.t.device).copy_(self._data, buf.view(self._data.dtype))
        else:
            if self._copy_back:
                np.copyto(self._data, buf.view(self._data.dtype))
            if self._host is not None:
                self.t.detach().copy_(self._host)
        self.t._bump_version()


def _divide(buf, n: int) -> None:
    """buf /= n in place: true division for floats; for integers, division rounding toward
    zero (what NCCL's integer AVG does)."""
    if buf.dtype.kind in "fc":
        buf /= n
    elif buf.dtype.kind == "u":
        buf //= n
    else:
        q = np.abs(buf) // n
        buf[...] = np.where(buf < 0, -q, q)
