"""gt.return_types: the named tuples of tuple-returning ops print, pickle and construct as
torch.return_types' do (reprs recorded from torch 2.13, `torch.` spelled `gpu_tensor.`), and
the LAPACK factors come back column-major as torch's (svd's U, qr's Q and R, eigh's
eigenvectors), with V row-major."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import gpu_tensor as gt

X = gt.tensor([[3.0, 1.0, 2.0], [0.5, 4.0, -1.0]])


@pytest.mark.parametrize(
    "call,name,fields",
    [
        (lambda: gt.max(X, 0), "max", ("values", "indices")),
        (lambda: X.min(1), "min", ("values", "indices")),
        (lambda: X.sort(), "sort", ("values", "indices")),
        (lambda: X.topk(2), "topk", ("values", "indices")),
        (lambda: X.kthvalue(1), "kthvalue", ("values", "indices")),
        (lambda: X.median(1), "median", ("values", "indices")),
        (lambda: X.mode(1), "mode", ("values", "indices")),
        (lambda: X.nanmedian(1), "nanmedian", ("values", "indices")),
        (lambda: X.cummax(1), "cummax", ("values", "indices")),
        (lambda: gt.aminmax(X), "aminmax", ("min", "max")),
        (lambda: gt.frexp(X), "frexp", ("mantissa", "exponent")),
        (lambda: gt.svd(X), "svd", ("U", "S", "V")),
        (lambda: gt.linalg.svd(X), "linalg_svd", ("U", "S", "Vh")),
        (lambda: gt.linalg.qr(X), "linalg_qr", ("Q", "R")),
        (lambda: gt.linalg.eigh(X @ X.T), "linalg_eigh", ("eigenvalues", "eigenvectors")),
        (lambda: gt.linalg.slogdet(X @ X.T), "linalg_slogdet", ("sign", "logabsdet")),
        (lambda: gt.slogdet(X @ X.T), "slogdet", ("sign", "logabsdet")),
    ],
)
def test_named_tuple_types(call, name, fields):
    r = call()
    assert type(r) is getattr(gt.return_types, name) and isinstance(r, tuple)
    assert r._fields == fields and type(r).__module__ == "gpu_tensor.return_types"
    assert repr(r).startswith(f"gpu_tensor.return_types.{name}(\n{fields[0]}=")
    back = pickle.loads(pickle.dumps(r))
    assert type(back) is type(r)


def test_repr_recorded_from_torch():
    # torch 2.13: repr(torch.sort(torch.tensor([3, 1, 2])))
    assert repr(gt.sort(gt.tensor([3, 1, 2]))) == (
        "gpu_tensor.return_types.sort(\nvalues=tensor([1, 2, 3]),\nindices=tensor([1, 2, 0]))"
    )
    r = gt.return_types.max((gt.tensor(1.0), gt.tensor(2)))  # from one sequence, as torch
    assert repr(r) == "gpu_tensor.return_types.max(\nvalues=tensor(1.),\nindices=tensor(2))"


def test_lapack_layouts_as_torch():
    x = gt.randn(4, 3)
    r = gt.svd(x)  # torch 2.13: U (1, 4), S (1,), V (3, 1)
    assert (r.U.stride(), r.S.stride(), r.V.stride()) == ((1, 4), (1,), (3, 1))
    np.testing.assert_allclose((r.U * r.S) @ r.V.T, x.numpy(), atol=1e-5)
    r = gt.linalg.svd(x)
    assert (r.U.stride(), r.Vh.stride()) == ((1, 4), (1, 3))
    r = gt.linalg.qr(x)
    assert (r.Q.stride(), r.R.stride()) == ((1, 4), (1, 3))
    np.testing.assert_allclose((r.Q @ r.R).numpy(), x.numpy(), atol=1e-5)
    assert gt.linalg.eigh(x.T @ x).eigenvectors.stride() == (1, 3)
    b = gt.svd(gt.randn(2, 4, 3))
    assert (b.U.stride(), b.V.stride()) == ((12, 1, 4), (9, 3, 1))
