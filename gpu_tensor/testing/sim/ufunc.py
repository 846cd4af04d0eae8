"""cupy's ufuncs over the simulator: numpy's math inside one stream task, with cupy's rules.

`ufunc.at` exists only where cupy has a scatter operation for the ufunc (cupy/_core/
_kernel.pyx, ufunc.at: "cupy_<name>.at is not supported yet" otherwise, e.g. multiply), and
only for the dtypes cupy's scatter kernels take (cupy v14.2.0 _routines_indexing.pyx
942-953: scatter_add takes int32, int64, uint32, uint64, float16, float32, float64; a
bool/int8/uint8/int16/complex operand raises TypeError). Host numpy arrays as operands
raise TypeError, as in cupy. Arity and type loops come from the installed cupy's ufunc;
where numpy's counterpart is a plain function (sinc, i0, fix), `_Loops` applies them.
"""

from __future__ import annotations

import numpy as np

from .indexing import wrap_indices
from .ndarray import ndarray
from .signatures import bind, real_object
from .tasks import run, sim_arrays

__all__ = ["ufunc", "SCATTER_DTYPES"]

_SCATTER = {"add": "scatter_add", "maximum": "scatter_max", "minimum": "scatter_min"}
SCATTER_DTYPES = frozenset(
    np.dtype(t)
    for t in (np.int32, np.int64, np.uint32, np.uint64, np.float16, np.float32, np.float64)
)


class _Loops:
    """A numpy function that cupy makes a ufunc (sinc, i0, fix: plain functions in numpy),
    run with cupy's type rule: the first of the real ufunc's loops that every input casts
    to safely, inputs cast to it, the result cast to its output type."""

    def __init__(self, name: str, np_fn, types):
        self.name, self._fn = name, np_fn
        self._loops = [
            (tuple(np.dtype(c) for c in t.split("->")[0]), np.dtype(t.split("->")[1]))
            for t in types
            if "E" not in t
        ]  # cupy's complex32: numpy has none, nor do we

    def __call__(self, *args, out=None, dtype=None):
        if len(args) != len(self._loops[0][0]):
            raise ValueError(f"Wrong number of arguments for 'cupy_{self.name}'")
        dtypes = [np.asarray(x).dtype for x in args]
        for ins, result in self._loops:
            if (dtype is None or np.dtype(dtype) == result) and all(
                np.can_cast(d, t, "safe") for d, t in zip(dtypes, ins, strict=True)
            ):
                break
        else:
            raise TypeError(f"Wrong type ({tuple(dtypes)}) of arguments for cupy_{self.name}")
        r = np.asarray(self._fn(*(np.asarray(x, dtype=t) for x, t in zip(args, ins, strict=True))))
        r = r.astype(result, copy=False)
        if out is None:
            return r
        out[...] = r
        return out


class ufunc:  # noqa: N801 - cupy's name
    def __init__(self, name: str):
        real = real_object(name)  # arity and loops as the installed cupy has them
        self.nin, self.nout, self.nargs, self.types = real.nin, real.nout, real.nargs, real.types
        np_fn = getattr(np, name)
        self._np = np_fn if isinstance(np_fn, np.ufunc) else _Loops(name, np_fn, self.types)
        self.__name__ = self.name = name

    def __repr__(self):
        return f"<ufunc 'cupy_{self.name}'>"

    def _check(self, args) -> None:
        for x in args:
            if isinstance(x, np.ndarray) and x.ndim:
                raise TypeError(f"Unsupported type {type(x)}")

    def __call__(self, *args, **kwargs):
        self._check(args)
        out = kwargs.get("out")
        outs = out if isinstance(out, tuple) else (out,) if out is not None else ()
        writes = tuple(o for o in outs if isinstance(o, ndarray))
        result = run(f"ufunc {self.name}", self._np, args, kwargs, writes=writes)
        if out is not None:
            return out
        return result

    def at(self, a, indices, b=None):
        bind("ufunc.at", (a, indices, b), {})
        if self.name not in _SCATTER:
            raise NotImplementedError(f"cupy_{self.name}.at is not supported yet")
        if a.dtype not in SCATTER_DTYPES:
            raise TypeError(
                f"cupy.{self.name}.at ({_SCATTER[self.name]}) does not support dtype {a.dtype}"
            )
        extra = tuple(sim_arrays(indices, []))

        def scatter(h, v, *_):
            self._np.at(
                h,
                wrap_indices(indices, a.shape)[0]
                if not isinstance(indices, tuple)
                else wrap_indices(indices, a.shape),
                v,
            )

        run(f"{self.name}.at", scatter, (a, b, *extra), {}, writes=(a,))

    def reduce(self, *args, **kwargs):
        return run(f"{self.name}.reduce", self._np.reduce, args, kwargs)

    def accumulate(self, *args, **kwargs):
        return run(f"{self.name}.accumulate", self._np.accumulate, args, kwargs)

    def outer(self, *args, **kwargs):
        self._check(args)
        return run(f"{self.name}.outer", self._np.outer, args, kwargs)
