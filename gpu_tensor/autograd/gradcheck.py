"""`gradcheck`: analytic gradients (the engine) against central finite differences.

Use float64 inputs: with eps=1e-6 the difference quotient of a float32 function is noise.
Each input element is perturbed in place (its memory, without a version bump) and restored.
"""

from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from . import grad_mode
from .engine import grad as _grad

__all__ = ["gradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """The analytic and numerical Jacobians disagree."""


def _outputs(func, inputs):
    out = func(*inputs)
    return (out,) if isinstance(out, Tensor) else tuple(out)


def _host(t):
    return np.array(t.detach()._host(), dtype=np.float64)


def _numerical(func, inputs, i, eps):
    """d(outputs)/d(inputs[i]) as a list (one per output) of (n_in, n_out) arrays."""
    t = inputs[i]
    data = t._data
    flat_idx = list(np.ndindex(*data.shape)) if data.ndim else [()]
    cols = []
    with grad_mode.no_grad():
        for idx in flat_idx:
            orig = data[idx].item()
            data[idx] = orig + eps
            plus = [_host(o).ravel() for o in _outputs(func, inputs)]
            data[idx] = orig - eps
            minus = [_host(o).ravel() for o in _outputs(func, inputs)]
            data[idx] = orig
            cols.append([(p - m) / (2 * eps) for p, m in zip(plus, minus, strict=True)])
    n_out = len(cols[0]) if cols else 0
    return [np.stack([c[k] for c in cols]) if cols else None for k in range(n_out)]


def _analytical(func, inputs, diff):
    """Per output k: {input i: (n_in, n_out) Jacobian} from one backward per element."""
    from ..creation import zeros

    outs = _outputs(func, inputs)
    result = []
    for out in outs:
        jac = {i: np.zeros((inputs[i].numel(), out.numel())) for i in diff}
        if not out._requires_grad:
            result.append(jac)
            continue
        for j in range(out.numel()):
            g = zeros(tuple(out.shape), dtype=out.dtype, device=out.device)  # dense: the
            g._data.reshape(-1)[j] = 1  # reshape is a view, so this sets element j
            grads = _grad(
                [out], [inputs[i] for i in diff], [g], retain_graph=True, allow_unused=True
            )
            for i, gi in zip(diff, grads, strict=True):
                if gi is not None:
                    if tuple(gi.shape) != tuple(inputs[i].shape):
                        raise GradcheckError(
                            f"Gradient for input {i} has shape {list(gi.shape)}, expected "
                            f"{list(inputs[i].shape)}"
                        )
                    jac[i][:, j] = _host(gi).ravel()
        result.append(jac)
    return result


# torch.autograd.gradcheck options accepted for compatibility; their checks (batched,
# forward-mode, fast mode, ...) are not performed here
_TORCH_ONLY = {
    "nondet_tol",
    "check_undefined_grad",
    "check_grad_dtypes",
    "check_batched_grad",
    "check_batched_forward_grad",
    "check_forward_ad",
    "check_backward_ad",
    "fast_mode",
    "masked",
}


def gradcheck(
    func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, **torch_options
) -> bool:
    """True when every output's Jacobian w.r.t. every input that requires grad matches
    finite differences within atol + rtol*|numerical|; else GradcheckError (or False with
    raise_exception=False). Slow by design: one backward per output element and two
    forwards per input element; keep shapes small."""
    unknown = set(torch_options) - _TORCH_ONLY
    if unknown:
        raise TypeError(f"gradcheck() got unexpected keyword arguments {sorted(unknown)}")
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    diff = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t._requires_grad]
    if not diff:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, "
            "but none of them have requires_grad=True."
        )
    for i in diff:
        if inputs[i].dtype.name != "float64":
            raise GradcheckError(
                f"Input #{i} requires gradient and is not a double precision "
                "floating point; gradcheck needs float64 inputs"
            )
    analytic = _analytical(func, inputs, diff)
    for i in diff:
        numeric = _numerical(func, inputs, i, eps)
        for k, num in enumerate(numeric):
            ana = analytic[k][i]
            if num is None:
                continue
            if not np.allclose(ana, num, rtol=rtol, atol=atol):
                msg = (
                    f"Jacobian mismatch for output {k} with respect to input {i},\n"
                    f"numerical:{num}\nanalytical:{ana}\n"
                )
                if raise_exception:
                    raise GradcheckError(msg)
                return False
    return True
