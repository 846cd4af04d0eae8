"""`gt.return_types`: the named tuples that tuple-returning ops give back (torch's
`torch.return_types`). Each is a tuple subclass with named fields, printed as torch prints
them:

    gpu_tensor.return_types.max(
    values=tensor([...]),
    indices=tensor([...]))

Constructible from the fields or from one sequence of them (as torch's are), and picklable
(each class is a module attribute under its own name).
"""

from __future__ import annotations

import collections

__all__ = [
    "aminmax",
    "cummax",
    "cummin",
    "frexp",
    "histogram",
    "kthvalue",
    "linalg_eigh",
    "linalg_qr",
    "linalg_slogdet",
    "linalg_svd",
    "max",
    "median",
    "min",
    "mode",
    "nanmedian",
    "qr",
    "slogdet",
    "sort",
    "svd",
    "topk",
    "triangular_solve",
]


def _structseq(name: str, fields: list[str]):
    base = collections.namedtuple(name, fields)

    def __new__(cls, *args, **kwargs):
        if (
            len(args) == 1
            and not kwargs
            and isinstance(args[0], (tuple, list))
            and len(args[0]) == len(fields)
        ):
            args = tuple(args[0])  # torch.return_types.max((values, indices))
        return base.__new__(cls, *args, **kwargs)

    def __repr__(self) -> str:
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self, strict=True))
        return f"{__name__}.{name}(\n{body})"

    return type(
        name,
        (base,),
        {
            "__slots__": (),
            "__new__": __new__,
            "__repr__": __repr__,
            "__str__": __repr__,
            "__module__": __name__,
            "__qualname__": name,
        },
    )


_VALUES = ["values", "indices"]
max = _structseq("max", _VALUES)  # noqa: A001  (torch's names)
min = _structseq("min", _VALUES)  # noqa: A001
sort = _structseq("sort", _VALUES)
topk = _structseq("topk", _VALUES)
kthvalue = _structseq("kthvalue", _VALUES)
median = _structseq("median", _VALUES)
nanmedian = _structseq("nanmedian", _VALUES)
mode = _structseq("mode", _VALUES)
cummax = _structseq("cummax", _VALUES)
cummin = _structseq("cummin", _VALUES)
aminmax = _structseq("aminmax", ["min", "max"])
frexp = _structseq("frexp", ["mantissa", "exponent"])
histogram = _structseq("histogram", ["hist", "bin_edges"])
qr = _structseq("qr", ["Q", "R"])
svd = _structseq("svd", ["U", "S", "V"])
slogdet = _structseq("slogdet", ["sign", "logabsdet"])
triangular_solve = _structseq("triangular_solve", ["solution", "cloned_coefficient"])
linalg_eigh = _structseq("linalg_eigh", ["eigenvalues", "eigenvectors"])
linalg_qr = _structseq("linalg_qr", ["Q", "R"])
linalg_svd = _structseq("linalg_svd", ["U", "S", "Vh"])
linalg_slogdet = _structseq("linalg_slogdet", ["sign", "logabsdet"])
