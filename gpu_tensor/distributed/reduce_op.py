"""ReduceOp: torch.distributed's reduction names, and what each means per dtype."""

from __future__ import annotations

from .._constant import Constant
from ..dtype import BOOL, INT

__all__ = ["ReduceOp"]


class _Op(Constant):
    __slots__ = ()

    def __repr__(self) -> str:
        return f"<ReduceOp.{self.name}>"

    def __reduce__(self):  # pickles as the same singleton
        return (getattr, (ReduceOp, self.name))


class ReduceOp:
    """ReduceOp.SUM, PRODUCT, MIN, MAX, AVG (and BAND, BOR, BXOR on MPI), as in torch."""

    SUM = _Op("SUM")
    PRODUCT = _Op("PRODUCT")
    MIN = _Op("MIN")
    MAX = _Op("MAX")
    AVG = _Op("AVG")
    BAND = _Op("BAND")
    BOR = _Op("BOR")
    BXOR = _Op("BXOR")

    RedOpType = _Op

    def __init__(self):
        raise TypeError("use the members, e.g. ReduceOp.SUM")


_ALL = {
    op.name: op
    for op in (
        ReduceOp.SUM,
        ReduceOp.PRODUCT,
        ReduceOp.MIN,
        ReduceOp.MAX,
        ReduceOp.AVG,
        ReduceOp.BAND,
        ReduceOp.BOR,
        ReduceOp.BXOR,
    )
}
# torch refuses these on complex tensors (complex numbers have no order; PRODUCT is not
# elementwise over the (re, im) pairs a collective sees)
_NOT_COMPLEX = {"MIN", "MAX", "PRODUCT", "BAND", "BOR", "BXOR"}


def check_op(op, dtype, fn: str) -> str:
    """The op's name after torch's checks for this dtype; bool SUM/PRODUCT become the
    logical MAX/MIN, as torch's NCCL backend does."""
    if not isinstance(op, _Op) or op.name not in _ALL:
        raise TypeError(
            f"{fn}(): op must be a gpu_tensor.distributed.ReduceOp member such as "
            f"ReduceOp.SUM, not {op!r}"
        )
    name = op.name
    if dtype.is_complex and name in _NOT_COMPLEX:
        raise ValueError(f"{fn} does not support {name} on complex tensors")
    if dtype.category == BOOL:
        if name == "AVG":
            raise TypeError(f"{fn}: cannot use ReduceOp.AVG with boolean inputs")
        name = {"SUM": "MAX", "PRODUCT": "MIN"}.get(name, name)
    if name in ("BAND", "BOR", "BXOR") and dtype.category not in (BOOL, INT):
        raise TypeError(f"{fn}: ReduceOp.{name} needs an integer or bool tensor, not {dtype.name}")
    return name
