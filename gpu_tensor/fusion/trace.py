"""Symbolic tracing: run the user's function once over proxy tensors to build a Graph.

A `Proxy` stands for a tensor of known dtype and ndim (not shape: shapes broadcast at call
time). Its operators and methods build graph nodes with PyTorch's type promotion (the core's
`gpu_tensor.dtype.result_type`). Anything that is not an elementwise op raises FusionError
naming it; nothing silently falls back to eager code.
"""

from __future__ import annotations

import numbers

import numpy as np

from .. import dtype as core_dtype
from .dtypes import as_np_dtype, default_float
from .expr import Cast, Const, Graph, Input, Node, Op, Scalar
from .misuse import Refusals, explain
from .optable import OPS

__all__ = ["FusionError", "Proxy", "apply", "trace"]


class FusionError(TypeError):
    """Something in a fused function cannot be fused (raised at trace time)."""


class _Shim:
    """What the core's result_type reads from a tensor operand."""

    __slots__ = ("dtype", "ndim")

    def __init__(self, node: Node):
        self.dtype = core_dtype.to_dtype(node.dtype)
        self.ndim = 0 if node.tier == 1 else 1


_WEAK_SAMPLE = {"b": True, "i": 1, "u": 1, "f": 1.0, "c": 1j}  # a Python scalar per kind


def _promotion_operand(node: Node):
    if node.tier == 2:  # (bfloat16's kind is "V": a float)
        return _WEAK_SAMPLE.get(node.dtype.kind, 1.0)
    return _Shim(node)


def _scalar_dtype(value) -> np.dtype:
    if isinstance(value, (bool, np.bool_)):
        return np.dtype(np.bool_)
    if isinstance(value, numbers.Integral):
        return np.dtype(np.int64)
    if isinstance(value, numbers.Real):
        return default_float()
    if isinstance(value, numbers.Complex):  # both parts in double (codegen.scalar_ctype)
        return np.dtype(np.complex128)
    raise FusionError(
        f"{type(value).__name__} value {value!r} cannot be used in a fused function; "
        "only tensors and Python bool/int/float/complex scalars can"
    )


def _as_node(value, key: str) -> tuple[Node | None, int]:
    """(node, ndim) for an operand of `key`."""
    if isinstance(value, Proxy):
        return value.node, value.ndim
    if value is None:
        return None, 0
    if isinstance(value, (bool, int, float, complex, np.bool_, np.number)):
        py = value.item() if isinstance(value, np.generic) else value
        return Const(dtype=_scalar_dtype(py), tier=2, value=py), 0
    raise FusionError(
        f"{key}: operand of type {type(value).__name__} cannot be fused. A fused function can "
        "only combine its own tensor/scalar arguments; pass captured tensors or arrays in as "
        "arguments instead"
    )


def apply(key: str, *operands, **params) -> Proxy:
    """Build OPS[key](*operands) symbolically (operands: Proxies or Python scalars)."""
    if key not in OPS:
        raise FusionError(f"{key!r} is not an elementwise op that can be fused")
    op = OPS[key]
    if key == "clamp":
        operands = tuple(operands) + (None,) * (3 - len(operands))
        if operands[1] is None and operands[2] is None:
            raise FusionError("clamp: at least one of min or max must be given")
    if len(operands) != op.arity:
        raise FusionError(f"{key} takes {op.arity} operands, got {len(operands)}")
    param = params.pop(op.param, None) if op.param else None
    if params:
        raise FusionError(f"{key}: unexpected keyword arguments {sorted(params)}")
    pairs = [_as_node(v, key) for v in operands]
    nodes = [n for n, _ in pairs]
    present = [n for n in nodes if n is not None]
    if not any(isinstance(v, Proxy) for v in operands):
        raise FusionError(f"{key}: at least one operand must be a traced tensor")
    if op.kind == "logical":
        common = np.dtype(np.bool_)
    else:
        ops = present[1:] if op.kind == "where" else present
        common = core_dtype.result_type(*(_promotion_operand(n) for n in ops))
        common = as_np_dtype(common, complex_ok=True)
    # torch's errors, as eager code raises them (the same table rules)
    op.check([n.dtype if n is not None and n.tier < 2 else None for n in nodes], common)
    if op.operand_check is not None:
        op.operand_check(operands, core_dtype.to_dtype(common))
    if not op.complex_kernel and (common.kind == "c" or any(n.dtype.kind == "c" for n in present)):
        raise _complex_refused(key)
    in_dtypes = op.operand_dtypes(common, len(nodes))
    in_dtypes = tuple(None if n is None else d for n, d in zip(nodes, in_dtypes, strict=True))
    if op.param and param is not None:
        op.template(param)  # validates the parameter value now, with the op's message
    node = Op(
        dtype=op.out_dtype(common),
        tier=min(n.tier for n in present),
        key=key,
        args=tuple(nodes),
        in_dtypes=in_dtypes,
        param=param,
    )
    return Proxy(node, max(nd for _, nd in pairs))


def _complex_refused(key: str) -> FusionError:
    """The error for a complex operand of a row with no complex kernel (eager runs it)."""
    rows = sorted(k for k, op in OPS.items() if op.complex_kernel)
    return FusionError(
        f"{key} of a complex tensor cannot be fused: inside @gt.fuse complex tensors only "
        f"take {', '.join(rows)}. Run {key} outside the fused function (eager ops take "
        "complex tensors) and pass its result in as an argument"
    )


def _cast(x: Proxy, dtype) -> Proxy:
    try:
        target = as_np_dtype(core_dtype.to_dtype(dtype).np, complex_ok=True)
    except TypeError:
        raise FusionError(
            f"cannot cast to {dtype!r} inside a fused function: .to() there only takes a dtype "
            "(no device, copy or memory_format); move tensors before calling the fused function"
        ) from None
    if x.node.dtype.kind == "c" and target.kind != "c":
        raise FusionError(
            "a complex tensor cannot be cast to a real dtype inside a fused function (torch "
            "would drop the imaginary part); take .real outside it, or cast outside it"
        )
    return Proxy(Cast(dtype=target, tier=x.node.tier, arg=x.node), x.ndim)


def _binary(key, swap=False):
    def method(self, other):
        return apply(key, other, self) if swap else apply(key, self, other)

    method.__name__, method.__qualname__ = key, f"Tensor.{key}"  # (what a TypeError names)
    return method


def _unary(key):
    def method(self):
        return apply(key, self)

    method.__name__, method.__qualname__ = key, f"Tensor.{key}"
    return method


def _resolved(name):
    """The method of a row with a parameter, taking it as Tensor's method does (x.logit(eps),
    x.nan_to_num(nan=...), x.mvlgamma(p)): the module function resolves the
    parameter (torch's per-dtype defaults, its checks) and records the row."""

    def method(self, *args, **kwargs):
        from ..ops import special  # the ops layer, when a function is traced (see test_layering)

        return getattr(special, name)(self, *args, **kwargs)

    method.__name__, method.__qualname__ = name, f"Tensor.{name}"
    return method


class Proxy(Refusals):
    """A symbolic tensor inside a fused function: dtype and ndim known, values not. What it
    refuses (`@`, indexing, len, float, ...) raises FusionError naming the op (misuse.py)."""

    __slots__ = ("node", "ndim")
    __hash__ = object.__hash__  # __eq__ builds a node, so identity hashing is kept explicitly
    _requires_grad = False  # what the ops' call-time autograd check reads (gpu_tensor/_grad.py)

    def __init__(self, node: Node, ndim: int):
        self.node = node
        self.ndim = ndim

    @property
    def dtype(self):
        return core_dtype.to_dtype(self.node.dtype)

    def __repr__(self) -> str:  # users see it in errors: no internal class name
        return f"<traced tensor dtype={self.node.dtype} ndim={self.ndim}>"

    # Python operators: generated from the op table below (torch's meanings: / is true
    # division, // floors, % takes Python's sign); ~ is bitwise_not (logical_not on bool).
    __invert__ = _unary("bitwise_not")

    def __pos__(self):
        return self

    def __bool__(self):
        raise FusionError(
            "a traced tensor has no value, so it cannot be used in `if`, `while`, `and`/`or` "
            "or bool(); use gt.where(cond, a, b) (or x.where) inside a fused function"
        )

    def __array__(self, *args, **kwargs):
        raise FusionError("a traced tensor cannot be converted to a numpy array inside fuse")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        key = _UFUNCS.get(ufunc.__name__)
        if method != "__call__" or key is None or kwargs:
            raise FusionError(
                f"numpy.{ufunc.__name__} ({method}) cannot be fused: only a plain call (no "
                "out=, where= or dtype=) of a numpy ufunc that computes an elementwise op of "
                "gpu_tensor can; compute it outside the fused function and pass it in"
            )
        return apply(key, *inputs)

    def __gt_elementwise__(self, key, *operands, **params):
        """Hook for top-level functions (gt.exp, gt.where, ...) called with a Proxy."""
        return apply(key, *operands, **params)

    # torch-style methods
    def to(self, dtype=None, *args, **kwargs):
        if args or kwargs or dtype is None:
            raise FusionError(
                "inside a fused function .to() only takes a dtype (no device, copy, memory_format)"
            )
        return _cast(self, dtype)

    def type(self, dtype):
        return _cast(self, dtype)

    def float(self):
        return _cast(self, np.float32)

    def double(self):
        return _cast(self, np.float64)

    def half(self):
        return _cast(self, np.float16)

    def bfloat16(self):
        return _cast(self, "bfloat16")

    def int(self):
        return _cast(self, np.int32)

    def long(self):
        return _cast(self, np.int64)

    def bool(self):
        return _cast(self, np.bool_)

    def gelu(self, approximate="none"):
        return apply("gelu", self, approximate=approximate)

    def clamp(self, min=None, max=None):  # noqa: A002  (torch's names)
        return apply("clamp", self, min, max)

    def where(self, condition, other):
        return apply("where", condition, self, other)

    logit = _resolved("logit")
    nan_to_num = _resolved("nan_to_num")
    mvlgamma = _resolved("mvlgamma")

    def div(self, other, *, rounding_mode=None):  # torch's keyword: the eager function's rules
        from ..ops import elementwise  # the ops layer, when a function is traced (test_layering)

        return elementwise.div(self, other, rounding_mode=rounding_mode)

    def polygamma(self, n):  # (no row of this name: gt.polygamma(n, x) is special_polygamma's)
        from ..ops import special  # the ops layer, when a function is traced (test_layering)

        return special.polygamma(n, self)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)  # protocol probes (numpy, copy, pickle) must see "absent"
        raise FusionError(
            f"Tensor.{name} cannot be used inside a fused function: fuse only handles "
            "elementwise ops (" + ", ".join(sorted(OPS)) + ") and casts. Call "
            f"{name} outside the fused function and pass its result in as an argument."
        )


for _key, _op in OPS.items():  # from the table: x + y, x.exp(), x.add(y), x.multiply(y), ...
    if _op.dunder is not None:
        if _op.arity == 2:
            setattr(Proxy, f"__{_op.dunder}__", _binary(_key))
            if _op.kind != "compare":  # Python swaps comparisons itself
                setattr(Proxy, f"__r{_op.dunder}__", _binary(_key, swap=True))
        else:
            setattr(Proxy, f"__{_op.dunder}__", _unary(_key))
    if _key not in ("where", "clamp", "gelu") and not hasattr(Proxy, _key):
        setattr(Proxy, _key, _unary(_key) if _op.arity == 1 else _binary(_key))
    for _alias in _op.aliases:
        setattr(Proxy, _alias, getattr(Proxy, _key))

# numpy's ufuncs run the row of the same name or alias (np.tan, np.arcsin, np.divide, ...);
# these are the rows numpy names differently (np.degrees computes rad2deg exactly)
_NUMPY_NAMES = {
    "absolute": "abs", "power": "pow", "rint": "round", "invert": "bitwise_not",
    "equal": "eq", "not_equal": "ne", "less": "lt", "less_equal": "le", "greater": "gt",
    "greater_equal": "ge", "degrees": "rad2deg", "radians": "deg2rad",
    "conjugate": "conj",
}  # fmt: skip
_UFUNCS = {
    **{name: key for key, op in OPS.items() for name in (key, *op.aliases)},
    **_NUMPY_NAMES,
}


def trace(fn, specs) -> tuple[Graph, bool]:
    """Trace `fn` over one proxy per spec. A spec is ("tensor", np_dtype, ndim),
    ("scalar", python_type) or ("static", value) (passed through unchanged).
    Returns (graph, single) where single says fn returned one tensor, not a tuple."""
    args, inputs, scalars = [], [], []
    for spec in specs:
        if spec[0] == "tensor":
            node = Input(dtype=as_np_dtype(spec[1], complex_ok=True),
                         tier=1 if spec[2] == 0 else 0, index=len(inputs))  # fmt: skip
            inputs.append(node)
            args.append(Proxy(node, spec[2]))
        elif spec[0] == "scalar":
            node = Scalar(dtype=_scalar_dtype(spec[1](0)), tier=2, index=len(scalars))
            scalars.append(node)
            args.append(Proxy(node, 0))
        else:
            args.append(spec[1])
    try:
        result = fn(*args)
    except FusionError:
        raise
    except Exception as exc:  # an eager op's check named the tracer class: say it plainly
        clear = explain(exc)
        if clear is None:
            raise
        raise clear from None
    single = not isinstance(result, (tuple, list))
    outs = (result,) if single else tuple(result)
    if not outs:
        raise FusionError("a fused function must return a tensor or a tuple of tensors")
    for i, out in enumerate(outs):
        if not isinstance(out, Proxy) or out.node.tier == 2:
            raise FusionError(
                f"output {i} of the fused function is {out!r}, not a tensor computed from a "
                "tensor argument; return only values derived from tensor inputs"
            )
    graph = Graph(inputs=tuple(inputs), scalars=tuple(scalars), outputs=tuple(o.node for o in outs))
    return graph, single
