"""Autocast state: the context manager and decorator, nesting, threads, torch's getters and
setters, the deprecated aliases and torch's warnings/errors (texts from torch 2.13)."""

from __future__ import annotations

import threading
import warnings

import pytest

import gpu_tensor as gt
from gpu_tensor import _modes


def test_defaults_and_nesting_restore():
    assert gt.get_autocast_dtype("cuda") is gt.float16
    assert gt.get_autocast_dtype("cpu") is gt.bfloat16
    assert not gt.is_autocast_enabled("cpu") and not gt.is_autocast_enabled()
    with gt.autocast("cpu"):
        assert gt.is_autocast_enabled("cpu") and not gt.is_autocast_enabled("cuda")
        with gt.autocast("cpu", dtype=gt.float16):
            assert gt.get_autocast_dtype("cpu") is gt.float16
            with gt.autocast("cpu", enabled=False):
                assert not gt.is_autocast_enabled("cpu")
            assert gt.is_autocast_enabled("cpu")
        assert gt.get_autocast_dtype("cpu") is gt.bfloat16
    assert not gt.is_autocast_enabled("cpu")


def test_modes_word_bit_follows_the_state():
    assert not _modes.live() & _modes.AUTOCAST
    with gt.autocast("cpu"):
        assert _modes.live() & _modes.AUTOCAST
        with gt.autocast("cpu", enabled=False):
            assert not _modes.live() & _modes.AUTOCAST  # nothing enabled: ops pay nothing
        assert _modes.live() & _modes.AUTOCAST
    assert not _modes.live() & _modes.AUTOCAST


def test_decorator_and_threads():
    seen = {}

    @gt.autocast("cpu", dtype=gt.float16)
    def f():
        seen["inside"] = (gt.is_autocast_enabled("cpu"), gt.get_autocast_dtype("cpu"))

        def other():
            seen["thread"] = gt.is_autocast_enabled("cpu")

        t = threading.Thread(target=other)
        t.start()
        t.join()
        return 3

    assert f() == 3 and f.__name__ == "f"
    assert seen == {"inside": (True, gt.float16), "thread": False}  # thread-local, as torch
    assert not gt.is_autocast_enabled("cpu")
    with pytest.raises(
        TypeError,
        match=r"autocast\(\)\(func\) requires a callable, but got "
        "int. Did you mean to use autocast as a context manager?",
    ):
        gt.autocast("cpu")(3)


def test_bad_arguments_raise_or_warn_like_torch():
    with pytest.raises(ValueError, match="^Expected `device_type` of type `str`, got: `<class"):
        gt.autocast(gt.device("cpu"))
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'xla'"):
        gt.autocast("xla")
    with pytest.warns(
        UserWarning,
        match=r"^In CPU autocast, but the target dtype is not "
        r"supported. Disabling autocast.\nCPU Autocast only supports dtypes of "
        r"torch.bfloat16, torch.float16 currently.$",
    ):
        ctx = gt.autocast("cpu", dtype=gt.float32)
    with ctx:
        assert not gt.is_autocast_enabled("cpu")


def test_setters_cache_switch_and_legacy_names():
    gt.set_autocast_enabled("cpu", True)
    try:
        assert gt.is_autocast_enabled("cpu") and _modes.live() & _modes.AUTOCAST
    finally:
        gt.set_autocast_enabled("cpu", False)
    assert not _modes.live() & _modes.AUTOCAST
    gt.set_autocast_dtype("cpu", gt.float16)
    assert gt.get_autocast_dtype("cpu") is gt.float16
    gt.set_autocast_dtype("cpu", gt.bfloat16)
    assert gt.is_autocast_cache_enabled()
    with gt.autocast("cpu", cache_enabled=False):
        assert not gt.is_autocast_cache_enabled()
    assert gt.is_autocast_cache_enabled()
    with pytest.warns(
        DeprecationWarning,
        match=r"^torch.get_autocast_gpu_dtype\(\) is "
        r"deprecated. Please use torch.get_autocast_dtype\('cuda'\) instead.$",
    ):
        assert gt.get_autocast_gpu_dtype() is gt.float16
    with pytest.warns(DeprecationWarning, match=r"set_autocast_cpu_enabled\(enabled\) is "):
        gt.set_autocast_cpu_enabled(False)
    assert gt.amp.is_autocast_available("cuda") and not gt.amp.is_autocast_available("xla")


def test_deprecated_autocast_aliases():
    with pytest.warns(
        FutureWarning,
        match=r"^`torch.cpu.amp.autocast\(args...\)` is "
        r"deprecated. Please use `torch.amp.autocast\('cpu', args...\)` "
        r"instead.$",
    ):
        ctx = gt.cpu.amp.autocast()
    with ctx:
        assert gt.is_autocast_enabled("cpu") and gt.get_autocast_dtype("cpu") is gt.bfloat16
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (no cuda here: disabled)
        with pytest.warns(
            FutureWarning,
            match=r"^`torch.cuda.amp.autocast\(args...\)` is "
            r"deprecated. Please use `torch.amp.autocast\('cuda', args...\)` ",
        ):
            ctx = gt.cuda.amp.autocast()
    assert isinstance(ctx, gt.amp.autocast) and ctx.fast_dtype is gt.float16
    with pytest.warns(
        FutureWarning,
        match=r"^`torch.cuda.amp.custom_fwd\(args...\)` is "
        r"deprecated. Please use `torch.amp.custom_fwd\(args..., "
        r"device_type='cuda'\)` instead.$",
    ):
        gt.cuda.amp.custom_fwd(lambda ctx: ctx)


class _Ctx:  # what custom_fwd/custom_bwd see as an autograd.Function's ctx
    pass


def test_custom_fwd_bwd():
    got = {}

    @gt.amp.custom_fwd(device_type="cpu", cast_inputs=gt.float32)
    def fwd(ctx, x, n, d, items):
        got["fwd"] = (x.dtype, n.dtype, d.dtype, items[0].dtype, gt.is_autocast_enabled("cpu"))
        return x

    @gt.amp.custom_bwd(device_type="cpu")
    def bwd(ctx):
        got["bwd"] = (gt.is_autocast_enabled("cpu"), gt.get_autocast_dtype("cpu"))

    bf = gt.ones(2, dtype=gt.bfloat16)
    args = (bf, gt.ones(2, dtype=gt.int64), gt.ones(2, dtype=gt.float64), [bf])
    ctx = _Ctx()
    with gt.autocast("cpu", dtype=gt.float16):
        fwd(ctx, *args)
    assert got["fwd"] == (gt.float32, gt.int64, gt.float64, gt.float32, False)
    assert ctx._dtype is gt.float16 and ctx._fwd_used_autocast is False
    fwd(_Ctx(), *args)  # outside autocast: a no-op
    assert got["fwd"][0] is gt.bfloat16

    @gt.amp.custom_fwd(device_type="cpu")
    def fwd2(ctx):
        return None

    ctx = _Ctx()
    with gt.autocast("cpu"):
        fwd2(ctx)
    bwd(ctx)  # the backward re-enters the forward's state: bf16 autocast on
    assert got["bwd"] == (True, gt.bfloat16)
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        gt.amp.custom_fwd(device_type=gt.device("cpu"))


def test_bf16_supported_wherever_cuda_is():
    assert gt.cuda.is_bf16_supported() == gt.cuda.is_available()
