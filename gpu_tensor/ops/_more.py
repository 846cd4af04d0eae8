"""The breadth of torch's API beyond the core ops, bound in one place: which functions of
special.py, sort.py, linalg_more.py, index_more.py, reduce_more.py, random.py and meta.py
become `gt.<name>` and `Tensor.<name>`, and which get an in-place `<name>_` form.

`rows()` gives their rows of Tensor's one method table (gpu_tensor/_tensor_methods.py);
`gpu_tensor/__init__.py` re-exports `__all__`. In-place forms compute out of place and write back (ops/_inplace.py); they are
registered with autograd as "record the out-of-place op on a copy", like the core ones.
"""

from __future__ import annotations

from .. import _grad
from .._tensor import Tensor
from ..sparse import ops as sparse_ops
from . import index_more, linalg_more, meta, random, reduce_more, softmax, sort, special
from ._inplace import inplace

# Tensor.<name> for the public functions of these modules (gpu_tensor/__init__.py imports
# them by name as gt.<name>)
_MODULES = (special, sort, linalg_more, index_more, reduce_more, random)
__all__ = ["rows"]

# Tensor.<name> for every function above taking the tensor first ...
_NOT_METHODS = {"Generator", "default_generator", "manual_seed", "seed", "initial_seed",
                "get_rng_state", "set_rng_state", "multinomial_", "normal", "is_tensor",
                "is_storage", "layout", "strided", "sparse_coo", "sparse_csr", "sparse_csc",
                "solve", "searchsorted", "eigh", "numel", "fill_diagonal", "poisson",
                "polygamma"}



def _unsafe_chunk(self, *args, **kwargs) -> tuple[Tensor, ...]:
    return self.chunk(*args, **kwargs)


def _unsafe_split(self, *args, **kwargs) -> tuple[Tensor, ...]:
    return self.split(*args, **kwargs)


def _const_data_ptr(self) -> int:
    return self.data_ptr()


def _sparse_dim(self) -> int:
    return 0  # a dense tensor: every dimension is dense


def _dense_dim(self) -> int:
    return self.ndim


# ... plus these, defined for Tensor only
_METHODS = {
    "is_signed": meta.is_signed, "is_nonzero": meta.is_nonzero,
    "is_same_size": meta.is_same_size, "is_set_to": meta.is_set_to,
    "dim_order": meta.dim_order, "storage": meta.storage, "storage_type": meta.storage_type,
    "share_memory_": meta.share_memory_, "new": meta.new,
    "new_empty_strided": meta.new_empty_strided, "apply_": meta.apply_, "map_": meta.map_,
    "split_with_sizes": meta.split_with_sizes, "narrow_copy": meta.narrow_copy,
    "sum_to_size": meta.sum_to_size, "chalf": meta.chalf, "resize_": meta.resize_,
    "resize_as_": meta.resize_as_, "unsqueeze_": meta.unsqueeze_, "squeeze_": meta.squeeze_,
    "t_": meta.t_, "transpose_": meta.transpose_, "swapdims_": meta.swapdims_,
    "swapaxes_": meta.swapaxes_, "as_strided_": meta.as_strided_, "resolve_conj": meta._self,
    "resolve_neg": meta._self,
    "is_inference": meta._false, "is_neg": meta._false, "is_conj": meta._false,
    "is_shared": meta._false, "softmax": softmax.softmax,
    "log_softmax": softmax.log_softmax,
    # the random fills record a zero-gradient node on tensors that require grad (torch's)
    **{n: _grad.inplace(n, getattr(random, n)) for n in (
        "normal_", "uniform_", "bernoulli_", "random_", "exponential_", "geometric_",
        "log_normal_", "cauchy_")}, "unsafe_chunk": _unsafe_chunk,
    "unsafe_split": _unsafe_split,
    "unsafe_split_with_sizes": meta.split_with_sizes,
    "conj_physical": lambda self: self.conj(), "fill_diagonal_": None,  # below
    "ravel": lambda self: self.reshape(-1), "adjoint": lambda self: self.mH,
    "const_data_ptr": _const_data_ptr, "angle": special.angle,
    "set_": meta.set_, "polygamma": lambda self, n: special.polygamma(n, self), "hsplit": meta.hsplit, "vsplit": meta.vsplit, "dsplit": meta.dsplit,
    "to_sparse": sparse_ops.to_sparse, "to_sparse_coo": sparse_ops.to_sparse,
    "to_dense": meta._self, "sparse_dim": _sparse_dim, "dense_dim": _dense_dim,
    "coalesce": meta.dense_refuses("coalesce"), "is_coalesced": meta.dense_refuses(
        "is_coalesced"), "indices": meta.dense_refuses("indices"),
    "values": meta.dense_refuses("values"),
}

# properties: always False here (no quantized, nested, mkldnn or other device kinds)
_FLAGS = ("is_sparse", "is_sparse_csr", "is_quantized", "is_mps", "is_xpu",  # is_meta: _tensor
          "is_ipu", "is_xla", "is_vulkan", "is_maia", "is_mtia", "is_mkldnn", "is_nested",
          "volatile")

# torch's other names for existing methods
_ALIASES = {"greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le",
            "not_equal": "ne", "arctan2": "atan2", "ger": "outer"}

# `<name>_` = `<name>` computed out of place, written back. The second group has no
# gradient in torch (integer or boolean results, or piecewise-constant values).
_INPLACE_GRAD = (
    "asin", "acos", "atan", "sinh", "cosh", "tan", "asinh", "acosh", "atanh", "arcsin",
    "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "erf", "erfc", "erfinv", "log2",
    "log10", "expm1", "exp2", "lgamma", "digamma", "sinc", "deg2rad", "rad2deg", "frac",
    "logit", "sgn", "fix", "absolute", "atan2", "arctan2", "xlogy", "hypot", "copysign",
    "float_power", "nan_to_num", "ldexp", "i0", "clamp_min", "clamp_max", "cumsum",
    "cumprod", "divide", "multiply", "subtract", "negative", "true_divide", "tril", "triu",
    "addmm", "addbmm", "baddbmm", "addmv", "addr", "addcmul", "addcdiv", "index_add",
    "index_copy", "index_fill", "index_put", "masked_scatter", "put", "scatter_reduce",
    "renorm", "fill_diagonal", "mvlgamma", "index_reduce", "polygamma", "nextafter",
)
_INPLACE_NOGRAD = (
    "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal",
    "not_equal", "bitwise_not", "bitwise_left_shift", "bitwise_right_shift", "heaviside",
    "gcd", "lcm", "logical_and", "logical_or", "logical_xor",
)


def _functions():
    out = {}
    for m in _MODULES:
        for name in m.__all__:
            out[name] = getattr(m, name)
    return out


def rows(core: dict) -> dict:
    """This module's rows of Tensor's method table (gpu_tensor/_tensor_methods.py); `core`
    holds the rows and class attributes already there, which are never replaced."""
    m: dict = {}

    def add(name, value):
        if name not in core and name not in m:
            m[name] = value

    for name, fn in _functions().items():
        if name not in _NOT_METHODS:
            add(name, fn)
    for name, fn in _METHODS.items():
        if fn is not None:
            add(name, fn)
    m["fill_diagonal_"] = _grad.inplace(
        "fill_diagonal_", inplace(index_more.fill_diagonal, "fill_diagonal_"))
    m["layout"] = property(meta.layout)
    for flag in _FLAGS:
        m[flag] = property(meta._false)
    for alias, target in _ALIASES.items():
        add(alias, m[target] if target in m else core[target])
    for name in _INPLACE_GRAD + _INPLACE_NOGRAD:
        if name != "fill_diagonal":
            add(name + "_", _grad.inplace(name + "_", inplace(_method(name), name + "_")))
    return m


def _method(name):
    """Tensor.<name>, looked up when called (the table is bound after this module loads)."""

    def call(self, *args, **kwargs):
        return getattr(type(self), name)(self, *args, **kwargs)

    call.__name__ = name
    return call
