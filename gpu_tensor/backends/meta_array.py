"""MetaArray: the `_data` of a meta tensor: shape, dtype, strides and offset, no bytes.

A MetaArray keeps a *phantom*: a numpy array whose metadata are the tensor's and whose
address points at no memory (a fixed fake address). numpy computes views of it (slicing,
transpose, reshape without a copy, dtype views, broadcasting) from metadata alone, so the
meta tensor's views get numpy's exact strides and offsets. The phantom is never handed to
anything that reads elements: every computation goes through the shape rules below.

numpy calls on a MetaArray (ufuncs, reductions, matmul, joins) reach `__array_ufunc__` /
`__array_function__`, which compute the result's shape and dtype without computing values
(dtype from the same call on one-element zeros). A function without a rule runs on
zero-strided stand-ins (every element aliases one real zero, so nothing out of bounds is
read) when its operands are small, and is refused with a clear error when they are not.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._result_strides import c_strides
from .meta_shapes import data_dependent as _data_dependent
from .meta_shapes import infer as _infer
from .meta_shapes import matmul_shape as _matmul_shape
from .meta_shapes import reduced as _reduced

__all__ = ["MetaArray", "FAKE_BASE", "meta_empty", "phantom"]

FAKE_BASE = 1 << 12  # every meta storage starts at this address; nothing is ever there
_SMALL = 1 << 20  # elements: below this a function without a shape rule runs on stand-ins
_SURROGATE = {1: "|u1", 2: "<u2", 4: "<u4", 8: "<u8", 16: "<c16"}
# numpy functions whose result's shape depends on the values: refused, as torch does
_DATA_DEPENDENT = {
    "nonzero",
    "argwhere",
    "flatnonzero",
    "unique",
    "extract",
    "compress",
    "bincount",
    "histogram",
    "histogram_bin_edges",
    "repeat",
    "unique_values",
    "unique_counts",
    "unique_inverse",
    "unique_all",
}
_REDUCTIONS = {
    "sum",
    "mean",
    "max",
    "min",
    "amax",
    "amin",
    "prod",
    "any",
    "all",
    "argmax",
    "argmin",
    "std",
    "var",
    "nansum",
    "nanmean",
    "nanmax",
    "nanmin",
    "count_nonzero",
    "median",
    "nanmedian",
    "ptp",
}


class _At:
    __slots__ = ("__array_interface__",)

    def __init__(self, addr, shape, strides, typestr):
        self.__array_interface__ = {
            "data": (addr, False),
            "shape": tuple(shape),
            "strides": tuple(strides),
            "typestr": typestr,
            "version": 3,
        }


def phantom(addr: int, shape, strides_bytes, dtype) -> np.ndarray:
    """A numpy array with these metadata over no memory (see the module docstring)."""
    dtype = np.dtype(dtype)
    arr = np.asarray(_At(addr, shape, strides_bytes, _SURROGATE[dtype.itemsize]))
    return arr.view(dtype)


def meta_empty(shape, dtype) -> MetaArray:
    """A fresh C-contiguous MetaArray (torch's strides, 0-size dims counted as 1)."""
    dtype = np.dtype(dtype)
    shape = tuple(int(n) for n in shape)
    return MetaArray(phantom(FAKE_BASE, shape, c_strides(shape, dtype.itemsize), dtype))


def _shape_of(x):
    return x.shape if isinstance(x, (MetaArray, np.ndarray)) else np.shape(x)


def _one(x):
    """A one-element zero of x's dtype (a Python scalar stays itself: numpy's weak
    scalars decide dtypes)."""
    if isinstance(x, MetaArray):
        return np.zeros((), x.dtype)
    if isinstance(x, np.ndarray):
        return np.zeros((), x.dtype)
    return x


def _stand_in(x):
    """x as a zero-strided real array (MetaArray) or itself."""
    if isinstance(x, MetaArray):
        if x.size > _SMALL:
            raise NotImplementedError
        return np.broadcast_to(np.zeros((), x.dtype), x.shape)
    if isinstance(x, (list, tuple)):
        return type(x)(_stand_in(v) for v in x)
    return x


def _to_meta(r):
    if isinstance(r, MetaArray):
        return r
    if isinstance(r, np.ndarray) or isinstance(r, np.generic):
        return meta_empty(np.shape(r), r.dtype)
    if isinstance(r, tuple):
        return tuple(_to_meta(v) for v in r)
    if isinstance(r, list):
        return [_to_meta(v) for v in r]
    return r


def _no_rule(name, operands):
    return NotImplementedError(
        f"gpu_tensor: {name} has no shape rule for meta tensors this large (more than "
        f"{_SMALL} elements in {[tuple(_shape_of(o)) for o in operands]}); run it on "
        "smaller meta tensors or on a real device"
    )


class MetaArray:
    """Array metadata without bytes (see the module docstring)."""

    __slots__ = ("_p",)
    __array_priority__ = 2000

    def __init__(self, p: np.ndarray):
        self._p = p

    # -- metadata (the phantom's, read without touching elements) ------------------------
    shape = property(lambda self: self._p.shape)
    strides = property(lambda self: self._p.strides)
    ndim = property(lambda self: self._p.ndim)
    size = property(lambda self: self._p.size)
    itemsize = property(lambda self: self._p.itemsize)
    dtype = property(lambda self: self._p.dtype)
    nbytes = property(lambda self: self._p.nbytes)
    flags = property(lambda self: self._p.flags)

    @property
    def address(self) -> int:
        return self._p.__array_interface__["data"][0]

    def __len__(self):
        if not self._p.ndim:
            raise TypeError("len() of unsized object")
        return self._p.shape[0]

    def __repr__(self):
        return f"MetaArray(shape={self.shape}, dtype={self.dtype}, strides={self.strides})"

    def __array__(self, dtype=None, copy=None):
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")

    # Value checks inside ops (an index bound, "any negative weight?") read no values here:
    # a meta tensor has none to break them, and torch's meta kernels skip such checks too.
    # User-facing reads (item(), int(tensor), bool(tensor)) are refused by the Tensor.
    def __bool__(self):
        return False

    def __int__(self):
        return 0

    __index__ = __int__

    def __float__(self):
        return 0.0

    # -- views: numpy's own metadata arithmetic on the phantom ---------------------------
    def __getitem__(self, idx):
        parts = idx if isinstance(idx, tuple) else (idx,)
        if all(
            p is None
            or p is Ellipsis
            or isinstance(p, (int, np.integer, slice))
            and not isinstance(p, bool)
            for p in parts
        ):
            return MetaArray(self._p[idx])
        if any(
            isinstance(p, MetaArray)
            and p.dtype == np.bool_
            or isinstance(p, np.ndarray)
            and p.dtype == np.bool_
            for p in parts
        ):
            raise _data_dependent("indexing with a boolean mask")
        probe = np.broadcast_to(np.zeros((), self.dtype), self.shape)
        index = tuple(np.zeros(p.shape, p.dtype) if isinstance(p, MetaArray) else p for p in parts)
        return meta_empty(probe[index if isinstance(idx, tuple) else index[0]].shape, self.dtype)

    def __setitem__(self, idx, value):
        pass  # no bytes to write

    def fill(self, value):
        pass

    def view(self, dtype=None):
        return MetaArray(self._p.view() if dtype is None else self._p.view(dtype))

    def transpose(self, *axes):
        return MetaArray(self._p.transpose(*axes))

    @property
    def T(self):
        return MetaArray(self._p.T)

    def swapaxes(self, a, b):
        return MetaArray(self._p.swapaxes(a, b))

    def squeeze(self, axis=None):
        return MetaArray(self._p.squeeze(axis))

    @property
    def real(self):
        return MetaArray(self._p.real)

    @property
    def imag(self):
        return MetaArray(self._p.imag)

    def reshape(self, *shape, order="C"):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        view = self._p.view()
        try:
            view.shape = shape  # raises where numpy would have to copy
        except AttributeError:
            return meta_empty(_infer(shape, self.size), self.dtype)
        return MetaArray(view)

    def ravel(self, order="C"):
        return self.reshape(-1)

    def flatten(self, order="C"):
        return meta_empty((self.size,), self.dtype)

    def copy(self, order="C"):
        return meta_empty(self.shape, self.dtype)

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        return meta_empty(self.shape, dtype)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    # -- reductions as methods -----------------------------------------------------------
    def _reduce(self, name, axis=None, keepdims=False, **kw):
        kw.pop("out", None)
        small = np.zeros(tuple(min(n, 1) for n in self.shape), self.dtype)
        with warnings.catch_warnings():  # e.g. var of one element: "degrees of freedom"
            warnings.simplefilter("ignore")
            dtype = (
                np.result_type(getattr(np, name)(small, **kw))
                if self.size
                else np.result_type(self.dtype)
            )
        return meta_empty(_reduced(self.shape, axis, keepdims), dtype)

    def sum(self, axis=None, dtype=None, out=None, keepdims=False, **kw):
        return self._reduce("sum", axis, keepdims, dtype=dtype)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, **kw):
        return self._reduce("mean", axis, keepdims, dtype=dtype)

    def max(self, axis=None, out=None, keepdims=False, **kw):
        return self._reduce("max", axis, keepdims)

    def min(self, axis=None, out=None, keepdims=False, **kw):
        return self._reduce("min", axis, keepdims)

    def __getattr__(self, name):
        """Anything else: the stand-in's attribute, results turned back into MetaArrays."""
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            target = getattr(_stand_in(self), name)
        except NotImplementedError:
            raise _no_rule(f"ndarray.{name}", [self]) from None
        if not callable(target):
            return _to_meta(target)

        def call(*args, **kwargs):
            try:
                args, kwargs = _stand_in(args), {k: _stand_in(v) for k, v in kwargs.items()}
            except NotImplementedError:
                raise _no_rule(f"ndarray.{name}", [self, *args]) from None
            return _to_meta(target(*args, **kwargs))

        return call

    # -- numpy functions -----------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        outs = out if isinstance(out, tuple) else ((out,) if out is not None else ())
        with np.errstate(all="ignore"):
            if method == "__call__":
                ones = [_one(x) for x in inputs]
                if ufunc is np.matmul:
                    shape = _matmul_shape(_shape_of(inputs[0]), _shape_of(inputs[1]))
                    sample = np.matmul(
                        *(np.zeros((1, 1), np.result_type(o)) for o in ones), **kwargs
                    )
                else:
                    shape = np.broadcast_shapes(*(_shape_of(x) for x in inputs))
                    sample = ufunc(*ones, **kwargs)
                samples = sample if isinstance(sample, tuple) else (sample,)
                result = tuple(
                    outs[i]
                    if i < len(outs) and outs[i] is not None
                    else meta_empty(shape, np.result_type(s))
                    for i, s in enumerate(samples)
                )
                return result if isinstance(sample, tuple) else result[0]
            if method == "reduce":
                (x,) = inputs
                axis = kwargs.pop("axis", 0)
                keepdims = kwargs.pop("keepdims", False)
                small = np.zeros(tuple(min(n, 1) for n in x.shape), x.dtype)
                dtype = (
                    ufunc.reduce(small, axis=axis, keepdims=keepdims, **kwargs).dtype
                    if x.size
                    else x.dtype
                )
                return outs[0] if outs else meta_empty(_reduced(x.shape, axis, keepdims), dtype)
            if method == "accumulate":
                (x,) = inputs
                dtype = ufunc.accumulate(
                    np.zeros((1,), x.dtype), **{k: v for k, v in kwargs.items() if k == "dtype"}
                ).dtype
                return outs[0] if outs else meta_empty(x.shape, dtype)
            if method == "at":
                return None
        return self._fallback(
            getattr(ufunc, method),
            inputs,
            dict(kwargs, **({"out": out} if out is not None else {})),
        )

    def __array_function__(self, func, types, args, kwargs):
        name = func.__name__
        if name in _DATA_DEPENDENT:
            raise _data_dependent(name)
        if name in _REDUCTIONS and args and isinstance(args[0], MetaArray):
            kw = dict(kwargs)
            axis = kw.pop("axis", args[1] if len(args) > 1 else None)
            keepdims = kw.pop("keepdims", False)
            kw.pop("out", None)
            return args[0]._reduce(name, axis, keepdims, **kw)
        if name in ("concatenate", "stack"):
            arrays = list(args[0])
            axis = kwargs.get("axis", args[1] if len(args) > 1 else 0)
            dtype = kwargs.get("dtype") or np.result_type(*(a.dtype for a in arrays))
            if name == "stack":
                shape = list(_shape_of(arrays[0]))
                axis = axis % (len(shape) + 1)
                shape.insert(axis, len(arrays))
            else:
                shape = list(_shape_of(arrays[0]))
                axis = axis % len(shape)
                shape[axis] = sum(_shape_of(a)[axis] for a in arrays)
            out = kwargs.get("out")
            return out if out is not None else meta_empty(shape, dtype)
        if name == "copyto":
            return None
        if name == "where" and len(args) == 3:
            shape = np.broadcast_shapes(*(_shape_of(a) for a in args))
            return meta_empty(shape, np.result_type(*(_one(a) for a in args[1:])))
        if name in ("broadcast_to",):
            return MetaArray(
                np.broadcast_to(args[0]._p, kwargs.get("shape", args[1:2] and args[1]))
            )
        if name in ("shape", "ndim", "size", "result_type"):
            return func(*[a._p if isinstance(a, MetaArray) else a for a in args], **kwargs)
        return self._fallback(func, args, kwargs)

    @staticmethod
    def _fallback(func, args, kwargs):
        try:
            args, kwargs = _stand_in(args), {k: _stand_in(v) for k, v in kwargs.items()}
        except NotImplementedError:
            raise _no_rule(getattr(func, "__name__", "this function"), args) from None
        with np.errstate(all="ignore"):
            return _to_meta(func(*args, **kwargs))


def _operator(ufunc, reflected=False):
    if reflected:
        return lambda self, other: ufunc(other, self)
    return lambda self, other: ufunc(self, other)


# (name, ufunc, whether it has the reflected and in-place forms: comparisons have neither)
for _name, _ufunc, _arithmetic in (
    ("add", np.add, True),
    ("sub", np.subtract, True),
    ("mul", np.multiply, True),
    ("truediv", np.true_divide, True),
    ("floordiv", np.floor_divide, True),
    ("mod", np.remainder, True),
    ("pow", np.power, True),
    ("matmul", np.matmul, True),
    ("and", np.bitwise_and, True),
    ("or", np.bitwise_or, True),
    ("xor", np.bitwise_xor, True),
    ("lshift", np.left_shift, True),
    ("rshift", np.right_shift, True),
    ("lt", np.less, False),
    ("le", np.less_equal, False),
    ("gt", np.greater, False),
    ("ge", np.greater_equal, False),
    ("eq", np.equal, False),
    ("ne", np.not_equal, False),
):
    setattr(MetaArray, f"__{_name}__", _operator(_ufunc))
    if _arithmetic:
        setattr(MetaArray, f"__r{_name}__", _operator(_ufunc, reflected=True))
        setattr(MetaArray, f"__i{_name}__", _operator(_ufunc))
MetaArray.__neg__ = lambda self: np.negative(self)
MetaArray.__pos__ = lambda self: np.positive(self)
MetaArray.__abs__ = lambda self: np.absolute(self)
MetaArray.__invert__ = lambda self: np.invert(self)
MetaArray.__hash__ = object.__hash__
