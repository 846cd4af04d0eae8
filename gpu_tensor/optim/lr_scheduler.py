"""Learning-rate schedules: StepLR, CosineAnnealingLR, LambdaLR, LinearLR (the linear
warmup) and SequentialLR (warmup then decay). Each writes group['lr'] on step(), with
torch's closed forms and its bookkeeping (last_epoch, base_lrs, get_last_lr, state_dict)."""

from __future__ import annotations

import math

__all__ = ["LRScheduler", "StepLR", "CosineAnnealingLR", "LambdaLR", "LinearLR", "SequentialLR"]


class LRScheduler:
    def __init__(self, optimizer, last_epoch: int = -1):
        from .optimizer import Optimizer

        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for g in optimizer.param_groups:
                g.setdefault("initial_lr", g["lr"])
        else:
            for i, g in enumerate(optimizer.param_groups):
                if "initial_lr" not in g:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] "
                        "when resuming an optimizer"
                    )
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def get_lr(self) -> list:
        """The lrs for epoch `last_epoch`, from the closed form."""
        return [self._lr(base) for base in self.base_lrs]

    def _lr(self, base):
        raise NotImplementedError

    def step(self, epoch=None) -> None:
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        for g, lr in zip(self.optimizer.param_groups, self.get_lr(), strict=True):
            g["lr"] = lr
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def get_last_lr(self) -> list:
        return self._last_lr

    def state_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)


class StepLR(LRScheduler):
    """lr = base * gamma ** (epoch // step_size)."""

    def __init__(self, optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def _lr(self, base):
        return base * self.gamma ** (self.last_epoch // self.step_size)


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (base - eta_min) (1 + cos(pi epoch / T_max)) / 2."""

    def __init__(self, optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):  # noqa: N803
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def _lr(self, base):
        cos = math.cos(math.pi * self.last_epoch / self.T_max)
        return self.eta_min + (base - self.eta_min) * (1 + cos) / 2


class LambdaLR(LRScheduler):
    """lr = base * lr_lambda(epoch); one function, or one per param group."""

    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1):
        n = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != n:
                raise ValueError(f"Expected {n} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * n
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        return [
            base * f(self.last_epoch)
            for base, f in zip(self.base_lrs, self.lr_lambdas, strict=True)
        ]

    def state_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}


class LinearLR(LRScheduler):
    """A linear warmup: the factor goes from start_factor to end_factor over total_iters
    steps, then stays at end_factor."""

    def __init__(
        self,
        optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ):
        if not 0 < start_factor <= 1:
            raise ValueError(
                "Starting multiplicative factor expected to be greater than 0 and "
                "less or equal to 1."
            )
        if not 0 <= end_factor <= 1:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer, last_epoch)

    def _lr(self, base):
        t = min(self.last_epoch, self.total_iters)
        return base * (
            self.start_factor + (self.end_factor - self.start_factor) * t / self.total_iters
        )


class SequentialLR(LRScheduler):
    """Run `schedulers[i]` until epoch milestones[i], then the next (warmup then decay)."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch: int = -1):
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                f"Sequential Schedulers expects number of schedulers provided to be "
                f"one more than the number of milestone points, but got number of "
                f"schedulers {len(schedulers)} and the number of milestones to be "
                f"equal to {len(milestones)}"
            )
        self.optimizer, self._schedulers, self._milestones = (
            optimizer,
            list(schedulers),
            list(milestones),
        )
        self.last_epoch = last_epoch + 1
        for g, lr in zip(optimizer.param_groups, schedulers[0].base_lrs, strict=True):
            g["lr"] = lr
        self._schedulers[0].last_epoch -= 1
        self._schedulers[0].step()
        self._last_lr = schedulers[0].get_last_lr()

    def step(self, epoch=None) -> None:
        self.last_epoch += 1
        import bisect

        idx = bisect.bisect_right(self._milestones, self.last_epoch)
        sched = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            sched.last_epoch = -1
        sched.step()
        self._last_lr = sched.get_last_lr()
