"""QTensor: a quantized tensor (torch's QuantizedCPU/QuantizedCUDA tensors).

A Tensor whose `_data` holds the storage integers (int8 for qint8, uint8 for quint8, int32
for qint32) and whose `dtype` is the quantized dtype; its `Quantizer` says what the integers
mean. Views (`view`, `reshape`, `transpose`, slicing, ...) go through `_view_of` like every
tensor's, and keep the quantizer: per-tensor always; per-channel while the channel axis
stays where it is (torch refuses the views that would move it, and a view that selects or
slices channels becomes per-tensor with the first channel's parameters, as in torch).
Everything else a quantized tensor can do is its own methods here; arithmetic is refused
(gpu_tensor/quantized/refuse.py), as torch refuses it.
"""

from __future__ import annotations

import threading

import numpy as np

from .. import _modes, creation
from .. import dtype as _dt
from .._tensor import Tensor
from ..backends import get_backend
from ..device import resolve
from ..transfer import move as _move
from . import affine
from .quantizer import Quantizer

__all__ = ["QTensor", "live_count", "sync_bit"]

_new = object.__new__
# Quantized tensors alive: the QUANTIZED bit of the modes word is on while there are any.
# Set when one is made and the bit is off; cleared when the last one dies, from __del__
# only if _modes' lock is free right then (a finaliser may run inside _modes while this
# thread holds that lock), else by the handler on the next op (sync_bit). _live_lock
# guards only the count: nothing else is called under it. (_modes has no public reader
# of its process-wide bits or its lock; both are read here, nowhere else.)
_live = [0]
_live_lock = threading.RLock()


def live_count() -> int:
    return _live[0]


def _born() -> None:
    with _live_lock:
        _live[0] += 1
    if not _modes._global[0] & _modes.QUANTIZED:
        _modes.set_global(_modes.QUANTIZED, True)


def sync_bit() -> None:
    """Clear the bit when no quantized tensor is left (then look again: one made meanwhile
    by another thread sets it back)."""
    if _live[0] == 0:
        _modes.set_global(_modes.QUANTIZED, False)
        if _live[0]:
            _modes.set_global(_modes.QUANTIZED, True)


_PER_TENSOR = (
    "Expected quantizer->qscheme() == kPerTensorAffine to be true, but got false.  "
    "(Could this error message be improved?  If so, please report an enhancement "
    "request to PyTorch.)"
)
_PER_CHANNEL = (
    "Expected quantizer->qscheme() == kPerChannelAffine || quantizer->qscheme() == "
    "kPerChannelAffineFloatQParams to be true, but got false.  (Could this error "
    "message be improved?  If so, please report an enhancement request to "
    "PyTorch.)"
)
_NEEDS_QDTYPE = "Creation of quantized tensor requires quantized dtype like torch.quint8"


class QTensor(Tensor):
    """A quantized tensor: storage integers + a Quantizer (make one with
    gt.quantize_per_tensor / gt.quantize_per_channel)."""

    __slots__ = ("_qz",)

    @staticmethod
    def _of(data, device, qz: Quantizer, st=None, base=None) -> QTensor:
        t = _new(QTensor)
        t._data = data
        t._st = st
        t.device = device
        t.dtype = qz.dtype
        t._requires_grad = False
        t._grad = None
        t.grad_fn = None
        t._base = base
        t._qz = qz
        _born()
        return t

    def __del__(self):
        with _live_lock:
            _live[0] -= 1
            last = _live[0] == 0
        if last and _modes._lock.acquire(blocking=False):
            _modes._lock.release()  # not held by this thread: set_global cannot deadlock
            sync_bit()

    @staticmethod
    def _from_ints(ints: Tensor, qz: Quantizer) -> QTensor:
        """The quantized tensor over the integer tensor `ints` (shares its memory)."""
        return QTensor._of(ints._data, ints.device, qz, ints._st, ints._base)

    def _ints(self) -> Tensor:
        """The storage integers as a plain tensor sharing memory (no copy)."""
        storage = _dt.QUANTIZED[self.dtype]
        base = self._base if self._base is not None else self
        return Tensor._make(self._data, self.device, storage, self._st, base)

    def _view_of(self, data) -> QTensor:
        base = self._base
        return QTensor._of(
            data, self.device, _view_quantizer(self, data), self._st, self if base is None else base
        )

    # -- torch's quantized-tensor API -------------------------------------------------
    @property
    def is_quantized(self) -> bool:
        return True

    def qscheme(self):
        return self._qz.scheme

    def q_scale(self) -> float:
        if self._qz.per_channel_scheme:
            raise RuntimeError(_PER_TENSOR)
        return self._qz.scale

    def q_zero_point(self) -> int:
        if self._qz.per_channel_scheme:
            raise RuntimeError(_PER_TENSOR)
        return self._qz.zero_point

    def q_per_channel_scales(self) -> Tensor:
        return self._per_channel()[0]

    def q_per_channel_zero_points(self) -> Tensor:
        return self._per_channel()[1]

    def q_per_channel_axis(self) -> int:
        if not self._qz.per_channel_scheme:
            raise RuntimeError(_PER_CHANNEL)
        return self._qz.axis

    def _per_channel(self):
        if not self._qz.per_channel_scheme:
            raise RuntimeError(_PER_CHANNEL)
        scales, zps = self._qz.params_on(self.device, creation)
        return scales.clone(), zps.clone()

    def int_repr(self) -> Tensor:
        """The storage integers, as a new tensor (a copy, as torch's)."""
        return self._ints().clone()

    def dequantize(self) -> Tensor:
        """The real values, float32: (q - zero_point) * scale."""
        qz = self._qz
        ints = self._ints()
        if not qz.per_channel_scheme:
            return affine.dequantize_per_tensor(ints, qz.zero_point, qz.scale)
        scales, zps = qz.params_on(self.device, creation)
        shape = [1] * ints.ndim
        shape[qz.axis] = -1
        if zps.dtype is _dt.float32:  # float qparams: (q - zp) * scale in float32
            return (ints.float() - zps.view(shape)) * scales.view(shape)
        return affine.dequantize_per_channel(ints, zps.view(shape), scales.view(shape))

    # -- copies and moves that keep the quantization -----------------------------------
    def clone(self, memory_format=None) -> QTensor:
        return QTensor._from_ints(self._ints().clone(memory_format=memory_format), self._qz)

    def contiguous(self, memory_format=None) -> QTensor:
        if self.is_contiguous() and memory_format is None:
            return self
        return QTensor._from_ints(self._ints().contiguous(), self._qz)

    def to(
        self, *args, device=None, dtype=None, non_blocking=False, copy=False, memory_format=None
    ) -> QTensor:
        for a in args:
            if isinstance(a, Tensor):
                device, dtype = a.device, a.dtype
            elif _move._is_dtype(a):
                dtype = a
            elif a is not None and not isinstance(a, bool):
                device = a
        if dtype is not None and _dt.to_dtype(dtype) is not self.dtype:
            if _dt.to_dtype(dtype) not in _dt.QUANTIZED:
                raise RuntimeError(_NEEDS_QDTYPE)
            raise RuntimeError(
                "Expected self.scalar_type() == src.scalar_type() to be true, but got false.  "
                "(Could this error message be improved?  If so, please report an "
                "enhancement request to PyTorch.)"
            )
        dev = self.device if device is None else resolve(device)
        if dev is self.device and not copy:
            return self
        moved = _move.to(self._ints(), dev, non_blocking=non_blocking, copy=copy)
        return QTensor._from_ints(moved, self._qz)

    def cpu(self) -> QTensor:
        return self.to("cpu")

    def cuda(self, device=None, non_blocking=False) -> QTensor:
        return self.to("cuda" if device is None else device, non_blocking=non_blocking)

    def __reduce__(self):
        """Pickling: the storage integers, device and quantization parameters."""
        qz = self._qz
        params = (
            (qz.scale, qz.zero_point)
            if not qz.per_channel_scheme
            else (qz.scales, qz.zero_points, qz.axis)
        )
        return (_rebuild, (np.array(self._ints()._host()), str(self.device), qz.dtype.name, params))

    def __repr__(self) -> str:
        from .repr import format_qtensor  # kept apart: the class reads without it

        return format_qtensor(self)

    __str__ = __repr__

    # -- what torch refuses -------------------------------------------------------------
    def _no_float(self, *args, **kwargs):
        raise RuntimeError(_NEEDS_QDTYPE)

    float = double = half = bfloat16 = _no_float

    def numpy(self, *, force: bool = False):
        raise TypeError(
            f"Got unsupported ScalarType {_dt.SCALAR_TYPE_NAMES[self.dtype.name]}; "
            "use int_repr().numpy() or dequantize().numpy()"
        )

    def tolist(self):
        raise RuntimeError(
            "load_scalar: invalid type; use dequantize().tolist() or int_repr().tolist()"
        )

    def item(self):
        return self.dequantize().item()


def _rebuild(ints, device, dtype_name, params):
    dtype = _dt.to_dtype(dtype_name)
    qz = (
        Quantizer.per_tensor(dtype, *params)
        if len(params) == 2
        else (Quantizer.per_channel(dtype, *params))
    )
    return QTensor._from_ints(creation.tensor(ints, device=device), qz)


def _view_quantizer(parent: QTensor, data) -> Quantizer:
    """The quantizer of `data`, a view of `parent._data` (see the module docstring)."""
    qz = parent._qz
    if not qz.per_channel_scheme:
        return qz
    old = parent._data
    a = qz.axis
    if (
        data.ndim == old.ndim
        and data.shape[a] == old.shape[a]
        and (data.strides[a] == old.strides[a] or data.shape[a] == 1)
    ):
        return qz  # the channels stay where they are (other dims sliced, expanded, ...)
    dims = list(zip(old.shape, old.strides, strict=True))
    if data.ndim == old.ndim - 1:
        now = list(zip(data.shape, data.strides, strict=True))
        for d in range(old.ndim):
            if dims[:d] + dims[d + 1 :] == now:
                if d == a:
                    return qz.channel(_channel_at(parent, data))  # select along the axis
                return qz.with_axis(a - (d < a))  # select along another dim: axis shifts
    c = _channel_at(parent, data)
    if data.ndim == old.ndim and data.strides == old.strides:
        return qz.channel(c)  # a slice along the axis (other dims possibly sliced too)
    if data.ndim == old.ndim and sorted(data.shape) == sorted(old.shape):
        raise RuntimeError("Setting strides is possible only on uniformly quantized tensor")
    got = data.shape[a] if a < data.ndim else data.size
    raise RuntimeError(
        f"length of scales must equal to channel, expected {got} got, {len(qz.scales)}"
    )


def _channel_at(parent: QTensor, data) -> int:
    """The channel index of the view's first element (its offset in the parent, split
    into per-dim indices by the parent's strides, largest first)."""
    backend = get_backend(parent.device)
    offset = backend.ptr(data) - backend.ptr(parent._data)
    old = parent._data
    index = {}
    for d in sorted(range(old.ndim), key=lambda d: -abs(old.strides[d])):
        st = old.strides[d]
        index[d] = offset // st if st > 0 and old.shape[d] > 1 else 0
        offset -= index[d] * st
    return index.get(parent._qz.axis, 0)
