"""The elementwise op table as dispatch reads it: one `_Spec` per fusion op (its numpy
function, kind, and the dtypes whose operands need no conversion), and the dtype rule
(`_dtypes`: compute and out dtype for a promoted operand dtype).

Its own file because every path of the dispatcher reads it (the operators of _dispatch.py,
apply() in _apply.py, the short paths in _host_paths.py, the cuda kernel's rules in
_kernel_out.py) and it reads nothing of theirs.
"""

from __future__ import annotations

import numpy as np

from .. import dtype as _dt
from ..fusion.optable import OPS

_HALF = (_dt.float16, _dt.bfloat16)
_SCALAR_CATEGORY = {bool: _dt.BOOL, int: _dt.INT, float: _dt.FLOAT, complex: _dt.COMPLEX}


class _Spec:
    __slots__ = ("key", "op", "fn", "kind", "quiet", "fast", "fast_quiet", "ufunc")

    def __init__(self, key, op):
        self.key = key
        self.op = op
        self.fn = op.np_fn
        self.kind = op.kind
        # only quiet ops pay for silencing numpy (~0.1 us on the fast path, _quiet_context)
        self.quiet = op.quiet
        self.ufunc = isinstance(op.np_fn, np.ufunc)
        self.fast = {}  # dtype -> out dtype when operands of that dtype need no conversion
        # ... and the dtypes whose short path must silence numpy even though the op is not
        # quiet: complex ones (numpy warns on inf/nan parts, torch never does), so the
        # unsilenced fast path of real dtypes pays nothing for them (_dispatch.py)
        self.fast_quiet = {}
        for d in _dt.ALL:
            try:
                compute, out = _dtypes(self, d)
            except RuntimeError:
                continue
            if op.no_bool and d is _dt.bool:
                continue  # refused with torch's message by apply()
            if op.int_division and d.category <= _dt.INT:
                continue  # apply() checks for division by zero
            if op.complex_fn is not None and d.category == _dt.COMPLEX:
                continue  # the table's numpy function is real-only: apply() swaps it
            if compute is d and d not in _HALF:
                self.fast_quiet[d] = out
                if d.category != _dt.COMPLEX or op.quiet:
                    self.fast[d] = out


def _dtypes(spec, common):
    """(compute dtype, out dtype) for the promoted operand dtype; NotImplementedError (the
    table's `refuse`) if the op has no kernel for it."""
    op, kind = spec.op, spec.kind
    op.refuse(common)
    if kind == "logical":
        return _dt.bool, _dt.bool
    if kind == "double":  # float_power: computed in double precision (issue 23)
        wide = _dt.complex128 if common.category == _dt.COMPLEX else _dt.float64
        return wide, wide
    compute = common
    if kind == "float" and common.category < _dt.FLOAT:
        compute = _dt.get_default_dtype()
    out = _dt.bool if kind == "compare" else compute
    if compute in _HALF and not op.storage_compute:  # (nextafter steps in half types)
        compute = _dt.float32  # torch's opmath: half types compute in float32
    if common.category == _dt.COMPLEX and op.complex_to_real:
        out = common.to_real()  # torch: |z| of complex64 is float32 (abs)
    return compute, out


SPECS = {k: _Spec(k, op) for k, op in OPS.items()}
