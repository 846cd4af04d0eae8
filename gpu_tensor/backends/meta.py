"""meta: tensors with shape, dtype and strides and no storage (torch's device='meta').

Its arrays are MetaArrays (meta_array.py; the shape rules in meta_shapes.py): ops run their
usual code, and every numpy call on a MetaArray computes only the result's shape and dtype,
so a forward pass over meta tensors checks shapes at no memory cost, whatever the sizes. Reading values is refused
with torch's errors: copying out (`.cpu()`, `.tolist()`, repr's values) raises
NotImplementedError("Cannot copy out of meta tensor; no data!").
"""

from __future__ import annotations

import types

import numpy as np

from ..device import _make
from ..storage import UntypedStorage
from .base import Backend
from .meta_array import FAKE_BASE, MetaArray, meta_empty, phantom

__all__ = ["MetaBackend", "NO_DATA"]

NO_DATA = "Cannot copy out of meta tensor; no data!"


def _meta(array):
    return array if isinstance(array, MetaArray) else meta_empty(np.shape(array), array.dtype)


class _Proxy(types.ModuleType):
    """numpy (or one of its namespaces) with a few names replaced."""

    def __init__(self, target, overrides):
        super().__init__(getattr(target, "__name__", "numpy"))
        self._target = target
        self.__dict__.update(overrides)

    def __getattr__(self, name):
        return getattr(self._target, name)


def _as_strided(x, shape=None, strides=None, subok=False, writeable=True):
    if isinstance(x, MetaArray):  # the phantom's view: metadata only
        return MetaArray(np.lib.stride_tricks.as_strided(x._p, shape, strides))
    return np.lib.stride_tricks.as_strided(x, shape, strides, subok, writeable)


# the meta backend's `xp`: numpy, with as_strided taking MetaArrays (numpy's own converts
# its argument with np.array, which a MetaArray refuses)
meta_numpy = _Proxy(
    np,
    {
        "lib": _Proxy(
            np.lib, {"stride_tricks": _Proxy(np.lib.stride_tricks, {"as_strided": _as_strided})}
        )
    },
)


class MetaBackend(Backend):
    xp = meta_numpy  # numpy (its functions dispatch to MetaArray's shape rules)
    is_meta = True

    def __init__(self):
        self.device = _make("meta", None)

    def empty(self, shape, np_dtype):
        return meta_empty(shape, np_dtype), None

    def adopt(self, array):
        return _meta(array), None

    def storage_of(self, array):
        a = _meta(array)
        span = 0
        if a.size:
            span = (
                (a.address - FAKE_BASE)
                + a.itemsize
                + sum((n - 1) * s for n, s in zip(a.shape, a.strides, strict=True))
            )
        return UntypedStorage(meta_empty((span,), np.uint8), FAKE_BASE, self.device)

    def ptr(self, array) -> int:
        return _meta(array).address if isinstance(array, MetaArray) else FAKE_BASE

    def from_storage(self, storage, shape, strides, offset, np_dtype):
        dt = np.dtype(np_dtype)
        return MetaArray(
            phantom(
                FAKE_BASE + offset * dt.itemsize, shape, tuple(s * dt.itemsize for s in strides), dt
            )
        )

    def from_host(self, host_array):
        return meta_empty(np.shape(host_array), host_array.dtype), None

    def to_host(self, array):
        raise NotImplementedError(NO_DATA)

    def copy_(self, dst, src) -> None:
        np.broadcast_shapes(
            np.shape(src) if not isinstance(src, MetaArray) else src.shape, dst.shape
        )  # the shape check a real copy makes

    def contiguous(self, array):
        return meta_empty(array.shape, array.dtype)

    def astype(self, array, np_dtype):
        return meta_empty(array.shape, np_dtype)

    def elementwise(self, key, fn, args, out_np, params=None):
        out = fn(*args, **params) if params else fn(*args)
        return out if isinstance(out, MetaArray) else _meta(np.asarray(out))

    def compute_into(self, fn, operands, plan):
        return fn(*operands)

    def by_pieces(self, fn, operands, shape, np_dtype, whole=()):
        return meta_empty(shape, np_dtype)

    def index_add_(self, array, index, values) -> None:
        pass

    def index_mul_(self, array, index, values) -> None:
        pass
