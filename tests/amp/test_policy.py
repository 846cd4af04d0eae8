"""The autocast op lists (gpu_tensor/amp/policy.py) against torch 2.13's registrations, and
the handler's per-policy casts (gpu_tensor/amp/cast.py) called directly."""

from __future__ import annotations

import pytest

import gpu_tensor as gt
from gpu_tensor.amp import cast, policy

# distinct op names (overloads folded) registered for AutocastCUDA / AutocastCPU in torch
# 2.13 (torch._C._dispatch_get_registrations_for_dispatch_key); recorded from torch
TORCH_COUNTS = {"cuda": 111, "cpu": 115}


def test_table_sizes_match_torchs_registrations():
    # cuda has one entry torch has not: cross_entropy as one op (torch decomposes it into
    # log_softmax and nll_loss, both fp32, so one fp32 op gives the same dtype)
    assert len(policy.POLICIES["cuda"]) == TORCH_COUNTS["cuda"] + 1
    assert len(policy.POLICIES["cpu"]) == TORCH_COUNTS["cpu"]


@pytest.mark.parametrize("device_type,key", [("cuda", "AutocastCUDA"), ("cpu", "AutocastCPU")])
def test_tables_are_torchs_registrations(device_type, key):
    torch = pytest.importorskip("torch")
    names = {
        n.split("::")[1].split(".")[0]
        for n in torch._C._dispatch_get_registrations_for_dispatch_key(key)
    }
    ours = set(policy.POLICIES[device_type]) - (
        {"cross_entropy_loss"} if device_type == "cuda" else set()
    )
    assert ours == names


@pytest.mark.parametrize(
    "name,cuda,cpu",
    [
        ("mm", policy.LOWER, policy.LOWER),
        ("linear", policy.LOWER, policy.LOWER),
        ("conv2d", policy.LOWER, policy.LOWER),
        ("addmv", policy.LOWER, None),
        ("exp", policy.FP32, None),
        ("layer_norm", policy.FP32, None),
        ("rms_norm", policy.FP32, None),
        ("logsumexp", policy.FP32, None),
        ("softmax", policy.FP32_OPT_DTYPE, None),
        ("sum", policy.FP32_OPT_DTYPE, None),
        ("norm", policy.FP32_APPEND_DTYPE, None),
        ("vdot", policy.PROMOTE, None),
        ("cat", None, policy.PROMOTE),
        ("stack", None, policy.PROMOTE),
        ("binary_cross_entropy", policy.BANNED, policy.FP32),
        ("cross_entropy", policy.FP32, policy.FP32),
        ("mse_loss", policy.FP32, policy.FP32),
        ("add", None, None),
        ("relu", None, None),
        ("gelu", None, None),
        ("linalg.vector_norm", policy.FP32_OPT_DTYPE, None),
        ("__matmul__", policy.LOWER, policy.LOWER),
    ],
)
def test_policy_of_op(name, cuda, cpu):
    assert policy.policy("cuda", name) == cuda
    assert policy.policy("cpu", name) == cpu


def _run(name, fn, *args, **kwargs):
    return cast.handle(name, fn, args, kwargs)


def test_handler_casts_per_policy():
    f32 = gt.ones(2, 2)
    half = gt.ones(2, 2, dtype=gt.float16)
    with gt.autocast("cpu", dtype=gt.bfloat16):
        assert _run("mm", gt.mm, f32, f32).dtype is gt.bfloat16
        assert _run("mm", gt.mm, half, half).dtype is gt.bfloat16  # fp16 is eligible too
        assert _run("mm", gt.mm, f32.double(), f32.double()).dtype is gt.float64
        i = gt.ones(2, 2, dtype=gt.int64)
        assert _run("mm", gt.mm, i, i).dtype is gt.int64
        assert _run("mm", gt.mm, f32, f32, out=gt.empty(2, 2)).dtype is gt.float32  # out=
        assert _run("exp", gt.exp, f32).dtype is gt.float32  # not on cpu's lists
        bf = gt.ones(2, dtype=gt.bfloat16)
        assert _run("cat", gt.cat, [bf, gt.ones(2)]).dtype is gt.float32
        assert _run("cat", gt.cat, [bf, bf]).dtype is gt.bfloat16
        with pytest.raises(
            RuntimeError, match="Unexpected floating ScalarType in at::autocast::prioritize"
        ):
            _run("cat", gt.cat, [gt.ones(2, dtype=gt.float16), bf])
        assert _run("mse_loss", gt.nn.functional.mse_loss, bf, bf).dtype is gt.float32


def test_handler_cuda_policies(device):
    if device != "cuda":
        pytest.skip("the cuda lists, on a cuda tensor")
    h = gt.ones(3, 3, dtype=gt.float16, device="cuda")
    f = gt.ones(3, 3, device="cuda")
    with gt.autocast("cuda"):
        assert _run("mm", gt.mm, f, f).dtype is gt.float16
        assert _run("exp", gt.exp, h).dtype is gt.float32
        assert _run("softmax", gt.softmax, h, 0).dtype is gt.float32
        assert _run("softmax", gt.softmax, h, 0, dtype=gt.float64).dtype is gt.float64
        assert _run("sum", gt.sum, h).dtype is gt.float32
        assert _run("addcmul", gt.addcmul, h, h, f).dtype is gt.float32
        assert _run("addcmul", gt.addcmul, h, h, h).dtype is gt.float16
        assert _run("add", gt.add, h, f).dtype is gt.float32  # natural promotion
        with pytest.raises(
            RuntimeError,
            match=r"^torch.nn.functional.binary_cross_entropy "
            r"and torch.nn.BCELoss are unsafe to autocast.\nMany models",
        ):
            _run("binary_cross_entropy", gt.nn.functional.binary_cross_entropy, h, h)
        with gt.autocast("cuda", enabled=False):
            assert _run("mm", gt.mm, f, f).dtype is gt.float32


def test_weight_cast_cache():
    w = gt.ones(2, 2, requires_grad=True)
    x = gt.ones(2, 2)
    with gt.autocast("cpu"):
        a = _run("mm", gt.mm, x, w)
        b = _run("mm", gt.mm, x, w)
        assert gt.amp.state.cache_size() == 1  # w once (x is not a leaf that requires grad)
        assert a.grad_fn.next_functions[1][0] is b.grad_fn.next_functions[1][0]
        _run("mm", gt.mm, x, w.t())  # a view: not cached
        assert gt.amp.state.cache_size() == 1
    assert gt.amp.state.cache_size() == 0  # emptied when the outermost region exits
    with gt.autocast("cpu", cache_enabled=False):
        _run("mm", gt.mm, x, w)
        assert gt.amp.state.cache_size() == 0
    (a.float().sum() + b.float().sum()).backward()
    assert w.grad.dtype is gt.float32 and w.grad.tolist() == [[4.0, 4.0], [4.0, 4.0]]
