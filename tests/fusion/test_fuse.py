"""`gt.fuse` on every available device (cpu; cuda: emulated here, real on a GPU machine)."""

from __future__ import annotations

import numpy as np
import pytest
from fusion_tolerance import assert_close

from gpu_tensor import dtype as gtd
from gpu_tensor.creation import from_numpy
from gpu_tensor.fusion import FusionError, fuse
from gpu_tensor.fusion.npmath import gelu
from gpu_tensor.testing import requires_real_cuda

RNG = np.random.default_rng(60)


def _t(a, device):
    return from_numpy(np.ascontiguousarray(a)).to(device)


def _np(t):
    return t.cpu().numpy()


@fuse
def bias_gelu(x, a, b):
    return (a * x + b).gelu()


@fuse
def normalise(x, mean, std, gamma, beta):
    return ((x - mean) / std * gamma + beta).half()


def test_chain_matches_numpy(device):
    x = RNG.standard_normal((8, 33)).astype(np.float16)
    y = bias_gelu(_t(x, device), 1.5, -0.5)
    assert y.device.type == device.split(":")[0] and y.dtype == gtd.float16
    assert_close(_np(y), gelu(1.5 * x.astype(np.float32) - 0.5).astype(np.float16))


def test_broadcast_rows_and_columns_fp16_in_fp32_compute_fp16_out(device):
    x = RNG.standard_normal((6, 16)).astype(np.float16)
    mean = x.astype(np.float32).mean(1, keepdims=True)
    std = x.astype(np.float32).std(1, keepdims=True) + 1
    gamma, beta = (
        RNG.standard_normal(16).astype(np.float32),
        RNG.standard_normal(16).astype(np.float32),
    )
    y = normalise(*(_t(a, device) for a in (x, mean, std, gamma, beta)))
    expected = ((x.astype(np.float32) - mean) / std * gamma + beta).astype(np.float16)
    assert y.dtype == gtd.float16 and tuple(y.shape) == (6, 16)
    assert_close(_np(y), expected)


def test_transposed_operand_and_out(device):
    base = RNG.standard_normal((16, 8)).astype(np.float32)
    xt = _t(base, device).transpose(0, 1)
    out = _t(np.zeros((8, 16), np.float64), device)
    res = bias_gelu(xt, 2.0, 0.25, out=out)
    assert res is out and out.dtype == gtd.float64
    assert_close(_np(out), gelu(2.0 * base.T.astype(np.float32) + 0.25), np.float32)


def test_several_outputs_and_mixed_dtypes(device):
    @fuse
    def stats(i, h):
        s = i * h
        return s.relu(), s > 1, i % 3

    i = RNG.integers(-5, 5, 40).astype(np.int32)
    h = RNG.standard_normal(40).astype(np.float16)
    r, m, k = stats(_t(i, device), _t(h, device))
    assert (r.dtype, m.dtype, k.dtype) == (gtd.float16, gtd.bool, gtd.int32)
    s = i.astype(np.float32) * h.astype(np.float32)
    assert_close(_np(r), np.maximum(s, 0).astype(np.float16))
    assert _np(m).tolist() == (s > 1).tolist()
    assert _np(k).tolist() == [int(v) % 3 for v in i]


def test_traced_once_per_dtype_ndim_layout(device):
    calls = []

    @fuse
    def f(x):
        calls.append(1)
        return x * 2

    f(_t(np.ones(4, np.float32), device))
    f(_t(np.zeros(9, np.float32), device))
    assert len(calls) == 1  # same dtype/ndim/layout: no retrace
    f(_t(np.ones(4, np.float64), device))
    f(_t(np.ones((2, 3), np.float32), device).transpose(0, 1))
    assert len(calls) == 3


def test_errors_are_clear(device):
    x = _t(np.ones(4, np.float32), device)
    with pytest.raises(FusionError, match="Tensor.cumsum"):
        fuse(lambda a: a.cumsum(0))(x)
    with pytest.raises(ValueError, match="out= tensor has shape"):
        bias_gelu(x, 1.0, 0.0, out=_t(np.ones(5, np.float32), device))
    with pytest.raises(TypeError, match="can't be cast"):
        bias_gelu(x, 1.0, 0.0, out=_t(np.ones(4, np.int32), device))
    with pytest.raises(FusionError, match="numpy arrays cannot be passed"):
        bias_gelu(np.ones(4), 1.0, 0.0)
    with pytest.raises(ValueError, match="cannot be broadcast"):
        fuse(lambda a, b: a + b)(x, _t(np.ones(3, np.float32), device))


def test_device_mismatch_names_both(device):
    if device == "cpu":
        pytest.skip("needs a second device")
    with pytest.raises(RuntimeError, match="same device"):
        fuse(lambda a, b: a + b)(
            _t(np.ones(2, np.float32), device), _t(np.ones(2, np.float32), "cpu")
        )


@pytest.mark.cuda
@requires_real_cuda
def test_real_cuda_fused_kernel_matches_numpy_reference():
    x = RNG.standard_normal((256, 1024)).astype(np.float16)
    gamma = RNG.standard_normal(1024).astype(np.float32)
    y = bias_gelu(_t(x, "cuda"), 1.25, 0.5)
    assert_close(_np(y), gelu(1.25 * x.astype(np.float32) + 0.5).astype(np.float16))
    z = fuse(lambda a, g: (a * g).sigmoid())(
        _t(x, "cuda").transpose(0, 1)[:, :256], _t(gamma[:256], "cuda")
    )
    ref = 1 / (1 + np.exp(-(x.T[:, :256].astype(np.float32) * gamma[:256])))
    assert_close(_np(z), ref.astype(np.float32), np.float32)


def test_outputs_never_alias_inputs_or_each_other(device):
    x = _t(np.arange(6, dtype=np.float32), device)

    def fn(v):
        y = v * 2
        return v, y, y

    a, b, c = fuse(fn)(x)
    a._data[0] = 100
    b._data[1] = 100
    assert _np(x)[0] == 0 and _np(c)[1] == 2  # every output is its own memory


def test_module_functions_trace_like_methods(device):
    """gt.exp(x), gt.where(...), gt.maximum(a, b) inside @gt.fuse record the op on the
    traced values and give the same result as running them eagerly."""
    import gpu_tensor as gt

    def chain(a, b):
        return (
            gt.gelu(a * b + 1.0)
            + gt.exp(gt.neg(a))
            + gt.where(a > 0.5, gt.sigmoid(b), gt.clamp(b, min=-0.25))
            + gt.maximum(a, b)
            - gt.minimum(a, b)
        )

    a = _t(RNG.standard_normal((5, 7)).astype(np.float32), device)
    b = _t(RNG.standard_normal((5, 7)).astype(np.float32), device)
    assert_close(_np(fuse(chain)(a, b)), _np(chain(a, b)))
