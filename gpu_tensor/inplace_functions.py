"""torch's module-level in-place functions (`torch.sin_(x)`, `torch.relu_(x)`,
`torch.zero_(x)`, ...): each calls the Tensor method of the same name on its first argument
and returns it. Only the names whose method gpu_tensor has are defined."""

from __future__ import annotations

from ._tensor import Tensor

# torch 2.13's in-place functions that are also Tensor methods (dir(torch), names ending in _)
_TORCH_NAMES = (
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_",
    "arctan_", "arctanh_", "as_strided_", "asin_", "asinh_", "atan_", "atanh_", "ceil_",
    "clamp_", "clamp_max_", "clamp_min_", "clip_", "conj_physical_", "cos_", "cosh_",
    "deg2rad_", "detach_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_", "fix_",
    "floor_", "frac_", "gcd_", "i0_", "index_put_", "lcm_", "ldexp_", "log10_", "log1p_",
    "log2_", "log_", "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_",
    "relu_", "resize_as_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_",
    "square_", "tan_", "tanh_", "trunc_", "xlogy_", "zero_",
)


def _function(name: str):
    def fn(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{name}(input, ...): input.{name}(...), in place; returns input."
    return fn


__all__ = [n for n in _TORCH_NAMES if hasattr(Tensor, n)]
globals().update({n: _function(n) for n in __all__})
