"""THE elementwise op table: one key per op, its CUDA expression, its numpy function and
every rule about it. Eager dispatch (ops/_dispatch.py), the `@gt.fuse` tracer (trace.py),
the module functions' aliases, Tensor's methods and operators (_tensor_methods.py) and the
Proxy's operators all read this table, so eager and fused code cannot disagree.

Adding an op means: one row in the `rows_*.py` module of its family (arithmetic,
comparison, logical, bitwise and activation rows in `rows_arithmetic.py`; two-operand math
functions and the elementwise flags in `rows_binary.py`; unary math and special functions in
`rows_special.py`; the rest in `rows_misc_unary.py`). The row holds its derivative, `grad`,
written in `fusion/derivatives.py` when it is differentiable (eager autograd and the fused
backward both read it); add one `gt_*` CUDA helper in `fusion/preamble.py` (when the
expression needs one), its numpy reference in `fusion/npmath.py` (when numpy has none) and
one module function in `ops/elementwise.py`; `autograd/formulas_elementwise.py` then names
torch's node for it. Keys are torch's function names; what a row holds and the dtype rules
it applies are described in `fusion/opdef.py` (`OpDef`).
"""

from __future__ import annotations

from . import rows_arithmetic, rows_binary, rows_misc_unary, rows_special
from .opdef import KINDS, OpDef, not_implemented

__all__ = ["OpDef", "OPS", "KINDS", "not_implemented"]

# The table's order is the rows' order in these modules, one family after the other (tests
# find the unary special functions from "tan" on).
_ENTRIES = rows_arithmetic.ROWS + rows_binary.ROWS + rows_special.ROWS + rows_misc_unary.ROWS

OPS: dict[str, OpDef] = {
    name: OpDef(name=name, arity=arity, kind=kind, cuda=cuda, np_fn=fn, **extra)
    for name, arity, kind, cuda, fn, extra in _ENTRIES
}
