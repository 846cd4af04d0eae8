"""clip_grad_norm_, clip_grad_value_, parameters_to_vector and vector_to_parameters, as
torch.nn.utils defines them."""

from __future__ import annotations

import math

import gpu_tensor as gt

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters"]


def _params(parameters):
    return [parameters] if isinstance(parameters, gt.Tensor) else list(parameters)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale every gradient by max_norm / (total norm + 1e-6) when the total norm of all
    gradients (as one vector) exceeds max_norm; returns the total norm."""
    grads = [p.grad for p in _params(parameters) if p.grad is not None]
    norm_type = float(norm_type)
    if not grads:
        return gt.tensor(0.0)
    with gt.no_grad():
        if math.isinf(norm_type):
            norms = [g.detach().abs().amax() for g in grads]
            total = gt.stack([n.to(grads[0].device) for n in norms]).amax()
        else:
            norms = [g.detach().norm(norm_type) for g in grads]
            total = gt.stack([n.to(grads[0].device) for n in norms]).norm(norm_type)
        if error_if_nonfinite and not bool(gt.isfinite(total)):
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients from "
                "`parameters` is non-finite, so it cannot be clipped. To disable "
                "this error and scale the gradients by the non-finite norm "
                "anyway, set `error_if_nonfinite=False`"
            )
        coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.device, g.dtype))
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient into [-clip_value, clip_value], in place."""
    with gt.no_grad():
        for p in _params(parameters):
            if p.grad is not None:
                p.grad.clamp_(-clip_value, clip_value)


def parameters_to_vector(parameters):
    return gt.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of `vec` into the parameters (their .data), in order."""
    if not isinstance(vec, gt.Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    k = 0
    with gt.no_grad():
        for p in parameters:
            n = p.numel()
            p.copy_(vec[k : k + n].reshape(p.shape))
            k += n
