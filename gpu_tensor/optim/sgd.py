"""SGD with momentum, dampening, nesterov and weight decay (torch's formula)."""

from __future__ import annotations

import gpu_tensor as gt

from .._tensor import Tensor
from ._checks import check_non_negative, value
from .fused import sgd_kernel
from .optimizer import Optimizer

__all__ = ["SGD"]


class SGD(Optimizer):
    def __init__(
        self,
        params,
        lr: float | Tensor = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float | Tensor = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_non_negative("learning rate", lr)
        check_non_negative("momentum value", momentum)
        check_non_negative("weight_decay value", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(
            params,
            dict(
                lr=lr,
                momentum=momentum,
                dampening=dampening,
                weight_decay=weight_decay,
                nesterov=nesterov,
                maximize=maximize,
                foreach=foreach,
                differentiable=differentiable,
                fused=fused,
            ),
        )

    def _step_group(self, group) -> None:
        lr, wd = value(group["lr"]), group["weight_decay"]
        mom, damp, nesterov = group["momentum"], group["dampening"], group["nesterov"]
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            buf = state.get("momentum_buffer")
            if self._use_fused(group, p):
                self._fused(p, state, buf, lr, wd, mom, damp, nesterov, group["maximize"])
                continue
            d = -p.grad if group["maximize"] else p.grad
            if wd != 0:
                d = d + p * wd
            if mom != 0:
                if buf is None:
                    buf = state["momentum_buffer"] = d.clone().detach()
                else:
                    buf.mul_(mom).add_(d, alpha=1 - damp)
                d = d + buf * mom if nesterov else buf
            p.add_(d, alpha=-lr)

    def _fused(self, p, state, buf, lr, wd, mom, damp, nesterov, maximize):
        amp = self._amp_args()  # GradScaler's (inv_scale, found_inf): skip on the device
        kernel = sgd_kernel(wd != 0, mom != 0, nesterov, maximize, amp=amp is not None)
        amp = amp or ()
        if mom == 0:
            kernel(p, p.grad, lr, wd, *amp, out=(p,))
            return
        first = buf is None
        if first:
            buf = state["momentum_buffer"] = gt.zeros_like(p)
        keep, take = (0.0, 1.0) if first else (float(mom), 1.0 - damp)
        kernel(p, p.grad, buf, lr, wd, float(mom), keep, take, *amp, out=(p, buf))
