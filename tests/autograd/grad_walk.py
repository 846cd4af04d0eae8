"""Walk every public op that takes a float tensor, on gpu_tensor or torch (`m`), and say
what autograd made of it (tests/autograd/test_grad_coverage.py reads the verdicts).

Each op is called with float inputs that require grad: by its recipe in RECIPES, or else
by the first of the generic CALLS that it accepts. Out-of-place ops get leaves; in-place
methods (`name_`) get a non-leaf copy, and must leave a new grad_fn on it. Verdicts:
"grad" (a node, and backward ran), "noimpl" (a node whose backward raised torch's
"derivative ... is not implemented"), "none" (a float result with no history: the silent
loss this walk exists to catch), "int" (integer or bool results only: never differentiable),
"value" (no tensor result), "same" (an in-place op that recorded nothing new),
"refused" (the call itself raised that a tensor requiring grad is not allowed),
"skip" (no call was accepted) and "bwfail" (backward raised something else).
"""

from __future__ import annotations

import inspect
import re
import warnings

SPD = [[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]]
SPD2 = [[2.0, 0.3, 0.1], [0.3, 1.5, 0.4], [0.1, 0.4, 1.2]]


class Inputs:
    """Fresh float inputs requiring grad (3x3, symmetric positive definite, distinct
    eigenvalues: every decomposition is defined and differentiable at them)."""

    def __init__(self, m, inplace=False):
        self.m, self.inplace, self.leaves = m, inplace, []

    def _leaf(self, data):
        t = self.m.tensor(data, dtype=self.m.float64, requires_grad=True)
        self.leaves.append(t)
        return t

    def x(self):
        leaf = self._leaf(SPD)
        return leaf * 1 if self.inplace else leaf

    def y(self):
        return self._leaf(SPD2)

    def v(self):
        return self._leaf([0.5, 1.5, 2.5])

    def b(self):
        return self._leaf([[[1.0, 0.5], [0.2, 2.0]], [[0.3, 1.0], [1.5, 0.7]]])

    def idx(self):
        return self.m.tensor([0, 2])

    def mask(self):
        return self.m.tensor([[True, False, True], [False, True, False], [True, True, False]])


# generic calls, tried in order (the first one accepted is the op's call)
CALLS = [
    lambda f, t: f(t.x()),
    lambda f, t: f(t.x(), t.y()),
    lambda f, t: f(t.x(), 1),
    lambda f, t: f(t.x(), 0.5),
    lambda f, t: f(t.x(), t.y(), t.y()),
    lambda f, t: f(t.x(), 0, t.idx()),
    lambda f, t: f([t.x(), t.y()]),
    lambda f, t: f(1, t.x()),
]

# ops the generic calls cannot reach, or reach with the wrong meaning
RECIPES = {
    "addbmm": lambda f, t: f(t.x()[:2, :2], t.b(), t.b()),
    "baddbmm": lambda f, t: f(t.b(), t.b(), t.b()),
    "addmv": lambda f, t: f(t.v(), t.x(), t.v()),
    "addr": lambda f, t: f(t.x(), t.v(), t.v()),
    "as_strided": lambda f, t: f(t.x(), (2, 2), (1, 3)),
    "as_strided_scatter": lambda f, t: f(t.x(), t.y()[:2, :2], (2, 2), (1, 3)),
    "bmm": lambda f, t: f(t.b(), t.b()),
    "broadcast_to": lambda f, t: f(t.x(), (2, 3, 3)),
    "expand": lambda f, t: f(t.x(), 2, 3, 3),
    "diagonal_scatter": lambda f, t: f(t.x(), t.v()),
    "dot": lambda f, t: f(t.v(), t.v()),
    "vdot": lambda f, t: f(t.v(), t.v()),
    "inner": lambda f, t: f(t.v(), t.v()),
    "mv": lambda f, t: f(t.x(), t.v()),
    "gather": lambda f, t: f(t.x(), 1, t.m.tensor([[0, 1], [2, 0], [1, 1]])),
    "take_along_dim": lambda f, t: f(t.x(), t.m.tensor([[0, 1], [2, 0], [1, 1]]), 1),
    "index_add": lambda f, t: f(t.x(), 0, t.idx(), t.y()[:2]),
    "index_copy": lambda f, t: f(t.x(), 0, t.idx(), t.y()[:2]),
    "index_fill": lambda f, t: f(t.x(), 0, t.idx(), 2.0),
    "index_put": lambda f, t: f(t.x(), (t.idx(),), t.y()[:2]),
    "index_reduce": lambda f, t: f(t.x(), 0, t.idx(), t.y()[:2], "prod"),
    "index_select": lambda f, t: f(t.x(), 0, t.idx()),
    "masked_fill": lambda f, t: f(t.x(), t.mask(), 2.0),
    "masked_scatter": lambda f, t: f(t.x(), t.mask(), t.y()),
    "masked_select": lambda f, t: f(t.x(), t.mask()),
    "scatter": lambda f, t: f(t.x(), 1, t.m.tensor([[0, 1], [2, 0], [1, 2]]), t.y()[:, :2]),
    "scatter_add": lambda f, t: f(t.x(), 1, t.m.tensor([[0, 1], [2, 0], [1, 2]]), t.y()[:, :2]),
    "scatter_reduce": lambda f, t: f(
        t.x(), 1, t.m.tensor([[0, 1], [2, 0], [1, 2]]), t.y()[:, :2], "amax"
    ),
    "apply_": lambda f, t: f(t.x(), lambda v: v),
    "map_": lambda f, t: f(t.x(), t.y(), lambda a, b: a),
    "transpose_": lambda f, t: f(t.x(), 0, 1),
    "swapaxes_": lambda f, t: f(t.x(), 0, 1),
    "swapdims_": lambda f, t: f(t.x(), 0, 1),
    "resize_": lambda f, t: f(t.x(), 9),
    "resize_as_": lambda f, t: f(t.x(), t.v()),
    "as_strided_": lambda f, t: f(t.x(), (2, 2), (1, 3)),
    "set_": lambda f, t: f(t.x(), t.y().detach()),
    "put": lambda f, t: f(t.x(), t.idx(), t.v()[:2]),
    "take": lambda f, t: f(t.x(), t.idx()),
    "narrow": lambda f, t: f(t.x(), 0, 1, 2),
    "narrow_copy": lambda f, t: f(t.x(), 0, 1, 2),
    "select": lambda f, t: f(t.x(), 0, 1),
    "select_scatter": lambda f, t: f(t.x(), t.v(), 0, 1),
    "slice_scatter": lambda f, t: f(t.x(), t.y()[:1], 0, 0, 1),
    "movedim": lambda f, t: f(t.x(), 0, 1),
    "moveaxis": lambda f, t: f(t.x(), 0, 1),
    "swapaxes": lambda f, t: f(t.x(), 0, 1),
    "swapdims": lambda f, t: f(t.x(), 0, 1),
    "transpose": lambda f, t: f(t.x(), 0, 1),
    "permute": lambda f, t: f(t.x(), (1, 0)),
    "reshape": lambda f, t: f(t.x(), (9,)),
    "view": lambda f, t: f(t.x(), 9),
    "unflatten": lambda f, t: f(t.x(), 1, (3, 1)),
    "repeat": lambda f, t: f(t.x(), 2, 1),
    "tile": lambda f, t: f(t.x(), (2, 1)),
    "flip": lambda f, t: f(t.x(), (0,)),
    "roll": lambda f, t: f(t.x(), 1, 0),
    "renorm": lambda f, t: f(t.x(), 2, 0, 1.0),
    "prelu": lambda f, t: f(t.x(), t.m.tensor([0.25], dtype=t.m.float64, requires_grad=True)),
    "lerp": lambda f, t: f(t.x(), t.y(), 0.3),
    "where": lambda f, t: (
        f(t.mask(), t.x(), t.y()) if f is t.m.where else f(t.x(), t.mask(), t.y())
    ),
    "polygamma": lambda f, t: f(2, t.x()) if f is t.m.polygamma else f(t.x(), 2),
    "polygamma_": lambda f, t: f(t.x(), 2),
    "mvlgamma": lambda f, t: f(t.x() + 1, 2),
    "mvlgamma_": lambda f, t: f(t.x(), 1),
    "outer": lambda f, t: f(t.v(), t.v()),
    "ger": lambda f, t: f(t.v(), t.v()),
    "matrix_power": lambda f, t: f(t.x(), 3),
    "einsum": lambda f, t: f("ij,jk->ik", t.x(), t.y()),
    "cross": lambda f, t: f(t.x(), t.y()),
    "cholesky_solve": lambda f, t: f(t.y(), t.m.linalg.cholesky(t.x())),
    "cholesky_inverse": lambda f, t: f(t.m.linalg.cholesky(t.x())),
    "triangular_solve": lambda f, t: f(t.y(), t.x().triu()),
    "split": lambda f, t: f(t.x(), 2),
    "chunk": lambda f, t: f(t.x(), 2),
    "tensor_split": lambda f, t: f(t.x(), 2),
    "unbind": lambda f, t: f(t.x()),
    "split_with_sizes": lambda f, t: f(t.x(), [1, 2]),
    "unsafe_split_with_sizes": lambda f, t: f(t.x(), [1, 2]),
    "hsplit": lambda f, t: f(t.x(), 3),
    "vsplit": lambda f, t: f(t.x(), 3),
    "kthvalue": lambda f, t: f(t.x(), 2),
    "topk": lambda f, t: f(t.x(), 2),
    "quantile": lambda f, t: f(t.x(), 0.3),
    "nanquantile": lambda f, t: f(t.x(), 0.3),
    "sum_to_size": lambda f, t: f(t.x(), (1, 3)),
    "expand_as": lambda f, t: f(t.x()[:1], t.y()),
    "view_as": lambda f, t: f(t.x(), t.y()),
    "reshape_as": lambda f, t: f(t.x(), t.y()),
    "type_as": lambda f, t: f(t.x(), t.y()),
    "new_tensor": lambda f, t: f(t.x(), [1.0]),
    "new_full": lambda f, t: f(t.x(), (2,), 1.0),
    "unfold": lambda f, t: f(t.x(), 0, 2, 1),
    "diff": lambda f, t: f(t.x()),
    "histc": lambda f, t: f(t.x()),
    "histogram": lambda f, t: f(t.x(), 4),
    "bincount": lambda f, t: f(t.m.tensor([0, 1, 1]), t.v()),
    "searchsorted": lambda f, t: f(t.v(), t.v()),
    "bernoulli": lambda f, t: f(t.x() / 5),  # probabilities
    "bernoulli_": lambda f, t: f(t.x(), 0.5),
}


def _is_float(t, m):
    return t.dtype.is_floating_point or t.dtype.is_complex


def _tensors(r, m):
    if isinstance(r, m.Tensor):
        return [r]
    if isinstance(r, (tuple, list)):
        return [x for item in r for x in _tensors(item, m)]
    return []


def not_implemented(exc) -> bool:
    return (
        isinstance(exc, RuntimeError)
        and "is not implemented" in str(exc)
        and ("derivative" in str(exc))
    )


def verdict(m, name, f, inplace):
    """(verdict, detail) for op `f` (named `name`) on module `m`."""
    recipe = RECIPES.get(name, RECIPES.get(name[:-1]) if inplace else None)
    calls = [recipe] if recipe is not None else CALLS
    last = None
    for call in calls:
        t = Inputs(m, inplace)
        before = None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if inplace:  # the recipe's first tensor is this non-leaf, checked after
                    x = t.x()
                    before = x.grad_fn
                    t.x = lambda x=x: x
                r = call(f, t)
        except Exception as exc:  # noqa: BLE001 - the next call is tried
            last = exc
            if isinstance(exc, (RuntimeError, BufferError)) and re.search(
                r"requires? grad", str(exc)
            ):  # a refusal in torch's words
                return "refused", str(exc)[:80]
            continue
        if inplace:
            if x.grad_fn is before:
                return "same", ""
            outs = [x]
        else:
            outs = [o for o in _tensors(r, m) if _is_float(o, m)]
            if not _tensors(r, m):
                return "value", ""
            if not outs:
                return "int", ""
            outs = [o for o in outs if o.grad_fn is not None]
            if not outs:
                return "none", ""
        try:
            total = sum((o.real if o.dtype.is_complex else o).sum() for o in outs)
            leaves = [leaf for leaf in t.leaves if leaf.requires_grad]
            with warnings.catch_warnings():  # (complex -> real casts of cfloat's gradient)
                warnings.simplefilter("ignore")
                m.autograd.grad(total, leaves, allow_unused=True)
        except Exception as exc:  # noqa: BLE001 - sorted into verdicts
            if not_implemented(exc):
                return "noimpl", str(exc)[:80]
            return "bwfail", f"{type(exc).__name__}: {str(exc)[:100]}"
        return "grad", ""
    return "skip", f"{type(last).__name__}: {str(last)[:80]}"


def public_ops(gt):
    """(name, attribute path) of every public callable: gt.<f>, gt.linalg.<f>,
    gt.special.<f> (where it exists) and Tensor.<method>."""
    out = []
    for n in sorted(set(gt.__all__)):
        f = getattr(gt, n)
        if callable(f) and not inspect.isclass(f):
            out.append((n, ("", n)))
    for sub in ("linalg", "special"):
        ns = getattr(gt, sub, None)
        for n in sorted(getattr(ns, "__all__", ())):
            out.append((f"{sub}.{n}", (sub, n)))
    for n in sorted(dir(gt.Tensor)):
        if not n.startswith("_") and callable(getattr(gt.Tensor, n, None)):
            out.append((f"Tensor.{n}", ("Tensor", n)))
    return out


def resolve(m, path):
    ns, n = path
    obj = m if not ns else getattr(m, ns, None)
    return getattr(obj, n, None) if obj is not None else None


# calls that switch thread- or process-wide state (autocast on, its nesting): called with
# the walk's tensors they would leave every later test under autocast, so they are not
# called at all (a "skip" like any other op without a float tensor argument)
STATEFUL = {
    "set_autocast_enabled",
    "set_autocast_dtype",
    "set_autocast_cpu_enabled",
    "set_autocast_cpu_dtype",
    "set_autocast_gpu_dtype",
    "set_autocast_cache_enabled",
    "autocast_increment_nesting",
    "autocast_decrement_nesting",
    "clear_autocast_cache",
}


def walk(m, ops):
    """{name: (verdict, detail)} for `ops` (from public_ops) on module `m`."""
    result = {}
    for name, path in ops:
        f = resolve(m, path)
        if f is None:
            result[name] = ("absent", "")
            continue
        if path[0] == "" and path[1] in STATEFUL:
            result[name] = ("skip", "switches autocast state: not called")
            continue
        short = path[1]
        inplace = path[0] == "Tensor" and short.endswith("_") and not short.endswith("__")
        result[name] = verdict(m, short, f, inplace)
    return result
