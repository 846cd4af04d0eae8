"""RMSprop, optionally centered and with momentum (torch's formula)."""

from __future__ import annotations

import gpu_tensor as gt

from .._tensor import Tensor
from ._checks import check_non_negative, value
from .fused import rmsprop_kernel
from .optimizer import Optimizer

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    def __init__(
        self,
        params,
        lr: float | Tensor = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_non_negative("learning rate", lr)
        check_non_negative("epsilon value", eps)
        check_non_negative("momentum value", momentum)
        check_non_negative("weight_decay value", weight_decay)
        check_non_negative("alpha value", alpha)
        super().__init__(
            params,
            dict(
                lr=lr,
                alpha=alpha,
                eps=eps,
                weight_decay=weight_decay,
                momentum=momentum,
                centered=centered,
                capturable=capturable,
                foreach=foreach,
                maximize=maximize,
                differentiable=differentiable,
            ),
        )

    def _step_group(self, group) -> None:
        lr, alpha, eps = value(group["lr"]), group["alpha"], group["eps"]
        wd, mom, centered = group["weight_decay"], group["momentum"], group["centered"]
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if not state:
                state["step"] = gt.tensor(0.0, device="cpu")  # host-side: read every step
                state["square_avg"] = gt.zeros_like(p)
                if mom > 0:
                    state["momentum_buffer"] = gt.zeros_like(p)
                if centered:
                    state["grad_avg"] = gt.zeros_like(p)
            state["step"].add_(1)
            sq, gavg = state["square_avg"], state.get("grad_avg")
            buf = state.get("momentum_buffer")
            if self._use_fused(group, p):
                amp = self._amp_args()  # GradScaler's (inv_scale, found_inf): skip on device
                kernel = rmsprop_kernel(
                    wd != 0,
                    centered,
                    mom > 0,
                    group["maximize"],
                    1 - alpha < 0.5,
                    amp=amp is not None,
                )
                extra = tuple(t for t in (gavg, buf) if t is not None)
                kernel(
                    p,
                    p.grad,
                    sq,
                    *extra,
                    lr,
                    float(wd),
                    float(alpha),
                    float(eps),
                    float(mom),
                    *(amp or ()),
                    out=(p, sq) + extra,
                )
                continue
            g = -p.grad if group["maximize"] else p.grad
            if wd != 0:
                g = g + p * wd
            sq.mul_(alpha).add_(g * g, alpha=1 - alpha)
            if centered:
                gavg.lerp_(g, 1 - alpha)
                avg = (sq - gavg * gavg).sqrt() + eps
            else:
                avg = sq.sqrt() + eps
            if mom > 0:
                buf.mul_(mom).add_(g / avg)
                p.add_(buf, alpha=-lr)
            else:
                p.add_(g / avg, alpha=-lr)
