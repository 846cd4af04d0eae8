"""torch's module-level in-place functions (`torch.sin_(x)`, `torch.relu_(x)`,
`torch.zero_(x)`, ...): each calls the Tensor method of the same name on its first argument
and returns it. Only the names whose method gpu_tensor has are defined
(tests/test_public_names.py checks each is a Tensor method)."""

from __future__ import annotations

# torch 2.13's in-place functions that are also Tensor methods here (dir(torch), names
# ending in _); conj_physical_ is torch's too, but Tensor has no conj_physical_ yet
__all__ = [
    "abs_",
    "acos_",
    "acosh_",
    "addmv_",
    "arccos_",
    "arccosh_",
    "arcsin_",
    "arcsinh_",
    "arctan_",
    "arctanh_",
    "as_strided_",
    "asin_",
    "asinh_",
    "atan_",
    "atanh_",
    "ceil_",
    "clamp_",
    "clamp_max_",
    "clamp_min_",
    "clip_",
    "cos_",
    "cosh_",
    "deg2rad_",
    "detach_",
    "erf_",
    "erfc_",
    "exp2_",
    "exp_",
    "expm1_",
    "fill_",
    "fix_",
    "floor_",
    "frac_",
    "gcd_",
    "i0_",
    "index_put_",
    "lcm_",
    "ldexp_",
    "log10_",
    "log1p_",
    "log2_",
    "log_",
    "logit_",
    "nan_to_num_",
    "neg_",
    "negative_",
    "rad2deg_",
    "reciprocal_",
    "relu_",
    "resize_as_",
    "round_",
    "rsqrt_",
    "sigmoid_",
    "sin_",
    "sinc_",
    "sinh_",
    "sqrt_",
    "square_",
    "tan_",
    "tanh_",
    "trunc_",
    "xlogy_",
    "zero_",
]


def _function(name: str):
    def fn(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{name}(input, ...): input.{name}(...), in place; returns input."
    return fn


abs_ = _function("abs_")
acos_ = _function("acos_")
acosh_ = _function("acosh_")
addmv_ = _function("addmv_")
arccos_ = _function("arccos_")
arccosh_ = _function("arccosh_")
arcsin_ = _function("arcsin_")
arcsinh_ = _function("arcsinh_")
arctan_ = _function("arctan_")
arctanh_ = _function("arctanh_")
as_strided_ = _function("as_strided_")
asin_ = _function("asin_")
asinh_ = _function("asinh_")
atan_ = _function("atan_")
atanh_ = _function("atanh_")
ceil_ = _function("ceil_")
clamp_ = _function("clamp_")
clamp_max_ = _function("clamp_max_")
clamp_min_ = _function("clamp_min_")
clip_ = _function("clip_")
cos_ = _function("cos_")
cosh_ = _function("cosh_")
deg2rad_ = _function("deg2rad_")
detach_ = _function("detach_")
erf_ = _function("erf_")
erfc_ = _function("erfc_")
exp2_ = _function("exp2_")
exp_ = _function("exp_")
expm1_ = _function("expm1_")
fill_ = _function("fill_")
fix_ = _function("fix_")
floor_ = _function("floor_")
frac_ = _function("frac_")
gcd_ = _function("gcd_")
i0_ = _function("i0_")
index_put_ = _function("index_put_")
lcm_ = _function("lcm_")
ldexp_ = _function("ldexp_")
log10_ = _function("log10_")
log1p_ = _function("log1p_")
log2_ = _function("log2_")
log_ = _function("log_")
logit_ = _function("logit_")
nan_to_num_ = _function("nan_to_num_")
neg_ = _function("neg_")
negative_ = _function("negative_")
rad2deg_ = _function("rad2deg_")
reciprocal_ = _function("reciprocal_")
relu_ = _function("relu_")
resize_as_ = _function("resize_as_")
round_ = _function("round_")
rsqrt_ = _function("rsqrt_")
sigmoid_ = _function("sigmoid_")
sin_ = _function("sin_")
sinc_ = _function("sinc_")
sinh_ = _function("sinh_")
sqrt_ = _function("sqrt_")
square_ = _function("square_")
tan_ = _function("tan_")
tanh_ = _function("tanh_")
trunc_ = _function("trunc_")
xlogy_ = _function("xlogy_")
zero_ = _function("zero_")
