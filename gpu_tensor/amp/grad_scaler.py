"""`gt.amp.GradScaler`: dynamic loss scaling with torch's state machine, without host syncs.

Per optimizer, a stage READY -> UNSCALED -> STEPPED, reset by `update()`. The scale (0-dim
float32) and growth tracker (0-dim int32) live on the loss's device, made on the first
`scale()`. Nothing here reads a device value back to the host except `get_scale()`,
`state_dict()` and the overflow report, which say so:

- `unscale_` checks and unscales each (device, dtype) group of grads on the device and
  keeps found_inf there: on cuda one launch of the multi-tensor kernel per group
  (grad_tables.py), elsewhere and for grads that are not dense the per-grad ops of
  scaler_ops.py;
- `step` hands an optimizer that can skip on the device (`_step_supports_amp_scaling`:
  gpu_tensor's optimizers, whose cuda step is one fused kernel per parameter) the scale and
  found_inf tensors; the kernel unscales the grad and leaves param and state unchanged when
  found_inf is set. Other optimizers get torch's behaviour: one `.item()` on found_inf;
- `update` runs the growth/backoff arithmetic as one fused kernel on the device.

Beyond torch: `step()` records which parameters overflowed; `found_inf_report()` names
them, and `last_step_skipped()` says whether the step was skipped (both read the device).
"""

from __future__ import annotations

import warnings
from collections import abc, defaultdict
from enum import Enum

import gpu_tensor as gt
from gpu_tensor.backends import cuda_amp

from .grad_tables import GradTables, dense_span, uses_kernel
from .scaler_ops import check_and_unscale_, update_scale_

__all__ = ["GradScaler", "OptState"]

_FIX = (
    "This may indicate your script did not use scaler.scale(loss or outputs) earlier in "
    "the iteration."
)


def _overflowed(flag) -> bool:
    """A grad's flag: the kernel's TableFlag, or the per-grad path's 0-dim bool tensor
    (True when every element was finite)."""
    return flag.overflowed() if hasattr(flag, "overflowed") else not flag.item()


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_state() -> dict:
    return {"stage": OptState.READY, "found_inf_per_device": {}, "flags": []}


class GradScaler:
    def __init__(
        self,
        device: str = "cuda",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled:
            from .. import device as _device

            if not _device.cuda_available():
                warnings.warn(
                    "torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                    stacklevel=2,
                )
                self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_fresh_state)
            self._last_found_inf = None
            self._last_flags = []
            self._tables = GradTables()

    # -- scale ----------------------------------------------------------------------------
    def _check_scale_growth_tracker(self, funcname: str):
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + _FIX)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + _FIX)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev) -> None:
        self._scale = gt.full((), self._init_scale, dtype=gt.float32, device=dev)
        self._growth_tracker = gt.full((), self._init_growth_tracker, dtype=gt.int32, device=dev)

    def _scale_on(self, device):
        s = self._scale
        return s if s.device == device else s.to(device, non_blocking=True)

    def scale(self, outputs):
        """outputs * scale: a tensor, or (recursively) a list/tuple/iterable of tensors. A
        disabled scaler returns `outputs` itself."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, gt.Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale_on(outputs.device)

        def apply(val):
            if isinstance(val, gt.Tensor):
                if self._scale is None:
                    self._lazy_init_scale_growth_tracker(val.device)
                return val * self._scale_on(val.device)
            if isinstance(val, abc.Iterable):
                it = map(apply, val)
                return type(val)(it) if isinstance(val, (list, tuple)) else it
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply(outputs)

    # -- unscale --------------------------------------------------------------------------
    def _unscale_grads_(self, optimizer, allow_fp16: bool, unscale: bool = True):
        """{device: found_inf} over the optimizer's grads, grouped by (device, dtype): one
        check-and-unscale per group (unscale=False: the check only). Also keeps each grad's
        flag for the report."""
        groups = defaultdict(lambda: defaultdict(list))
        params = []
        with gt.no_grad():
            for gi, group in enumerate(optimizer.param_groups):
                for pi, p in enumerate(group["params"]):
                    if p.grad is None:
                        continue
                    if not allow_fp16 and p.grad.dtype is gt.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    groups[p.grad.device][p.grad.dtype].append(p.grad)
                    params.append((gi, pi, p))
            found = {}
            flags = {}
            for dev, by_dtype in groups.items():
                found[dev] = gt.zeros((), dtype=gt.float32, device=dev)
                for grads in by_dtype.values():
                    rest = self._kernel_group(grads, found[dev], unscale, flags)
                    if rest:
                        inv = self._host_inv_scale(dev, unscale)
                        for g, f in zip(
                            rest, check_and_unscale_(rest, found[dev], inv, unscale), strict=True
                        ):
                            flags[id(g)] = f
        state = self._per_optimizer_states[id(optimizer)]
        state["flags"] = [(gi, pi, tuple(p.shape), flags[id(p.grad)]) for gi, pi, p in params]
        return found

    def _kernel_group(self, grads, found_inf, unscale: bool, flags: dict) -> list:
        """The multi-tensor kernel over the grads of one (device, dtype) group that it takes
        (cuda, a dense layout, a floating dtype); returns the others."""
        dev = grads[0].device
        if not uses_kernel(dev) or grads[0].dtype.name not in cuda_amp.KERNEL_TYPES:
            return grads
        spans = [dense_span(g) for g in grads]
        dense = [(g, s) for g, s in zip(grads, spans, strict=True) if s is not None]
        done = (
            self._tables.check_and_unscale_(
                [g for g, _ in dense],
                [s for _, s in dense],
                found_inf,
                self._scale_on(dev),
                "reciprocal" if unscale else "check",
            )
            if dense
            else None
        )
        if done is None:  # nothing dense
            return grads
        for (g, _), f in zip(dense, done, strict=True):
            flags[id(g)] = f
        return [g for g, s in zip(grads, spans, strict=True) if s is None]

    def _host_inv_scale(self, dev, unscale: bool):
        """The per-grad path's factor on `dev`: float32(1 / float64(scale)), or 1 (check)."""
        if not unscale:
            return gt.ones((), dtype=gt.float32, device=dev)
        inv = self._scale.double().reciprocal().float()
        return inv if inv.device == dev else inv.to(dev)

    def unscale_(self, optimizer) -> None:
        """Divide the optimizer's grads by the scale, in place, and record (on the device)
        whether any was inf or NaN. Optional: step() does it when not done yet; call it
        before clipping gradients."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update()."
            )
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, False)
        state["stage"] = OptState.UNSCALED

    # -- step -----------------------------------------------------------------------------
    def step(self, optimizer, *args, **kwargs):
        """optimizer.step(*args, **kwargs) unless this iteration's grads overflowed; returns
        what it returns (None when skipped). No host sync with gpu_tensor's optimizers."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if getattr(optimizer, "_step_supports_amp_scaling", False):
            unscaled = state["stage"] is OptState.UNSCALED
            if not unscaled:  # check only: the step kernel unscales as it reads the grad
                state["found_inf_per_device"] = self._unscale_grads_(optimizer, True, unscale=False)
            found_inf = self._combined(state["found_inf_per_device"].values())
            optimizer.grad_scale = None if unscaled else self._scale
            optimizer.found_inf = found_inf
            try:
                retval = optimizer.step(*args, **kwargs)
            finally:
                del optimizer.grad_scale, optimizer.found_inf
            state["stage"] = OptState.STEPPED
            return retval
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None
        if not sum(v.item() for v in state["found_inf_per_device"].values()):  # host sync
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def _combined(self, found_infs):
        found_infs = [f.to(self._scale.device, non_blocking=True) for f in found_infs]
        if not found_infs:
            return gt.zeros((), dtype=gt.float32, device=self._scale.device)
        total = found_infs[0]
        for f in found_infs[1:]:
            total = total + f
        return total

    # -- update ---------------------------------------------------------------------------
    def update(self, new_scale=None) -> None:
        """Back the scale off if any optimizer saw an inf/NaN since the last update, grow it
        after growth_interval clean iterations; or set it to `new_scale`. On the device."""
        if not self._enabled:
            return
        scale, tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                scale.fill_(new_scale)
            else:
                reason = (
                    "new_scale should be a float or a 1-element torch.cuda.FloatTensor "
                    "or torch.FloatTensor with requires_grad=False."
                )
                if new_scale.device.type != self._device:
                    raise AssertionError(reason)
                if new_scale.numel() != 1:
                    raise AssertionError(reason)
                if new_scale.requires_grad is True:
                    raise AssertionError(reason)
                scale.copy_(new_scale)
        else:
            found_infs = [
                f
                for st in self._per_optimizer_states.values()
                for f in st["found_inf_per_device"].values()
            ]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            combined = self._combined(found_infs)
            update_scale_(
                scale,
                tracker,
                combined,
                self._growth_factor,
                self._backoff_factor,
                self._growth_interval,
            )
            self._last_found_inf = combined
        self._last_flags = [st["flags"] for st in self._per_optimizer_states.values()]
        self._per_optimizer_states = defaultdict(_fresh_state)

    # -- beyond torch: what the last iteration did (these read the device) -----------------
    def last_step_skipped(self) -> bool:
        """Was the optimizer step of the last updated iteration skipped (inf/NaN grads)?
        Reads one value from the device."""
        f = getattr(self, "_last_found_inf", None)
        return bool(f is not None and f.item() != 0)

    def found_inf_report(self) -> list:
        """The parameters whose gradients held an inf or NaN in the last updated iteration,
        as (param_group_index, param_index, shape) rows. Reads the per-parameter flags."""
        rows = []
        for flags in getattr(self, "_last_flags", []):
            for gi, pi, shape, flag in flags:
                if _overflowed(flag):
                    rows.append((gi, pi, shape))
        return rows

    # -- getters, setters, state_dict -------------------------------------------------------
    def get_scale(self) -> float:
        """The current scale as a Python float (reads the device: a sync)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale.item())

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        t = self._growth_tracker
        return self._init_growth_tracker if t is None else int(t.item())

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        """{'scale', 'growth_factor', 'backoff_factor', 'growth_interval', '_growth_tracker'}
        ({} when disabled), torch's keys; reads the scale and tracker from the device."""
        if not self._enabled:
            return {}
        return {
            "scale": self.get_scale(),
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._get_growth_tracker(),
        }

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError(
                "The source state dict is empty, possibly because it was saved "
                "from a disabled instance of GradScaler."
            )
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError(
                    "A GradScaler instance may only be pickled at the "
                    "beginning of an iteration, or at the end after "
                    "scaler.update()."
                )
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
            state["_per_optimizer_states"] = None
            state["_last_found_inf"] = None
            state["_last_flags"] = []
            state["_tables"] = None  # device tables: made again on the next unscale
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if self._enabled:
            self._per_optimizer_states = defaultdict(_fresh_state)
            self._tables = GradTables()
