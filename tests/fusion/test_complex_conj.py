"""conj and conj_physical are rows of the op table (issue 23): on cuda one generated kernel
(the imaginary part negated, no cupy routine), inside `@gt.fuse` a traced op, and their
derivative (the gradient conjugated) lives in the row. A real tensor is returned itself by
both, as torch 2.13 does. Expected values: numpy's np.conjugate, bit for bit (negating a
part is exact, so every device gives numpy's bits, nan payloads and zero signs included).
"""

from __future__ import annotations

import numpy as np
import pytest
from fusion_sim_counts import one_warm_launch

import gpu_tensor as gt
from gpu_tensor.fusion.optable import OPS

_INF, _NAN = float("inf"), float("nan")
_PARTS = [0.0, -0.0, 1.0, -2.5, 0.1, 3e-39, 5e-324, 1e38, 1e300, _INF, -_INF, _NAN]
_GRID = np.array([complex(a, b) for a in _PARTS for b in _PARTS])
_DTYPES = [(gt.complex64, np.complex64), (gt.complex128, np.complex128)]
_FNS = {
    "conj": gt.conj,
    "conj_physical": gt.conj_physical,
    "Tensor.conj": lambda t: t.conj(),
    "Tensor.conj_physical": lambda t: t.conj_physical(),
}


def _grid(npdt):
    with np.errstate(over="ignore"):  # 1e300 becomes inf, 5e-324 zero in complex64
        return _GRID.astype(npdt)


def _bits(a) -> np.ndarray:
    a = np.ascontiguousarray(a)
    real = np.float32 if a.dtype == np.complex64 else np.float64
    return a.view(real).view(np.uint32 if real is np.float32 else np.uint64)


def _one_nan(a):
    parts = np.array(a).view(np.float32 if a.dtype == np.complex64 else np.float64)
    parts[np.isnan(parts)] = np.nan
    return parts.view(a.dtype)


@pytest.mark.parametrize("name", list(_FNS))
@pytest.mark.parametrize(("dt", "npdt"), _DTYPES)
def test_values_are_numpys_bits(device, name, dt, npdt):
    z = _grid(npdt)
    r = _FNS[name](gt.tensor(z, device=device))
    assert r.dtype is dt
    np.testing.assert_array_equal(_bits(r.cpu().numpy()), _bits(np.conjugate(z)))


def test_a_copy_and_non_contiguous(device):
    z = gt.tensor(_grid(np.complex64).reshape(12, 12), device=device)
    r = z.t().conj_physical()
    assert r.data_ptr() != z.data_ptr()
    np.testing.assert_array_equal(
        _bits(r.cpu().numpy()), _bits(np.conjugate(_grid(np.complex64).reshape(12, 12).T))
    )
    z.conj()[0, 0] = 5  # a copy (no lazy conjugate view here): z is unchanged
    assert z[0, 0].item() == 0j


@pytest.mark.parametrize("dt", [gt.float32, gt.float16, gt.int64, gt.bool])
def test_a_real_tensor_is_returned_itself(device, dt):
    """torch 2.13: x.conj() is x and conj_physical(x) is x for a non-complex x."""
    x = gt.ones(3, dtype=dt, device=device)
    assert x.conj() is x and gt.conj(x) is x
    assert x.conj_physical() is x and gt.conj_physical(x) is x


def test_out(device):
    z = _grid(np.complex128)
    out = gt.empty(z.shape, dtype=gt.complex128, device=device)
    r = gt.conj_physical(gt.tensor(z, device=device), out=out)
    assert r is out
    np.testing.assert_array_equal(_bits(out.cpu().numpy()), _bits(np.conjugate(z)))


# torch 2.13.0 (recorded, not computed here): z = [1+2j, 3-1j, -0.5+0j], w = [2+1j, 1-1j,
# 1j] (complex64); the loss `(z.conj() + w).abs().sum()` gives z.grad below (conj_physical
# the same), and `(z.conj() * w).real.sum()` gives w itself
_Z = [1 + 2j, 3 - 1j, -0.5 + 0j]
_W = [2 + 1j, 1 - 1j, 1j]
_TORCH_ABS_GRAD = [
    0.9486832618713379 + 0.3162277638912201j,
    1 - 0j,
    -0.4472135901451111 - 0.8944271802902222j,
]


@pytest.mark.parametrize("name", ["conj", "conj_physical"])
def test_gradient_is_torchs(device, name):
    z = gt.tensor(_Z, dtype=gt.complex64, device=device, requires_grad=True)
    w = gt.tensor(_W, dtype=gt.complex64, device=device)
    (getattr(z, name)() + w).abs().sum().backward()
    assert z.grad.dtype is gt.complex64
    np.testing.assert_allclose(z.grad.cpu().numpy(), _TORCH_ABS_GRAD, rtol=1e-6)
    z.grad = None
    (getattr(gt, name)(z) * w).real.sum().backward()
    np.testing.assert_array_equal(z.grad.cpu().numpy(), np.array(_W, np.complex64))
    node = getattr(gt, name)(z).grad_fn
    assert (
        type(node).__name__
        == {"conj": "ConjBackward0", "conj_physical": "ConjPhysicalBackward0"}[name]
    )


def test_row_derivative_conjugates():
    g = gt.tensor([1 + 2j, -3 - 0.5j])
    for key in ("conj", "conj_physical"):
        (dz,) = OPS[key].grad(g, None, g)
        assert dz.tolist() == [1 - 2j, -3 + 0.5j]


def test_fused_is_eager(device):
    z = gt.tensor(_grid(np.complex64), device=device)
    w = gt.tensor(_grid(np.complex64)[::-1].copy(), device=device)
    x = gt.tensor(np.linspace(-2, 2, 144, dtype=np.float32), device=device)
    pairs = [  # (fused, eager): numpy's np.conjugate of a traced value is the row conj
        (lambda a, b, r: a.conj() * b + r.conj(), None),
        (lambda a, b, r: gt.conj_physical(a - b) / (r + 1), None),
        (lambda a, b, r: np.conjugate(a) + r, lambda a, b, r: a.conj() + r),
    ]
    for fn, eager in pairs:
        want = (eager or fn)(z, w, x)
        got = gt.fuse(fn)(z, w, x)
        assert got.dtype is want.dtype
        np.testing.assert_array_equal(np.isnan(got.cpu().numpy()), np.isnan(want.cpu().numpy()))
        # (a product's last bits: numpy's FMAs on cpu, the kernel's rounded-once steps on cuda)
        np.testing.assert_allclose(got.cpu().numpy(), want.cpu().numpy(), rtol=1e-6)
    # exact steps only: bit for bit (a nan is any nan: which operand's nan an x86 sum passes
    # on depends on the order the compiler picked)
    fused = gt.fuse(lambda a, r: -a.conj() + r.conj())(z, x)
    want = (-z.conj() + x).cpu().numpy()
    np.testing.assert_array_equal(_bits(_one_nan(fused.cpu().numpy())), _bits(_one_nan(want)))


@pytest.mark.sim
@pytest.mark.parametrize("name", list(_FNS))
@pytest.mark.parametrize(("dt", "npdt"), _DTYPES)
def test_one_launch_on_sim(name, dt, npdt):
    r = one_warm_launch(_FNS[name], gt.tensor(_grid(npdt), device="cuda"))
    np.testing.assert_array_equal(_bits(r.cpu().numpy()), _bits(np.conjugate(_grid(npdt))))


@pytest.mark.parametrize("npdt", [np.complex64, np.complex128, np.float32])
def test_conj_kernels_compile_under_nvrtc(npdt):
    from gpu_tensor.fusion import eager
    from gpu_tensor.kernel import nvrtc

    try:
        nvrtc.nvrtc_version()
    except Exception as exc:  # noqa: BLE001 - any failure to load NVRTC means: skip
        pytest.skip(f"NVRTC is not available here: {exc}")
    for key in ("conj", "conj_physical"):
        for x in (np.zeros(64, npdt), np.zeros((8, 8), npdt).T):
            graph = eager._graph_for(key, [x], {})
            out = np.empty(x.shape, graph.outputs[0].dtype)
            ksrc, _, _ = eager.prepare(graph, graph.outputs, [x], [], [out])
            assert nvrtc.compile_ptx(ksrc.source, "compute_90").count(".entry") == 1
