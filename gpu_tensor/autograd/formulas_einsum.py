"""The backward of einsum (ops/linalg.py): each operand's gradient is itself an einsum, of
the output's gradient with the other operands, onto that operand's subscripts; subscripts
that only that operand has (summed away by the forward) come back by broadcasting.
Ellipses and repeated subscripts within one operand (diagonals) have no formula yet: their
backward raises torch's "not implemented" error rather than skip the gradient."""

from __future__ import annotations

from ..ops import linalg
from .record import formula

__all__: list = []


def _operands(args, kwargs):
    ops = args[1:]
    if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
        ops = tuple(ops[0])
    return list(ops)


def _parse(equation, n):
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    subs = lhs.split(",")
    if not arrow:  # implicit output: the subscripts seen once, in alphabetical order
        letters = "".join(subs)
        rhs = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    if "." in eq or len(subs) != n or any(len(set(s)) != len(s) for s in subs):
        return None
    return subs, rhs


@formula("EinsumBackward0", (linalg, "einsum"), inputs=_operands)
def _einsum(ctx, out, equation, *operands):
    ops = _operands((equation, *operands), {})
    ctx.parsed = _parse(equation, len(ops))
    ctx.save_for_backward(*ops)


@_einsum.backward
def _(ctx, g):
    ops = ctx.saved_tensors
    if ctx.parsed is None:
        raise NotImplementedError(
            "the derivative for 'einsum' is not implemented for equations with '...' or a "
            "subscript repeated within one operand"
        )
    subs, rhs = ctx.parsed
    grads = []
    for i, (s, op) in enumerate(zip(subs, ops, strict=True)):
        if not ctx.needs_input_grad[i]:
            grads.append(None)
            continue
        others = [(t, o) for j, (t, o) in enumerate(zip(subs, ops, strict=True)) if j != i]
        seen = set(rhs).union(*[set(t) for t, _ in others])
        kept = "".join(c for c in s if c in seen)
        eq = ",".join([rhs, *[t for t, _ in others]]) + "->" + kept
        r = linalg.einsum(eq, g, *[o for _, o in others])
        for pos, c in enumerate(s):  # summed by this operand alone: broadcast back
            if c not in seen:
                r = r.unsqueeze(pos)
        grads.append(r.expand(*op.shape).to(op.dtype))
    return tuple(grads)
