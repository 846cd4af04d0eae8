"""The named singletons torch exposes as module constants: `gt.strided` (torch.layout),
`gt.per_tensor_affine` (torch.qscheme), `ReduceOp.SUM`. One base class for all of them."""

from __future__ import annotations

__all__ = ["Constant"]


class Constant:
    """A singleton known by its `name`, bound to that name in its class's module. It prints
    as `gpu_tensor.<name>` and pickles as a reference to that global, as torch's constants
    do, so that loading gives back the same object (identity is how they are compared)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"gpu_tensor.{self.name}"

    def __reduce__(self):
        return self.name  # pickle: "the global of this name in type(self).__module__"
