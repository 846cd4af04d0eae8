"""Autocast end to end: ops called as users call them (functions, methods, operators,
nn.functional, nn modules) inside `gt.autocast`, through the interception word. Dtypes as
torch 2.13 CPU gives them (recorded from torch where the comment says so); values checked
against numpy at bf16/fp16 tolerance."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
import gpu_tensor.nn.functional as F

BF, H, F32, F64 = gt.bfloat16, gt.float16, gt.float32, gt.float64


def _x(*shape, dtype=F32, device="cpu", seed=0):
    rng = np.random.default_rng(seed)
    return gt.tensor(rng.standard_normal(shape).astype(np.float32), device=device).to(dtype)


def test_cpu_lower_precision_ops():
    a, b = _x(4, 8), _x(8, 3, seed=1)
    w, bias = _x(3, 8, seed=2), _x(3, seed=3)
    with gt.autocast("cpu"):
        assert gt.mm(a, b).dtype is BF
        assert (a @ b).dtype is BF
        assert a.matmul(b).dtype is BF
        assert gt.matmul(_x(3), _x(3)).dtype is BF  # 1-D through matmul (torch: bf16)
        assert F.linear(a, w, bias).dtype is BF  # bias f32 too: linear as one op
        assert gt.nn.Linear(8, 3)(a).dtype is BF
        assert gt.bmm(a[None], b[None]).dtype is BF
        assert gt.addmm(_x(4, 3), a, b).dtype is BF
        assert gt.baddbmm(_x(1, 4, 3), a[None], b[None]).dtype is BF
        assert F.conv2d(_x(1, 1, 5, 5), _x(2, 1, 3, 3)).dtype is BF
        assert gt.dot(_x(3), _x(3)).dtype is F32  # not on cpu's list (torch: f32)
    np.testing.assert_allclose(
        F.linear(a, w, bias).numpy(), _ref_linear(a, w, bias), rtol=1.6e-2, atol=1e-2
    )
    with gt.autocast("cpu"):
        np.testing.assert_allclose(
            F.linear(a, w, bias).float().numpy(), _ref_linear(a, w, bias), rtol=3e-2, atol=3e-2
        )


def _ref_linear(a, w, bias):
    return a.numpy().astype(np.float64) @ w.numpy().T.astype(np.float64) + bias.numpy()


def test_cpu_fp32_and_promote_and_untouched_ops():
    bf = _x(4, 5, dtype=BF)
    target = gt.tensor([0, 1, 2, 3])
    with gt.autocast("cpu"):
        assert F.mse_loss(bf, bf).dtype is F32
        assert F.l1_loss(bf, bf).dtype is F32
        assert F.smooth_l1_loss(bf, bf).dtype is F32
        assert F.cross_entropy(bf, target).dtype is F32
        assert F.nll_loss(bf, target).dtype is F32
        assert F.binary_cross_entropy_with_logits(bf, bf).dtype is F32
        p = gt.full((3,), 0.5, dtype=BF)
        assert F.binary_cross_entropy(p, p).dtype is F32  # cpu: fp32, not banned (torch)
        assert gt.cat([bf, _x(4, 5)]).dtype is F32
        assert gt.stack([bf, bf]).dtype is BF
        assert gt.exp(_x(3)).dtype is F32 and F.softmax(_x(3), 0).dtype is F32
        assert gt.exp(bf).dtype is BF and bf.sum().dtype is BF  # cpu: not on its lists
        assert F.layer_norm(bf, (5,)).dtype is BF
        assert (bf + _x(4, 5)).dtype is F32  # natural promotion


def test_eligibility():
    a = _x(3, 3)
    with gt.autocast("cpu"):
        assert gt.mm(a.double(), a.double()).dtype is F64
        i = gt.ones(3, 3, dtype=gt.int64)
        assert gt.mm(i, i).dtype is gt.int64
        assert gt.mm(a.half(), a.half()).dtype is BF  # fp16 is cast under bf16 (torch)
        out = gt.empty(3, 3)
        assert gt.mm(a, a, out=out).dtype is F32  # out= calls are not autocast
        c = _x(3, 3)
        c.addmm_(a, a)  # in-place ops are not autocast
        assert c.dtype is F32
        assert F.softmax(a, 0, dtype=F64).dtype is F64  # an explicit dtype wins
        assert gt.zeros(2).dtype is F32 and gt.randn(2).dtype is F32  # factories
    with gt.autocast("cpu", dtype=H):
        assert gt.mm(a, a).dtype is H


def test_weight_cast_cache_end_to_end():
    x = _x(2, 4)
    w = _x(4, 4, seed=1).requires_grad_()
    with gt.autocast("cpu"):
        outs = [x @ w for _ in range(3)]
        assert gt.amp.state.cache_size() == 1  # w cast once per region
        assert len({id(o.grad_fn.next_functions[1][0]) for o in outs}) == 1
        frozen = _x(4, 4, seed=2)  # requires_grad=False: cast on every use (torch)
        x @ frozen
        assert gt.amp.state.cache_size() == 1
    assert gt.amp.state.cache_size() == 0
    sum(o.float().sum() for o in outs).backward()
    assert w.grad.dtype is F32
    want = 3 * np.repeat(x.numpy().sum(0)[:, None], 4, axis=1)
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1.6e-2)


def test_autograd_through_casts_and_misuse_outside():
    x = _x(3, 4)
    w = _x(4, 2, seed=1).requires_grad_()
    with gt.autocast("cpu"):
        y = x @ w
    assert y.dtype is BF
    y.float().sum().backward()
    assert w.grad.dtype is F32
    np.testing.assert_allclose(
        w.grad.numpy(), np.repeat(x.numpy().sum(0)[:, None], 2, 1), rtol=1.6e-2
    )
    with pytest.raises(RuntimeError):
        y.detach() @ _x(2, 2)  # bf16 @ f32 outside the region: torch raises too


def test_cuda_policies(device):
    if device != "cuda":
        pytest.skip("the cuda lists")
    f = _x(4, 4, device="cuda")
    h = f.half()
    with gt.autocast("cuda"):
        assert gt.mm(f, f).dtype is H and F.linear(f, f).dtype is H
        for r in (
            gt.exp(h),
            gt.log(h.abs() + 1),
            F.softmax(h, 0),
            F.log_softmax(h, 0),
            h.sum(),
            gt.cumsum(h, 0),
            F.mse_loss(h, h),
            F.l1_loss(h, h),
            F.smooth_l1_loss(h, h),
            F.layer_norm(h, (4,)),
        ):
            assert r.dtype is F32
        assert gt.addcmul(h, h, f).dtype is F32 and gt.addcmul(h, h, h).dtype is H
        assert (h + f).dtype is F32 and gt.relu(h).dtype is H  # not listed: natural
        with pytest.raises(
            RuntimeError,
            match="^torch.nn.functional.binary_cross_entropy "
            "and torch.nn.BCELoss are unsafe to autocast.",
        ):
            F.binary_cross_entropy(gt.sigmoid(h), gt.ones(4, 4, device="cuda"))
    with gt.autocast("cuda", dtype=BF):
        assert gt.mm(f, f).dtype is BF
        np.testing.assert_allclose(
            gt.mm(f, f).float().cpu().numpy(),
            f.cpu().numpy() @ f.cpu().numpy(),
            rtol=3e-2,
            atol=3e-2,
        )


@gt.fuse
def _bias_gelu(x, b):
    return (x + b).gelu()


def test_fused_chain_stores_the_regions_dtype(device):
    x, b = _x(8, 5, device=device), _x(5, device=device, seed=1)
    want = _bias_gelu(x, b)
    with gt.autocast(device if device == "cuda" else "cpu", dtype=BF):
        got = _bias_gelu(x, b)
    assert got.dtype is BF and want.dtype is F32
    # one rounding, on store: within one bf16 ulp of the fp32 result
    np.testing.assert_allclose(got.float().cpu().numpy(), want.cpu().numpy(), rtol=2**-8, atol=1e-6)


def test_torch_parity_dtypes_and_values():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    a = rng.standard_normal((6, 8)).astype(np.float32)
    b = rng.standard_normal((8, 4)).astype(np.float32)
    t = rng.integers(0, 4, 6)
    for dtype in ("bfloat16", "float16"):
        got, want = {}, {}
        for lib, out in ((gt, got), (torch, want)):
            A, B = lib.tensor(a), lib.tensor(b)
            with lib.autocast("cpu", dtype=getattr(lib, dtype)):
                mm = lib.mm(A, B)
                out["mm"] = mm
                out["linear"] = lib.nn.functional.linear(A, B.t())
                out["ce"] = lib.nn.functional.cross_entropy(mm, lib.tensor(t))
                out["mse"] = lib.nn.functional.mse_loss(mm, lib.zeros(6, 4))
                out["cat"] = lib.cat([mm, lib.ones(1, 4)])
        for k in want:
            assert str(got[k].dtype).split(".")[-1] == str(want[k].dtype).split(".")[-1], k
            np.testing.assert_allclose(
                got[k].float().numpy(), want[k].float().numpy(), rtol=1.6e-2, atol=1e-2, err_msg=k
            )
