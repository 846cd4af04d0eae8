"""Python data -> numpy: nested sequences (with torch's ragged-list errors and dtype
inference), numbers, numpy arrays/scalars, tensors and DLPack producers."""

from __future__ import annotations

import itertools

import numpy as np

from . import dtype as _dt
from ._args import MAX_DIMS, check_float_to_int, check_int_to_int
from ._tensor import Tensor

__all__ = ["host_from_data"]


def _leaf_category(x):
    t = type(x)
    if t is bool or t is np.bool_:
        return _dt.BOOL
    if t is int or isinstance(x, np.integer):
        return _dt.INT
    if t is float or isinstance(x, np.floating):
        return _dt.FLOAT
    if t is complex or isinstance(x, np.complexfloating):
        return _dt.COMPLEX
    return None


def _is_seq(x) -> bool:
    return (
        isinstance(x, (list, tuple))
        or (isinstance(x, np.ndarray) and x.ndim > 0)
        or (isinstance(x, Tensor) and x.ndim > 0)
    )


def _flatten(data):
    """(shape, leaves) of nested sequences; ValueError naming the dimension when ragged."""
    shape = []
    x = data
    while _is_seq(x):
        if len(shape) == MAX_DIMS:  # also what stops a list that contains itself
            raise ValueError(
                f"too many dimensions '{type(x).__name__}': nested data deeper "
                f"than {MAX_DIMS} levels (or a list that contains itself)"
            )
        shape.append(len(x))
        if len(x) == 0:
            break
        x = x[0]
    leaves = []

    def walk(seq, d):
        if d == len(shape):
            if _is_seq(seq):  # torch: TypeError when a scalar and a list share a level
                raise TypeError(
                    f"expected a number at dim {d}, got a sequence of length {len(seq)}: "
                    "nested lists must be rectangular"
                )
            leaves.append(seq)
            return
        if not _is_seq(seq):
            raise TypeError(
                f"expected sequence of length {shape[d]} at dim {d} (got a scalar "
                f"{type(seq).__name__}): nested lists must be rectangular"
            )
        if len(seq) != shape[d]:
            raise ValueError(
                f"expected sequence of length {shape[d]} at dim {d} (got {len(seq)}): "
                "nested lists must be rectangular"
            )
        if isinstance(seq, Tensor):
            seq = seq._host()
        for item in seq:
            walk(item, d + 1)

    walk(data, 0)
    return tuple(shape), leaves


_PY_NUMBERS = frozenset({bool, int, float, complex})
_SEQUENCES = frozenset({list, tuple})


def _from_python_numbers(data, dtype):
    """The common case, fast: rectangular nested lists/tuples of Python numbers. Two C-speed
    passes over the leaves (their types, then np.fromiter) instead of Python calls per
    element (the issue: 100k floats took 98 ms, np.array 2.1 ms). None: anything else
    (numpy scalars or tensors among the leaves, ragged or empty lists, ints beyond int64),
    which the general path converts or refuses with its clear errors."""
    shape, x = [], data
    while type(x) is list or type(x) is tuple:
        if not x or len(shape) == MAX_DIMS:  # (a list containing itself never ends)
            return None
        shape.append(len(x))
        x = x[0]
    if not shape:
        return None
    level = data  # the sequences of one depth, checked before going one deeper
    for k, n in enumerate(shape[1:], 1):
        if not set(map(type, level)) <= _SEQUENCES or set(map(len, level)) != {n}:
            return None
        if k < len(shape) - 1:
            level = list(itertools.chain.from_iterable(level))
    flat = (lambda: itertools.chain.from_iterable(level)) if len(shape) > 1 else (lambda: data)
    kinds = set(map(type, flat()))
    if not kinds <= _PY_NUMBERS:
        return None
    cat = (
        _dt.COMPLEX
        if complex in kinds
        else _dt.FLOAT
        if float in kinds
        else _dt.INT
        if int in kinds
        else _dt.BOOL
    )
    count = 1
    for n in shape:
        count *= n
    try:
        host = np.fromiter(flat(), _CATEGORY_NP[cat], count).reshape(shape)
    except (OverflowError, ValueError):
        return None
    if dtype is None:
        dt = (_dt.bool, _dt.int64, _dt.get_default_dtype(), _dt.default_complex())[cat]
    else:
        dt = _dt.to_dtype(dtype)
        if (
            cat > dt.category
            and dt.category <= _dt.INT
            or (cat == _dt.COMPLEX and dt.category != _dt.COMPLEX)
        ):
            return None  # the general path checks float->int (nan, overflow) and complex
        if dt.category == _dt.INT and host.dtype != dt.np:
            if dt.np == np.uint64:
                return None if host.size and host.min() < 0 else (host.astype(dt.np), dt)
            return check_int_to_int(host, dt), dt  # torch refuses [300] as uint8 (no wrap)
    if host.dtype == dt.np:
        return host, dt
    with np.errstate(over="ignore"):  # 1e40 -> float32 is inf, silently (torch)
        return host.astype(dt.np), dt


_CATEGORY_NP = {
    _dt.BOOL: np.bool_,
    _dt.INT: np.int64,
    _dt.FLOAT: np.float64,
    _dt.COMPLEX: np.complex128,
}


def host_from_data(data, dtype):
    """numpy array (and its gt dtype) for Python data/ndarrays/tensors, a copy."""
    if isinstance(data, Tensor):
        dt = data.dtype if dtype is None else _dt.to_dtype(dtype)
        host = data._host()
        return (host.astype(dt.np) if host.dtype != dt.np else np.array(host, copy=True)), dt
    if isinstance(data, np.ndarray):
        if data.dtype == object or data.dtype.kind in "USV":
            raise TypeError(
                f"can't convert a numpy array of dtype {data.dtype}; supported "
                "dtypes are bool, integers, floats and complex"
            )
        dt = _dt.from_numpy_dtype(data.dtype) if dtype is None else _dt.to_dtype(dtype)
        return np.array(data, dtype=dt.np, copy=True), dt
    if hasattr(data, "__cuda_array_interface__") or hasattr(data, "__dlpack__"):
        from ._interop import from_dlpack

        t = from_dlpack(data) if hasattr(data, "__dlpack__") else None
        if t is not None:
            return host_from_data(t, dtype)
    fast = _from_python_numbers(data, dtype)
    if fast is not None:
        return fast
    shape, leaves = _flatten(data)
    cats = set()
    vals = []
    inferred = None  # torch: promote_types over the leaves' own dtypes
    for v in leaves:
        if isinstance(v, Tensor):
            leaf_dt = v.dtype
            v = v.item()
        elif isinstance(v, np.generic) and v.dtype.kind in "biufc":
            leaf_dt = _dt.from_numpy_dtype(v.dtype)  # numpy scalars keep their dtype
        else:
            leaf_dt = _dt.scalar_dtype(v) if type(v) in (bool, int, float, complex) else None
        c = _leaf_category(v)
        if c is None or leaf_dt is None:
            # torch's classes: a str where it reads the shape (the first leaf of a list)
            # ValueError, another str TypeError, None and other objects RuntimeError
            if isinstance(v, str):
                cls = ValueError if shape and not vals else TypeError
            else:
                cls = RuntimeError
            raise cls(
                f"new(): invalid data type '{type(v).__name__}' (could not infer a dtype); "
                "tensor() accepts numbers (bool, int, float, complex), nested sequences of "
                "them, arrays and tensors"
            )
        cats.add(c)
        vals.append(v)
        inferred = leaf_dt if inferred is None else _dt.promote_types(inferred, leaf_dt)
    if dtype is not None:
        dt = _dt.to_dtype(dtype)
    elif inferred is None:
        dt = _dt.get_default_dtype()  # torch.tensor([]) is float32
    else:
        dt = inferred
    if _dt.COMPLEX in cats and _dt.BOOL < dt.category < _dt.COMPLEX:
        # torch converts each leaf with Python's own rules: a complex is no real number
        raise TypeError(
            "must be real number, not complex"
            if dt.category == _dt.FLOAT
            else "'complex' object cannot be interpreted as an integer"
        )
    if dt.np == np.uint64 and any(v < 0 for v in vals):
        raise OverflowError("can't convert negative int to unsigned")  # torch's
    try:
        if dt.category == _dt.INT and _dt.FLOAT in cats:
            host = check_float_to_int(np.array(vals, dtype=np.float64), dt)  # truncates
        elif dt.np == np.uint64:
            host = np.array(vals, dtype=np.uint64)
        elif dt.category == _dt.INT and dt.np != np.int64:
            host = check_int_to_int(np.array(vals, dtype=np.int64), dt)
        else:
            with np.errstate(over="ignore"):  # 1e40 -> float32 is inf, silently (torch)
                host = np.array(vals, dtype=dt.np)
    except OverflowError as exc:
        big = any(type(v) is int and not -(2**63) <= v < 2**63 for v in vals)
        if big and dt.category == _dt.FLOAT:  # Python's float(int) error, as torch raises it
            raise OverflowError("int too large to convert to float") from None
        if big and dt.category <= _dt.INT:  # torch reads every Python int as a C long long
            raise ValueError(
                f"Overflow when unpacking long long: a Python int beyond int64 "
                f"cannot be converted to type {dt.name} without overflow "
                f"({exc})"
            ) from None
        raise RuntimeError(
            f"value cannot be converted to type {dt.name} without overflow: {exc}"
        ) from None
    return host.reshape(shape), dt
