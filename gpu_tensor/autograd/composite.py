"""One node with torch's name for an op that gpu_tensor composes from several.

torch implements `mse_loss`, `nll_loss`, `layer_norm`, `F.linear`'s addmm ... as single
kernels with single backward nodes (`MseLossBackward0`, ...), so `loss.grad_fn` and its
`next_functions` show one node whose edges go straight to the op's inputs. gpu_tensor
composes these from differentiable ops; `composite(name, fn, *inputs)` runs the same
composition on history-free aliases of the inputs and records one node called `name` whose
edges are the real inputs, so the graph a user walks reads like torch's.

The inner graph is kept (not recomputed): the node's backward runs it with autograd.grad,
retaining it until the outer node is released. Under create_graph=True the node instead
re-runs `fn` on the real inputs and differentiates that, so the gradient carries history
back to them (double backward works). The values, and so the numbers, are exactly those of
the composition.
"""

from __future__ import annotations

from .._tensor import Tensor
from . import grad_mode
from .function import FREED, FunctionCtx, connect, modified_in_place, set_outputs

__all__ = ["composite", "with_formula"]

_CLASSES: dict = {}


class CompositeNode(FunctionCtx):
    """The node of a composite op (subclassed once per torch name)."""

    _inner = None  # (output of the inner graph, its leaves, fn, the real inputs)

    def _backward(self, grad):
        if self._inner is None:
            raise RuntimeError(FREED)
        from .engine import grad as autograd_grad

        out, leaves, fn, inputs = self._inner
        want = [k for k, need in enumerate(self.needs_input_grad) if need]
        if grad_mode.STATE.enabled:  # create_graph: differentiate a re-run on the real inputs
            with grad_mode.enable_grad():
                redo = fn(*inputs)
            found = autograd_grad(
                redo, [inputs[k] for k in want], grad, create_graph=True, allow_unused=True
            )
        else:
            found = autograd_grad(
                out, [leaves[k] for k in want], grad, retain_graph=True, allow_unused=True
            )
        grads = [None] * len(inputs)
        for k, g in zip(want, found, strict=True):
            grads[k] = g
        return tuple(grads)

    def _release(self) -> None:
        super()._release()
        self._inner = None


def _node_class(name: str):
    cls = _CLASSES.get(name)
    if cls is None:
        cls = _CLASSES[name] = type(name, (CompositeNode,), {})
    return cls


def composite(name: str, fn, *inputs):
    """fn(*inputs), recorded (when it records at all) as one node named `name` with one
    edge per entry of `inputs` (None or a non-differentiable tensor: an empty edge)."""
    if not grad_mode.STATE.enabled or not any(
        isinstance(t, Tensor) and t._requires_grad for t in inputs
    ):
        return fn(*inputs)
    leaves = [
        t.detach().requires_grad_() if isinstance(t, Tensor) and t._requires_grad else t
        for t in inputs
    ]
    with grad_mode.enable_grad():
        out = fn(*leaves)
    if not out._requires_grad:
        return out
    result = out.detach()
    node = _node_class(name)()
    node._inner = (out, leaves, fn, inputs)
    node._had_saved = True  # a second backward without retain_graph raises FREED
    connect(node, [t if isinstance(t, Tensor) else None for t in inputs])
    set_outputs(node, [result])
    return result


class FormulaNode(FunctionCtx):
    """A torch-named node with an explicit backward (for hot ops where keeping an inner
    graph would cost more than the formula): `_formula(grad, need, *inputs)`."""

    _inputs = None
    _formula = None
    _checked = ()  # (tensor, its storage's version at the forward) for what torch's node saves
    _fresh_grads = True  # the package's own formulas: new tensors, or views of the gradient

    def _backward(self, grad):
        if self._inputs is None:
            raise RuntimeError(FREED)
        for t, version in self._checked:
            if t._storage._version != version:
                raise modified_in_place(t, self.name(), version)
        return tuple(self._formula(grad, self.needs_input_grad, *self._inputs))

    def _release(self) -> None:
        super()._release()
        self._inputs = self._formula = None  # (a formula's closure may hold saved outputs)
        self._checked = ()


def _formula_class(name: str):
    key = ("formula", name)
    cls = _CLASSES.get(key)
    if cls is None:
        cls = _CLASSES[key] = type(name, (FormulaNode,), {})
    return cls


def with_formula(name: str, forward, backward, *inputs, saved=()):
    """forward(*inputs), recorded as one node `name` whose backward is
    backward(grad, needs_input_grad, *inputs) -> one gradient (or None) per input. The
    inputs are kept as they are, so a create_graph backward differentiates through them.
    `saved`: the tensors torch's node saves; a change in place to one of them before the
    backward raises torch's error there (as saved_tensors does), instead of a gradient
    computed from the changed values."""
    if not grad_mode.STATE.enabled or not any(
        isinstance(t, Tensor) and t._requires_grad for t in inputs
    ):
        return forward(*inputs)
    with grad_mode.no_grad():
        out = forward(*inputs)
    node = _formula_class(name)()
    node._inputs, node._formula = inputs, backward
    if saved:
        node._checked = tuple((t, t._storage._version) for t in saved)
    node._had_saved = True
    connect(node, [t if isinstance(t, Tensor) else None for t in inputs])
    set_outputs(node, [out])
    return out
