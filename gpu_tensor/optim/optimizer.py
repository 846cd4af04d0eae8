"""`Optimizer`: param groups, per-parameter state, zero_grad, state_dict in torch's format.

Subclasses implement `_step_group(group)`. On a cuda device each parameter's update runs as
one generated kernel through `gt.fuse` (see fused.py) unless `fused=False`; on cpu the update
is the eager composition of in-place ops (torch's single-tensor formula), unless `fused=True`.
"""

from __future__ import annotations

import copy
from collections import defaultdict

from gpu_tensor._tensor import Tensor
from gpu_tensor.autograd import no_grad
from gpu_tensor.nn.parameter import zero_grads

__all__ = ["Optimizer", "required"]


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()  # torch's marker for a default a param group must supply


class Optimizer:
    def __init__(self, params, defaults: dict):
        self.defaults = defaults
        self.state: dict = defaultdict(dict)
        self.param_groups: list = []
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of "
                f"Tensors or dicts, but got {type(params).__name__}"
            )
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {g[k]}" for k in sorted(g) if k != "params"]
        return "\n".join(lines) + "\n)"

    def add_param_group(self, param_group: dict) -> None:
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        if isinstance(param_group["params"], set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, "
                "but the ordering of tensors in sets will change between runs. "
                "Please use a list instead."
            )
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(
                    f"optimizer can only optimize Tensors, but one of the params "
                    f"is {type(p).__name__}"
                )
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        group = {**param_group, "params": params}
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(
                    f"parameter group didn't specify a value of required "
                    f"optimization parameter {name}"
                )
            group.setdefault(name, default)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        zero_grads((p for g in self.param_groups for p in g["params"]), set_to_none)

    def step(self, closure=None):
        """One update of every parameter that has a gradient. `closure` re-evaluates the
        model and returns the loss (run with grad enabled, as in torch)."""
        loss = None
        if closure is not None:
            from gpu_tensor.autograd import enable_grad

            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                self._step_group(group)
        return loss

    def _step_group(self, group) -> None:
        raise NotImplementedError

    def _use_fused(self, group, p) -> bool:
        """fused=None: the generated kernel on cuda, the eager formula on cpu."""
        fused = group.get("fused")
        return p.device.type == "cuda" if fused is None else bool(fused)

    # -- GradScaler: skip an overflowed step inside the fused kernels (no host sync) ----
    @property
    def _step_supports_amp_scaling(self) -> bool:
        """torch's flag for GradScaler: it then sets `grad_scale` and `found_inf` (device
        tensors) for the step, which unscales and skips inside the fused kernels. True when
        every parameter with a grad steps through the fused kernel on a device with memory
        of its own (cuda); on host memory reading found_inf costs no sync, so GradScaler
        reads it and skips the whole step, as torch does for unfused optimizers."""
        from gpu_tensor.backends import get_backend

        ps = [(g, p) for g in self.param_groups for p in g["params"] if p.grad is not None]
        return bool(ps) and all(
            self._use_fused(g, p) and not get_backend(p.device).host_arrays for g, p in ps
        )

    def _amp_args(self):
        """(inv_scale, found_inf) for the fused kernels while GradScaler.step runs this
        step (inv_scale: a 0-dim device tensor, or 1.0 when the grads are unscaled), else
        None."""
        found = getattr(self, "found_inf", None)
        if found is None:
            return None
        cached = self.__dict__.get("_amp_cached")
        if cached is None or cached[1] is not found:
            scale = getattr(self, "grad_scale", None)
            inv = 1.0 if scale is None else scale.double().reciprocal().float()
            self._amp_cached = cached = (inv, found)
        return cached

    # -- state_dict -------------------------------------------------------------------
    def state_dict(self) -> dict:
        """{'state': {index: {...}}, 'param_groups': [{..., 'params': [index, ...]}]}, with
        parameters numbered in group order (torch's format)."""
        index, groups = {}, []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            packed["params"] = []
            for p in g["params"]:
                index.setdefault(id(p), len(index))
                packed["params"].append(index[id(p)])
            groups.append(packed)
        state = {index[id(p)]: dict(s) for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = copy.deepcopy(state_dict)
        saved = state_dict["param_groups"]
        if len(saved) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for g, s in zip(self.param_groups, saved, strict=True):
            if len(g["params"]) != len(s["params"]):
                raise ValueError(
                    "loaded state dict contains a parameter group that doesn't "
                    "match the size of optimizer's group"
                )
        by_index = {
            i: p
            for g, s in zip(self.param_groups, saved, strict=True)
            for i, p in zip(s["params"], g["params"], strict=True)
        }
        self.state = defaultdict(dict)
        for i, st in state_dict["state"].items():
            p = by_index.get(int(i))
            if p is None:
                continue
            self.state[p] = {k: _to_param(v, p, k) for k, v in st.items()}
        for g, s in zip(self.param_groups, saved, strict=True):
            g.update({k: v for k, v in s.items() if k != "params"})


def _to_param(value, p, key):
    """Saved state moved to its parameter's device; floating state takes its dtype. The
    step count stays where it was saved (torch keeps it on the cpu)."""
    if not isinstance(value, Tensor) or key == "step":
        return value
    if value.is_floating_point():
        return value.to(device=p.device, dtype=p.dtype)
    return value.to(p.device)
