"""THE method table of Tensor: every attribute that is not in the class body of
`_tensor.py`, one row per name, bound once when this module is imported.

torch's layout: `torch/_tensor.py` holds the class, one generated table holds its methods.
Here the rows name functions that live with their concept (views in `_views.py`, layout
in `_layout.py`, interop in `_interop.py`, repr in `_format.py`, ops in `ops/`, moves in
`transfer/move.py`, autograd in `autograd/methods.py`); none of those modules binds
anything itself. Dependencies go one way: this module imports all of them and nothing
imports it but `gpu_tensor/__init__.py`, so the class is complete before any user code runs.

`_tensor.pyi` is generated from this table and the class body
(`python -m gpu_tensor._tensor_stub`); `tests/test_tensor_stub.py` checks it is current.
"""

from __future__ import annotations

import numpy as np

from . import _format, _interop, _views, creation
from . import _grad as _grad
from . import dtype as _dt
from ._tensor import Tensor
from .autograd import methods as _autograd
from .fusion.optable import OPS
from .ops import (
    _dispatch,
    index_write,
    indexing,
    join,
    linalg,
    matrix,
    meta,
    pointwise,
    random,
    reduction,
    shape,
    softmax,
    sort,
    special,
    statistics,
)
from .ops import elementwise as ew
from .ops._inplace import INPLACE_GRAD, INPLACE_NOGRAD, fill_, inplace, late_method, zero_
from .quantized import methods as _quantized_methods
from .sparse import ops as sparse_ops
from .transfer import move as _move

__all__ = ["METHODS"]


def _invert(self):
    if self.dtype.category >= _dt.FLOAT:  # torch: the operator is a TypeError (the op is not)
        raise TypeError(
            "~ (operator.invert) is only implemented on integer and Boolean-type "
            "tensors; use logical_not() or (x == 0) for a float tensor"
        )
    return ew.logical_not(self) if self.dtype is _dt.bool else ew.bitwise_not(self)


def _matmul(self, other):
    return linalg.matmul(self, other)


def _rmatmul(self, other):
    return linalg.matmul(other, self)


def _copy_(self, src, non_blocking=False):
    return _move.copy_(self, src, non_blocking)


def _where(self, condition, other):
    return ew.where(condition, self, other)


def _clamp_min(self, min):  # noqa: A002
    return ew.clamp(self, min=min)


def _clamp_max(self, max):  # noqa: A002
    return ew.clamp(self, max=max)


def _type_as(self, other):
    return self.to(other.dtype)


def _pos(self):
    return self


def _reduce(self):
    """Pickle/deepcopy: the values (a host copy), device, dtype and requires_grad."""
    return (
        _rebuild,
        (np.array(self._host()), str(self.device), self.dtype.name, self.requires_grad),
    )


def _rebuild(host, device, dtype_name, requires_grad):
    return creation.tensor(host, dtype=dtype_name, device=device, requires_grad=requires_grad)


def _new(name):
    """t.new_zeros(...) and friends: factories defaulting to t's dtype and device."""
    factory = getattr(creation, name)

    def method(self, *args, dtype=None, device=None, requires_grad=False, **kw):
        return factory(
            *args,
            dtype=self.dtype if dtype is None else dtype,
            device=self.device if device is None else device,
            requires_grad=requires_grad,
            **kw,
        )

    method.__name__ = "new_" + name
    return method


def _polygamma(self, n):
    return special.polygamma(n, self)


def _pinned(fn):
    def method(self, device=None):
        return fn(self)

    method.__name__ = fn.__name__
    return method


# -- the rows ---------------------------------------------------------------------------------
_VIEWS = [
    "view",
    "view_as",
    "reshape",
    "reshape_as",
    "flatten",
    "unflatten",
    "transpose",
    "t",
    "permute",
    "movedim",
    "narrow",
    "select",
    "unbind",
    "diagonal",
    "expand",
    "expand_as",
    "broadcast_to",
    "unsqueeze",
    "squeeze",
    "unfold",
    "as_strided",
    "contiguous",
    "clone",
]
# Elementwise methods: every op of the table (fusion/optable.py) under its name and its
# aliases, plus the composite ops of ops/elementwise.py; where() takes self second.
_COMPOSITE = ["fmod", "trunc", "square", "reciprocal", "isnan", "isinf", "isfinite", "lerp"]
_SPECIAL_ONLY = {"where", "xlog1py"}  # rows torch binds as no Tensor method (special_* neither)
_ELEMENTWISE = [
    name
    for key, op in OPS.items()
    if key not in _SPECIAL_ONLY and not key.startswith("special_")  # torch.special's own: no method
    for name in (key, *op.aliases)
] + _COMPOSITE
_REDUCTIONS = [n for n in reduction.__all__ if n not in ("var_mean", "std_mean")]  # no methods
_INDEXING_INPLACE = ["scatter_", "scatter_add_", "masked_fill_"]
_CASTS = {
    "float": _dt.float32,
    "double": _dt.float64,
    "half": _dt.float16,
    "bfloat16": _dt.bfloat16,
    "int": _dt.int32,
    "long": _dt.int64,
    "short": _dt.int16,
    "bool": _dt.bool,
    "byte": _dt.uint8,
    "char": _dt.int8,
    "cfloat": _dt.complex64,
    "cdouble": _dt.complex128,
}


def _rows() -> dict:
    m: dict = {}
    # views and layout (_views.py, _layout.py)
    for name in _VIEWS:
        m[name] = getattr(_views, name)
    m["swapaxes"] = m["swapdims"] = _views.transpose
    m["moveaxis"] = _views.movedim
    m["T"] = property(_views._T)
    m["mT"] = property(_views._mT)
    m["H"] = property(_views._H)
    m["mH"] = property(_views._mH)
    # interop (_interop.py) and repr (_format.py), pickling
    m["__array__"] = _interop.__array__
    m["__dlpack__"] = _interop.__dlpack__
    m["__dlpack_device__"] = _interop.__dlpack_device__
    m["__cuda_array_interface__"] = property(_interop._cuda_array_interface)
    m["__repr__"] = m["__str__"] = _format.format_tensor
    m["__reduce__"] = _reduce
    # moves and casts (transfer/move.py)
    m["to"] = _move.to
    m["cuda"] = _move._cuda
    m["cpu"] = _move._cpu
    m["pin_memory"] = _pinned(_move.pin_memory)
    m["is_pinned"] = _pinned(_move.is_pinned)
    m["record_stream"] = _move.record_stream
    m["type"] = _move._type
    for name, dt in _CASTS.items():
        m[name] = _move._caster(dt)
    m["type_as"] = _type_as
    # ops (ops/*)
    for name in _ELEMENTWISE:
        m[name] = getattr(ew, name)
    m["real"] = property(ew.real)
    m["imag"] = property(ew.imag)
    m["clamp_min"] = _clamp_min
    m["clamp_max"] = _clamp_max
    m["where"] = _where
    for name in _REDUCTIONS:
        m[name] = getattr(reduction, name)
    for name in ("matmul", "mm", "bmm", "mv", "dot", "outer"):
        m[name] = getattr(linalg, name)
    for name in ("split", "chunk", "tensor_split"):
        m[name] = getattr(join, name)
    for name in ("flip", "roll", "repeat", "tile"):
        m[name] = getattr(shape, name)
    for name in indexing.__all__:
        m[name] = getattr(indexing, name)
    m["__getitem__"] = indexing.getitem
    for name in ("zeros", "ones", "empty", "full", "tensor"):
        m["new_" + name] = _new(name)
    # in-place methods: each records through its out-of-place form when autograd is on
    for name in ew.INPLACE:
        m[name + "_"] = _grad.inplace(name + "_", inplace(getattr(ew, name), name + "_"))
    for name in _INDEXING_INPLACE:
        m[name] = _grad.inplace(name, getattr(indexing, name))
    m["__setitem__"] = _grad.inplace("__setitem__", indexing.setitem)
    m["fill_"] = _grad.inplace("fill_", fill_)
    m["zero_"] = _grad.inplace("zero_", zero_)
    m["copy_"] = _grad.inplace("copy_", _copy_)
    # operators, from the table's `dunder` column: a + b, 2 + b, a += b, -a, abs(a)
    for key, op in OPS.items():
        d = op.dunder
        if d is None:
            continue
        if op.arity == 1:
            m[f"__{d}__"] = getattr(ew, key)
            continue
        m[f"__{d}__"] = _dispatch._BINARY[key]
        if op.kind != "compare":  # Python swaps comparisons itself; no a < b in place
            m[f"__r{d}__"] = _dispatch._RBINARY[key]
            m[f"__i{d}__"] = m[key + "_"]
    m["__pos__"] = _pos
    m["__invert__"] = _invert  # ~ is logical_not on bool, bitwise_not otherwise
    m["__matmul__"] = _matmul
    m["__rmatmul__"] = _rmatmul
    m["__hash__"] = object.__hash__  # __eq__ is elementwise: identity hashing, explicitly
    # autograd (autograd/methods.py)
    m["backward"] = _autograd.backward
    m["retain_grad"] = _autograd.retain_grad
    m["retains_grad"] = property(_autograd.retains_grad)
    m["register_hook"] = _autograd.register_hook
    m["output_nr"] = property(
        _autograd.output_nr, None, None, "Which output of grad_fn this tensor is."
    )
    # torch's API breadth beyond the core: special, sort, matrix, random, ... (below)
    m.update(_breadth_rows({**Tensor.__dict__, **m}))
    m.update(_quantized_methods.rows())  # int_repr, q_scale, ...: QTensor overrides them
    return m


# -- torch's API breadth: the op modules' functions as methods, and Tensor-only rows ----------
# Every public function of these modules (gt.<name>, imported by name in __init__.py) is
# also Tensor.<name> when it takes the tensor first, except the names in _NOT_METHODS.
_BREADTH_MODULES = (special, sort, matrix, index_write, statistics, pointwise, random)
_NOT_METHODS = {
    *(set(random.__all__) - {"bernoulli", "multinomial"}),  # of random's, only these are methods
    "solve",
    "searchsorted",
    "eigh",
    "fill_diagonal",
    "polygamma",
}
# rows for Tensor only (no gt.<name> of the same meaning)
_TENSOR_ONLY = {
    "is_signed": meta.is_signed,
    "is_nonzero": meta.is_nonzero,
    "is_same_size": meta.is_same_size,
    "is_set_to": meta.is_set_to,
    "dim_order": meta.dim_order,
    "storage": meta.storage,
    "storage_type": meta.storage_type,
    "share_memory_": meta.share_memory_,
    "new": meta.new,
    "new_empty_strided": meta.new_empty_strided,
    "apply_": meta.apply_,
    "map_": meta.map_,
    "split_with_sizes": meta.split_with_sizes,
    "narrow_copy": meta.narrow_copy,
    "sum_to_size": meta.sum_to_size,
    "chalf": meta.chalf,
    "resize_": meta.resize_,
    "resize_as_": meta.resize_as_,
    "unsqueeze_": meta.unsqueeze_,
    "squeeze_": meta.squeeze_,
    "t_": meta.t_,
    "transpose_": meta.transpose_,
    "swapdims_": meta.swapdims_,
    "swapaxes_": meta.swapaxes_,
    "as_strided_": meta.as_strided_,
    "set_": meta.set_,
    "resolve_conj": meta._self,
    "resolve_neg": meta._self,
    "to_dense": meta._self,
    "is_inference": meta._false,
    "is_neg": meta._false,
    "is_conj": meta._false,
    "is_shared": meta._false,
    "softmax": softmax.softmax,
    "log_softmax": softmax.log_softmax,
    "unsafe_chunk": meta.unsafe_chunk,
    "unsafe_split": meta.unsafe_split,
    "unsafe_split_with_sizes": meta.split_with_sizes,
    "ravel": meta.ravel,
    "adjoint": meta.adjoint,
    "const_data_ptr": meta.const_data_ptr,
    "angle": special.angle,
    "polygamma": _polygamma,  # self second in gt.polygamma
    "hsplit": meta.hsplit,
    "vsplit": meta.vsplit,
    "dsplit": meta.dsplit,
    "to_sparse": sparse_ops.to_sparse,
    "to_sparse_coo": sparse_ops.to_sparse,
    "sparse_dim": meta.sparse_dim,
    "dense_dim": meta.dense_dim,
    "coalesce": meta.dense_refuses("coalesce"),
    "is_coalesced": meta.dense_refuses("is_coalesced"),
    "indices": meta.dense_refuses("indices"),
    "values": meta.dense_refuses("values"),
    # the random fills record a zero-gradient node on tensors that require grad (torch's)
    **{n: _grad.inplace(n, getattr(random, n)) for n in random.FILLS},
}
# properties: always False here (no quantized, nested, mkldnn or other device kinds)
_FLAGS = (
    "is_sparse",
    "is_sparse_csr",
    "is_quantized",
    "is_mps",
    "is_xpu",  # is_meta: _tensor
    "is_ipu",
    "is_xla",
    "is_vulkan",
    "is_maia",
    "is_mtia",
    "is_mkldnn",
    "is_nested",
    "volatile",
)
# torch's other names for existing methods
_ALIASES = {
    "greater": "gt",
    "greater_equal": "ge",
    "less": "lt",
    "less_equal": "le",
    "not_equal": "ne",
    "arctan2": "atan2",
    "ger": "outer",
}


def _breadth_rows(core: dict) -> dict:
    """The rows above; `core` holds the rows and class attributes already bound, which
    these never replace (a core row is the faster or more exact form of the same name)."""
    m: dict = {}

    def add(name, value):
        if name not in core and name not in m:
            m[name] = value

    for module in _BREADTH_MODULES:
        for name in module.__all__:
            if name not in _NOT_METHODS:
                add(name, getattr(module, name))
    for name, fn in _TENSOR_ONLY.items():
        add(name, fn)
    m["fill_diagonal_"] = _grad.inplace(
        "fill_diagonal_", inplace(index_write.fill_diagonal, "fill_diagonal_")
    )
    m["layout"] = property(meta.layout)
    for flag in _FLAGS:
        m[flag] = property(meta._false)
    for alias, target in _ALIASES.items():
        add(alias, m[target] if target in m else core[target])
    for name in INPLACE_GRAD + INPLACE_NOGRAD:
        if name != "fill_diagonal":
            add(name + "_", _grad.inplace(name + "_", inplace(late_method(name), name + "_")))
    return m


METHODS = _rows()
_ROWS_OF = {}  # id(function) -> how many public rows it serves
for _value in METHODS.values():
    _ROWS_OF[id(_value)] = _ROWS_OF.get(id(_value), 0) + 1
for _name, _value in METHODS.items():
    # a method made by a factory (`_caster.<locals>.method`), or a private function serving
    # one row (`move._cpu`), takes its public name, which Python's own errors print:
    # "cpu() got an unexpected keyword argument 'x'", not "_cpu() ..."
    _q = getattr(_value, "__qualname__", "")
    if "<locals>" in _q or (
        _q.startswith("_") and not _name.startswith("_") and _ROWS_OF[id(_value)] == 1
    ):
        _value.__qualname__ = _name
    setattr(Tensor, _name, _value)
del _ROWS_OF
