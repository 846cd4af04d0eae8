"""What a fused function may not do with a traced tensor, said in the user's words.

Inside `@gt.fuse` the arguments are tracer objects (`trace.Proxy`), not Tensors. Python's
own errors for what they lack (`a @ b`, `a[0]`, `len(a)`, `float(a)`) and the eager ops'
argument checks (`gt.matmul(a, b)`: "expected Tensor operands, got Proxy") would name that
internal class. `Refusals` gives the tracer those protocols, each raising FusionError with
the operation and the fix; `explain` rewrites any other error that escapes the traced
function and names the tracer class.
"""

from __future__ import annotations

import re

__all__ = ["Refusals", "explain"]

_NAME = "a traced tensor"  # what the user's argument is while fuse traces their function
_ELEMENTWISE = (
    "gt.fuse traces elementwise ops only (arithmetic, comparisons, math "
    "functions, where, clamp, casts)"
)


def _error(what, fix):
    from .trace import FusionError  # trace imports this module: bind at call time

    return FusionError(f"{what} inside a @gt.fuse function: {_ELEMENTWISE}. {fix}")


def _not_elementwise(op, symbol):
    def refuse(self, *args):
        raise _error(
            f"{op} ({symbol}) is not elementwise and cannot be fused",
            f"Call {op} outside the fused function and pass its result in as an argument.",
        )

    refuse.__name__ = op
    return refuse


def _no_value(what):
    def refuse(self, *args):
        raise _error(
            f"{what} needs values, but {_NAME} has none while fuse traces it",
            "Compute it outside the fused function, or keep the computation "
            "elementwise (gt.where instead of a Python branch).",
        )

    refuse.__name__ = what
    return refuse


class Refusals:
    """The Python protocols a traced tensor refuses, with a message naming the op."""

    __slots__ = ()
    __matmul__ = __rmatmul__ = __imatmul__ = _not_elementwise("matmul", "@")
    __getitem__ = __setitem__ = __delitem__ = _not_elementwise("indexing", "x[...]")
    __len__ = _not_elementwise("len()", "len(x)")
    __iter__ = __reversed__ = _not_elementwise("iteration", "for v in x")
    __contains__ = _not_elementwise("membership", "v in x")
    __divmod__ = __rdivmod__ = _not_elementwise("divmod", "divmod(x, y)")
    __lshift__ = __rlshift__ = _not_elementwise("bitwise_left_shift", "<<")
    __rshift__ = __rrshift__ = _not_elementwise("bitwise_right_shift", ">>")
    __call__ = _not_elementwise("calling a tensor", "x(...)")
    __float__ = _no_value("float()")
    __int__ = _no_value("int()")
    __index__ = _no_value("using it as an index or size")
    __complex__ = _no_value("complex()")
    __round__ = _no_value("round()")
    __trunc__ = _no_value("math.trunc()")
    __floor__ = _no_value("math.floor()")
    __ceil__ = _no_value("math.ceil()")

    def __format__(self, spec):
        if spec:
            raise _no_value(f"formatting with {spec!r}")(self)
        return repr(self)


_CLASS = re.compile(r"(?:gpu_tensor\.)?(?:fusion\.trace\.)?\bProxy\b(?:\(dtype=[^)]*\))?")
_CALLED = re.compile(r"^([A-Za-z_][\w.]*)\(\)")


def explain(exc: BaseException):
    """The FusionError to raise instead of `exc` (an error from inside the traced function
    whose message names the tracer class), or None to let `exc` through unchanged."""
    msg = str(exc)
    if "Proxy" not in msg:
        return None
    op = _CALLED.match(msg)
    where = f"{op.group(1)}()" if op else "an operation"
    said = _CLASS.sub(_NAME, msg)
    return _error(
        f"{where} got {_NAME} where it needs a Tensor ({type(exc).__name__}: {said})",
        f"Call {where} outside the fused function and pass its result in as an argument.",
    )
