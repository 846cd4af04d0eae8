"""torch.autograd.functional: jacobian, vjp, jvp, hessian, hvp, vhp of a function of
tensors.

First-order results use reverse mode (one backward per output element for jacobian; jvp
is the jacobian applied to v). The second-order ones (hessian, hvp, vhp) differentiate a
gradient, which needs `create_graph=True`: until the engine supports it they raise its
NotImplementedError; they need no change here once it does.
"""

from __future__ import annotations

from .._tensor import Tensor
from .engine import grad
from .grad_mode import enable_grad

__all__ = ["jacobian", "vjp", "jvp", "hessian", "hvp", "vhp"]


def _tuple(x, name):
    single = isinstance(x, Tensor)
    xs = (x,) if single else tuple(x)
    for t in xs:
        if not isinstance(t, Tensor):
            raise TypeError(
                f"The {name} given to the function must be either a Tensor or a "
                f"tuple of Tensors but one of them is a {type(t).__name__}."
            )
    return xs, single


def _leaves(inputs):
    return tuple(t.detach().requires_grad_(True) for t in inputs)


def _grads(out, xs, g, create_graph):
    gs = grad([out], list(xs), [g], retain_graph=True, create_graph=create_graph, allow_unused=True)
    return tuple(
        gi if gi is not None else x.new_zeros(x.shape) for gi, x in zip(gs, xs, strict=True)
    )


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J)."""
    ins, single = _tuple(inputs, "inputs")
    xs = _leaves(ins)
    with enable_grad():
        out = func(*xs)
        outs, out_single = _tuple(out, "outputs of the user-provided function")
        vs = (v,) if isinstance(v, Tensor) else tuple(v) if v is not None else None
        if vs is None:
            if any(o.numel() != 1 for o in outs):
                raise RuntimeError(
                    "The vector v can only be None if the user-provided "
                    "function returns a single Tensor with a single element."
                )
            vs = tuple(o.new_ones(o.shape) for o in outs)
        total = [x.new_zeros(x.shape) for x in xs]
        for o, vo in zip(outs, vs, strict=True):
            for i, gi in enumerate(_grads(o, xs, vo, create_graph)):
                total[i] = total[i] + gi
    detached = (
        out if create_graph else (out.detach() if out_single else tuple(o.detach() for o in outs))
    )
    return detached, (total[0] if single else tuple(total))


def jacobian(
    func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"
):
    """d func(inputs) / d inputs: for one input and one output a tensor of shape
    out.shape + in.shape; tuples give nested tuples, as torch."""
    ins, single_in = _tuple(inputs, "inputs")
    xs = _leaves(ins)
    with enable_grad():
        outs, single_out = _tuple(func(*xs), "outputs of the user-provided function")
        rows = []
        for o in outs:
            flat = o.reshape(-1)
            per_input = [[] for _ in xs]
            for k in range(flat.numel()):
                seed = flat.new_zeros(flat.shape)
                seed[k] = 1
                for i, gi in enumerate(_grads(flat, xs, seed, create_graph)):
                    per_input[i].append(gi if create_graph else gi.detach())
            from ..ops.join import stack

            rows.append(
                tuple(
                    (stack(p, 0) if p else x.new_zeros((0, *x.shape))).reshape(*o.shape, *x.shape)
                    for p, x in zip(per_input, xs, strict=True)
                )
            )
    if single_out:
        return rows[0][0] if single_in else rows[0]
    return tuple(r[0] if single_in else r for r in rows)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v), computed as the jacobian applied to v."""
    ins, single = _tuple(inputs, "inputs")
    vs = (v,) if isinstance(v, Tensor) else tuple(v) if v is not None else None
    if vs is None:
        if any(x.numel() != 1 for x in ins):
            raise RuntimeError(
                "The vector v can only be None if the input to the "
                "user-provided function is a single Tensor with a single "
                "element."
            )
        vs = tuple(x.new_ones(x.shape) for x in ins)
    out = func(*ins)
    outs, out_single = _tuple(out, "outputs of the user-provided function")
    jac = jacobian(func, ins)
    if out_single:
        jac = (jac,)
    res = []
    for o, row in zip(outs, jac, strict=True):
        acc = o.new_zeros(o.shape)
        for j, vi in zip(row, vs, strict=True):
            acc = acc + (j.reshape(o.numel(), -1) @ vi.reshape(-1)).reshape(o.shape)
        res.append(acc)
    detached = out.detach() if out_single else tuple(o.detach() for o in outs)
    return detached, (res[0] if out_single else tuple(res))


def _gradient_fn(func):
    def g(*xs):
        with enable_grad():
            out = func(*xs)
            return grad([out], list(xs), create_graph=True)

    return g


def hessian(
    func,
    inputs,
    create_graph=False,
    strict=False,
    vectorize=False,
    outer_jacobian_strategy="reverse-mode",
):
    ins, single = _tuple(inputs, "inputs")
    jac = jacobian(_gradient_fn(func), ins, create_graph=create_graph)
    return jac[0][0] if single else jac  # one input: the tensor itself, as torch


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    ins, single = _tuple(inputs, "inputs")
    out = func(*ins)
    _, r = vjp(lambda *xs: tuple(_gradient_fn(func)(*xs)), ins, v, create_graph)
    return out.detach(), (r[0] if single else r)


hvp = vhp  # the hessian of a scalar function is symmetric: v^T H = (H v)^T
