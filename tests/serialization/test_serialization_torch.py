"""gt.save -> torch.load and torch.save -> gt.load, against torch itself.

Skips when torch is not installed (the project's own venv has none); run it with a venv that
has torch: `PYTHONPATH=. <venv>/bin/python -m pytest tests/serialization -q`.
"""

from __future__ import annotations

import collections
import io

import numpy as np
import pytest

import gpu_tensor as gt

torch = pytest.importorskip(
    "torch", reason="torch is not installed: the save/load parity tests need it"
)

NAMES = (
    "float32 float64 float16 bfloat16 int8 int16 int32 int64 uint8 uint16 uint32 uint64 bool "
    "complex64 complex128"
).split()
VALUES = [0, 1, 3, 5, 7, 2, 4, 6, 9, 8, 1, 0]


def _tensors(lib):
    """Every dtype's 3x4 tensor, a strided view of it and its transpose, made by `lib`."""
    out = collections.OrderedDict()
    for name in NAMES:
        base = lib.tensor(VALUES).to(getattr(lib, name)).reshape(3, 4)
        out[name] = base
        out[name + "_view"] = base[1:, ::2]
        out[name + "_t"] = base.t()
    return out


def _same(g, t):
    assert str(g.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(g.shape) == tuple(t.shape) and g.stride() == t.stride()
    assert g.storage_offset() == t.storage_offset()
    tv = t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
    gv = g.to(gt.float32).numpy() if g.dtype is gt.bfloat16 else g.numpy()
    np.testing.assert_array_equal(gv, tv)


def test_torch_reads_what_gt_saves():
    buf = io.BytesIO()
    gt.save(_tensors(gt), buf)
    buf.seek(0)
    back = torch.load(buf)  # weights_only=True: torch's own allow-list accepts the file
    for name, g in _tensors(gt).items():
        _same(g, back[name])
    for name in NAMES:
        assert (
            back[name + "_view"].untyped_storage().data_ptr()
            == back[name].untyped_storage().data_ptr()
        )


def test_gt_reads_what_torch_saves():
    buf = io.BytesIO()
    torch.save(_tensors(torch), buf)
    buf.seek(0)
    back = gt.load(buf)
    for name, t in _tensors(torch).items():
        _same(back[name], t)
    for name in NAMES:
        assert back[name + "_t"].untyped_storage() is back[name].untyped_storage()


def test_a_model_state_dict_moves_both_ways(tmp_path):
    torch.manual_seed(0)
    tm = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3),
        torch.nn.BatchNorm2d(4),
        torch.nn.Flatten(),
        torch.nn.Linear(4 * 6 * 6, 2),
    )
    torch.save(tm.state_dict(), tmp_path / "torch.pt")
    gm = gt.nn.Sequential(
        gt.nn.Conv2d(3, 4, 3), gt.nn.BatchNorm2d(4), gt.nn.Flatten(), gt.nn.Linear(4 * 6 * 6, 2)
    )
    gm.load_state_dict(gt.load(tmp_path / "torch.pt"))
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
    tm.eval()
    gm.eval()
    with torch.no_grad():
        expected = tm(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(
        gm(gt.from_numpy(x)).detach().numpy(), expected, rtol=1e-5, atol=1e-5
    )
    gt.save(gm.state_dict(), tmp_path / "gt.pt")
    again = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3),
        torch.nn.BatchNorm2d(4),
        torch.nn.Flatten(),
        torch.nn.Linear(4 * 6 * 6, 2),
    )
    again.load_state_dict(torch.load(tmp_path / "gt.pt"))
    again.eval()
    with torch.no_grad():
        np.testing.assert_allclose(again(torch.from_numpy(x)).numpy(), expected, rtol=1e-6)


def test_parameters_dtypes_and_sizes_cross_over():
    buf = io.BytesIO()
    gt.save(
        {
            "p": gt.nn.Parameter(gt.ones(2)),
            "dt": gt.bfloat16,
            "size": gt.Size([2, 3]),
            "dev": gt.device("cpu"),
            "rg": gt.ones(1).requires_grad_(),
        },
        buf,
    )
    buf.seek(0)
    back = torch.load(buf)
    assert isinstance(back["p"], torch.nn.Parameter) and back["p"].requires_grad
    assert back["dt"] is torch.bfloat16 and back["size"] == torch.Size([2, 3])
    assert back["dev"] == torch.device("cpu") and back["rg"].requires_grad
