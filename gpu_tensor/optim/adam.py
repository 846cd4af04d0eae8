"""Adam and AdamW (decoupled weight decay), with amsgrad and maximize (torch's formula)."""

from __future__ import annotations

import math

import gpu_tensor as gt

from .._tensor import Tensor
from ._checks import check_beta, check_non_negative, value
from .fused import adam_amp_corrections, adam_kernel
from .host_step import adam_host_step
from .optimizer import Optimizer

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    _decoupled = False

    def __init__(
        self,
        params,
        lr: float | Tensor = 1e-3,
        betas: tuple[float | Tensor, float | Tensor] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        check_non_negative("learning rate", lr)
        check_non_negative("epsilon value", eps)
        check_beta(0, betas[0])
        check_beta(1, betas[1])
        check_non_negative("weight_decay value", weight_decay)
        super().__init__(
            params,
            dict(
                lr=lr,
                betas=tuple(betas),
                eps=eps,
                weight_decay=weight_decay,
                amsgrad=amsgrad,
                maximize=maximize,
                foreach=foreach,
                capturable=capturable,
                differentiable=differentiable,
                fused=fused,
                decoupled_weight_decay=decoupled_weight_decay or self._decoupled,
            ),
        )

    def _step_group(self, group) -> None:
        lr, (beta1, beta2) = value(group["lr"]), group["betas"]
        eps, wd, amsgrad = group["eps"], group["weight_decay"], group["amsgrad"]
        decoupled = group["decoupled_weight_decay"]
        first = next((p for p in group["params"] if p.grad is not None), None)
        if (
            first is not None
            and self._amp_args() is None
            and adam_host_step(self, group, self._use_fused(group, first))
        ):
            return  # cpu / emulated cuda: vectorised passes, the same values (host_step.py);
            #         a GradScaler step takes the kernels below, which skip on the device
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            capturable = group["capturable"] and p.device.type == "cuda"
            if not state:
                # host-side unless capturable: read every step. capturable (torch's flag,
                # for CUDA graphs): the count and the bias corrections stay on the device,
                # so a replayed step computes them afresh instead of replaying constants.
                state["step"] = gt.tensor(0.0, device=p.device if capturable else "cpu")
                state["exp_avg"] = gt.zeros_like(p)
                state["exp_avg_sq"] = gt.zeros_like(p)
                if amsgrad:
                    state["max_exp_avg_sq"] = gt.zeros_like(p)
            amp = self._amp_args()  # GradScaler's (inv_scale, found_inf): skip on the device
            if amp is not None:  # the count and the corrections stay on the device (fused.py)
                step_size, bc2_sqrt = adam_amp_corrections(state, p, amp[1], lr, beta1, beta2)
            else:
                state["step"].add_(1)
                if capturable:
                    step_t = state["step"]
                    step_size = lr / (1 - beta1**step_t)  # 0-d device tensors: kernel operands
                    bc2_sqrt = (1 - beta2**step_t).sqrt()
                else:
                    step = float(state["step"].item())
                    step_size = lr / (1 - beta1**step)
                    bc2_sqrt = math.sqrt(1 - beta2**step)
            m, v = state["exp_avg"], state["exp_avg_sq"]
            vmax = state.get("max_exp_avg_sq")
            if self._use_fused(group, p):
                kernel = adam_kernel(
                    wd != 0,
                    decoupled,
                    amsgrad,
                    group["maximize"],
                    1 - beta1 < 0.5,
                    amp=amp is not None,
                )
                ins = (p, p.grad, m, v) + ((vmax,) if amsgrad else ())
                kernel(
                    *ins,
                    1.0 - lr * wd,
                    float(wd),
                    1.0 - beta1,
                    float(beta2),
                    float(eps),
                    step_size,
                    bc2_sqrt,
                    *(amp or ()),
                    out=(p, m, v) + ((vmax,) if amsgrad else ()),
                )
                continue
            g = -p.grad if group["maximize"] else p.grad
            if wd != 0:
                if decoupled:
                    p.mul_(1 - lr * wd)
                else:
                    g = g + p * wd
            m.lerp_(g, 1 - beta1)
            v.mul_(beta2).add_(g * g, alpha=1 - beta2)
            if amsgrad:
                vmax.copy_(gt.maximum(vmax, v))
                denom = vmax.sqrt() / bc2_sqrt + eps
            else:
                denom = v.sqrt() / bc2_sqrt + eps
            if capturable:
                p.sub_(m / denom * step_size)
            else:
                p.add_(m / denom, alpha=-step_size)


class AdamW(Adam):
    """Adam whose weight decay shrinks the parameter directly (p *= 1 - lr*wd) instead of
    joining the gradient; torch's default weight_decay for it is 1e-2."""

    _decoupled = True

    def __init__(
        self,
        params,
        lr: float | Tensor = 1e-3,
        betas: tuple[float | Tensor, float | Tensor] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
        )
