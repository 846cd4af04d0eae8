"""The optimizers' update formulas as `gt.fuse` functions: on cuda one generated kernel
per parameter reads param, grad and state once and writes param and state in place (all
outputs of one shape leave one kernel, so out= may alias the inputs).

Options that change the formula's shape (weight decay on or off, nesterov, amsgrad, ...)
are baked in: each combination is its own traced function, made once and cached. Values
that change per step (lr, bias corrections) are kernel scalars, so a new lr never retraces.
The arithmetic follows torch's single-tensor formulas, so fused and eager agree within the
dtype tolerance (not bit for bit: a kernel may contract a*b+c into one rounding).

`amp=True` (GradScaler, see `with_amp`): the kernel takes inv_scale and found_inf last,
unscales the grad as it reads it and writes every output back unchanged where found_inf is
set, so a step whose grads overflowed is skipped on the device, with no host sync.
"""

from __future__ import annotations

import functools

import gpu_tensor as gt

__all__ = ["sgd_kernel", "adam_kernel", "rmsprop_kernel", "with_amp", "adam_amp_corrections"]


def _one_per_variant(factory):
    """functools.cache keyed on the variant, however it is spelled: `amp` given or left at
    its default is the same kernel (one traced function per variant)."""
    cached = functools.cache(factory)

    @functools.wraps(factory)
    def get(*flags, amp=False):
        return cached(*flags, bool(amp))

    return get


def with_amp(step):
    """`step(p, g, *state, *scalars) -> (p, *state)` taking two more arguments at the end,
    inv_scale and found_inf (0-dim tensors on the device): the grad is unscaled as it is
    read, and where found_inf != 0 every output keeps its input (the step is skipped)."""

    def amp_step(p, g, *rest):
        *rest, inv_scale, found_inf = rest
        outs = step(p, g * inv_scale, *rest)
        outs = outs if isinstance(outs, tuple) else (outs,)
        olds = (p, *rest[: len(outs) - 1])  # the state tensors follow the grad, in output order
        skip = found_inf != 0
        return tuple(gt.where(skip, old, new) for old, new in zip(olds, outs, strict=True))

    amp_step.__name__ = step.__name__ + "_amp"
    return amp_step


@gt.fuse
def _adam_amp_scalars(step, found_inf, lr, beta1, beta2):
    """Adam's step count and bias corrections on the device (GradScaler): the count grows
    only on steps that are not skipped, as torch's fused Adam keeps it."""
    step = step + 1 - found_inf
    return step, lr / (1 - beta1**step), (1 - beta2**step).sqrt()


def adam_amp_corrections(state, p, found_inf, lr, beta1, beta2):
    """(step_size, bc2_sqrt) as 0-dim device tensors, state["step"] advanced on the device
    (moved there on the first GradScaler step)."""
    step = state["step"]
    if step.device != p.device:  # (a fill on the device: a host-to-device copy would sync)
        step = state["step"] = gt.full((), float(step.item()), dtype=gt.float32, device=p.device)
    step_size = gt.empty((), dtype=gt.float32, device=p.device)
    bc2_sqrt = gt.empty((), dtype=gt.float32, device=p.device)
    _adam_amp_scalars(
        step, found_inf, float(lr), float(beta1), float(beta2), out=(step, step_size, bc2_sqrt)
    )
    return step_size, bc2_sqrt


@_one_per_variant
def sgd_kernel(
    weight_decay: bool, momentum: bool, nesterov: bool, maximize: bool, amp: bool = False
):
    """(p, g[, buf], lr, wd, momentum, buf_keep, buf_take) -> (p[, buf]). The first step
    passes buf_keep=0, buf_take=1 (torch clones the gradient into the buffer)."""

    def sgd_step(p, g, *rest):
        if momentum:
            buf, lr, wd, mom, keep, take = rest
        else:
            lr, wd = rest
        d = -g if maximize else g
        if weight_decay:
            d = d + p * wd
        if not momentum:
            return p - d * lr
        buf = buf * keep + d * take
        d = d + buf * mom if nesterov else buf
        return p - d * lr, buf

    return gt.fuse(with_amp(sgd_step) if amp else sgd_step)


@_one_per_variant
def adam_kernel(
    weight_decay: bool,
    decoupled: bool,
    amsgrad: bool,
    maximize: bool,
    beta1_weight_lt_half: bool,
    amp: bool = False,
):
    """(p, g, m, v[, vmax], decay, wd, beta1w, beta2, eps, step_size, bc2_sqrt) ->
    (p, m, v[, vmax]). decay = 1 - lr*wd for AdamW; beta1w = 1 - beta1, the lerp weight
    (which side of 0.5 it is on picks torch's lerp branch, so that is baked in)."""

    def adam_step(p, g, m, v, *rest):
        if amsgrad:
            vmax, decay, wd, w1, beta2, eps, step_size, bc2_sqrt = rest
        else:
            decay, wd, w1, beta2, eps, step_size, bc2_sqrt = rest
        if maximize:
            g = -g
        if weight_decay:
            if decoupled:
                p = p * decay
            else:
                g = g + p * wd
        m = m + (g - m) * w1 if beta1_weight_lt_half else g - (g - m) * (1 - w1)
        v = v * beta2 + g * g * (1 - beta2)
        if amsgrad:
            vmax = gt.maximum(vmax, v)
            denom = vmax.sqrt() / bc2_sqrt + eps
        else:
            denom = v.sqrt() / bc2_sqrt + eps
        p = p - m / denom * step_size
        return (p, m, v, vmax) if amsgrad else (p, m, v)

    return gt.fuse(with_amp(adam_step) if amp else adam_step)


@_one_per_variant
def rmsprop_kernel(
    weight_decay: bool,
    centered: bool,
    momentum: bool,
    maximize: bool,
    alpha_weight_lt_half: bool,
    amp: bool = False,
):
    """(p, g, sq[, gavg][, buf], lr, wd, alpha, eps, mom) -> (p, sq[, gavg][, buf]).
    The lerp weight 1 - alpha picks torch's lerp branch, so its side of 0.5 is baked in."""

    def rmsprop_step(p, g, sq, *rest):
        rest = list(rest)
        gavg = rest.pop(0) if centered else None
        buf = rest.pop(0) if momentum else None
        lr, wd, alpha, eps, mom = rest
        if maximize:
            g = -g
        if weight_decay:
            g = g + p * wd
        sq = sq * alpha + g * g * (1 - alpha)
        if centered:
            gavg = (
                gavg + (g - gavg) * (1 - alpha) if alpha_weight_lt_half else g - (g - gavg) * alpha
            )
            avg = (sq - gavg * gavg).sqrt() + eps
        else:
            avg = sq.sqrt() + eps
        if momentum:
            buf = buf * mom + g / avg
            p = p - buf * lr
        else:
            p = p - g / avg * lr
        outs = [p, sq] + ([gavg] if centered else []) + ([buf] if momentum else [])
        return tuple(outs)

    return gt.fuse(with_amp(rmsprop_step) if amp else rmsprop_step)
