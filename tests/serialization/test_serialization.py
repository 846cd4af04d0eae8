"""gt.save / gt.load (gpu_tensor/serialization): torch's zip layout, round trips of every
dtype and of views, the weights-only allow-list, map_location, mmap, and a checkpoint
torch itself wrote (tests/data/torch_checkpoint.pt, from tests/data/make_torch_checkpoint.py),
all without torch. test_serialization_torch.py checks both directions against torch."""

from __future__ import annotations

import collections
import fractions
import io
import pickle
import pickletools
import zipfile
from pathlib import Path

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.memory import pinned

TORCH_FILE = Path(__file__).resolve().parents[1] / "data" / "torch_checkpoint.pt"


def _globals(pkl: bytes) -> set:
    return {arg for op, arg, _ in pickletools.genops(pkl) if op.name == "GLOBAL"}


def test_archive_has_torchs_records_aligned(tmp_path):
    path = tmp_path / "model.pt"
    x = gt.arange(12, dtype=gt.float32, device="cpu").reshape(3, 4)
    gt.save({"x": x, "v": x[1:], "h": gt.ones(3, dtype=gt.bfloat16, device="cpu")}, path)
    z = zipfile.ZipFile(path)
    names = z.namelist()
    assert names[0] == "model/data.pkl"  # torch's prefix: the file's stem
    assert set(names) == {
        "model/data.pkl",
        "model/.format_version",
        "model/.storage_alignment",
        "model/byteorder",
        "model/data/0",
        "model/data/1",
        "model/version",
        "model/.data/serialization_id",
    }
    assert z.read("model/byteorder") == b"little" and z.read("model/version") == b"3\n"
    assert z.read("model/.storage_alignment") == b"64"
    assert all(i.compress_type == zipfile.ZIP_STORED for i in z.infolist())
    raw = path.read_bytes()
    for info in z.infolist():
        n, e = np.frombuffer(raw[info.header_offset + 26 : info.header_offset + 30], "<u2")
        assert (info.header_offset + 30 + int(n) + int(e)) % 64 == 0, info.filename
    assert z.read("model/data/0") == np.arange(12, dtype=np.float32).tobytes()  # one storage
    pkl = z.read("model/data.pkl")
    assert pkl[:2] == b"\x80\x02"  # protocol 2, as torch writes
    assert _globals(pkl) == {
        "collections OrderedDict",
        "torch._utils _rebuild_tensor_v2",
        "torch FloatStorage",
        "torch BFloat16Storage",
    }
    pids = [arg for op, arg, _ in pickletools.genops(pkl) if op.name == "BINUNICODE"]
    assert "storage" in pids and "cpu" in pids
    buf = io.BytesIO()
    gt.save(x, buf)
    assert zipfile.ZipFile(buf).namelist()[0] == "archive/data.pkl"


DTYPES = [
    gt.float32,
    gt.float64,
    gt.float16,
    gt.bfloat16,
    gt.int8,
    gt.int16,
    gt.int32,
    gt.int64,
    gt.uint8,
    gt.uint16,
    gt.uint32,
    gt.uint64,
    gt.bool,
    gt.complex64,
    gt.complex128,
]


@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_every_dtype_round_trips(dt, device):
    if (
        dt is gt.uint16
        and device == "cuda"
        and gt.cuda.is_available()
        and not gt.cuda.is_emulated()
    ):
        pytest.skip("the CUDA backend stores bfloat16 as uint16 bits: no uint16 tensors there")
    values = np.array([0, 1, 3, 5, 7, 2], dtype=np.int64)
    t = gt.tensor(values, device=device).to(dt).reshape(2, 3)
    buf = io.BytesIO()
    gt.save({"t": t, "col": t[:, 1]}, buf)
    buf.seek(0)
    back = gt.load(buf)
    assert back["t"].dtype is dt and back["t"].device == t.device
    assert np.array_equal(back["t"].cpu().numpy(), t.cpu().numpy())
    assert back["col"].stride() == (3,) and back["col"].storage_offset() == 1
    uses_v3 = dt in (gt.uint16, gt.uint32, gt.uint64)  # torch's "new" dtypes
    pkl = zipfile.ZipFile(io.BytesIO(buf.getvalue())).read("archive/data.pkl")
    assert ("torch._utils _rebuild_tensor_v3" in _globals(pkl)) == uses_v3


def test_views_share_one_storage_after_loading(device):
    base = gt.arange(24.0, device=device).reshape(4, 6)
    sd = collections.OrderedDict(base=base, t=base.t(), row=base[2], sub=base[1:3, ::2])
    buf = io.BytesIO()
    gt.save(sd, buf)
    buf.seek(0)
    back = gt.load(buf)
    st = back["base"].untyped_storage()
    assert all(back[k].untyped_storage() is st for k in sd)
    assert back["sub"].stride() == (6, 2) and back["sub"].storage_offset() == 6
    back["base"][2, 0] = -1.0  # one storage: the write shows through every view
    assert back["row"][0].item() == -1.0 and back["t"][0, 2].item() == -1.0


def test_state_dict_parameters_and_plain_values_round_trip():
    model = gt.nn.Sequential(gt.nn.Linear(3, 2), gt.nn.ReLU(), gt.nn.Linear(2, 1))
    opt = gt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(gt.ones(4, 3)).sum().backward()
    opt.step()
    p = gt.nn.Parameter(gt.ones(2))
    state = model.state_dict()
    state._metadata = {"": {"version": 1}}  # torch's state_dict carries one; kept by BUILD
    obj = {
        "model": state,
        "opt": opt.state_dict(),
        "p": p,
        "epoch": 3,
        "dt": gt.float16,
        "dev": gt.device("cpu"),
        "size": gt.Size([2, 3]),
        "rg": gt.ones(2).requires_grad_(),
        "misc": [1.5, "s", None, (1, 2), {3}],
    }
    buf = io.BytesIO()
    gt.save(obj, buf)
    buf.seek(0)
    back = gt.load(buf)
    sd = back["model"]
    assert isinstance(sd, collections.OrderedDict) and list(sd) == list(model.state_dict())
    assert sd._metadata == {"": {"version": 1}}
    for k, v in model.state_dict().items():
        assert sd[k].tolist() == v.tolist() and not sd[k].requires_grad
    fresh = gt.nn.Sequential(gt.nn.Linear(3, 2), gt.nn.ReLU(), gt.nn.Linear(2, 1))
    fresh.load_state_dict(sd)
    assert fresh(gt.ones(1, 3)).item() == model(gt.ones(1, 3)).item()
    mom = back["opt"]["state"][0]["momentum_buffer"]
    assert mom.tolist() == opt.state_dict()["state"][0]["momentum_buffer"].tolist()
    assert isinstance(back["p"], gt.nn.Parameter) and back["p"].requires_grad
    assert back["rg"].requires_grad and back["rg"].is_leaf
    assert back["dt"] is gt.float16 and back["dev"] == gt.device("cpu")
    assert type(back["size"]) is gt.Size and back["misc"] == obj["misc"]


def test_a_file_torch_wrote_loads():
    """tests/data/torch_checkpoint.pt was written by torch 2.13 (make_torch_checkpoint.py)."""
    ck = gt.load(TORCH_FILE)
    assert ck["w"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    st = ck["w"].untyped_storage()
    assert ck["row"].untyped_storage() is st and ck["row"].storage_offset() == 3
    assert ck["col"].stride() == (3,) and ck["col"].tolist() == [2.0, 5.0]
    assert ck["t"].stride() == (1, 3) and ck["t"].untyped_storage() is st
    assert ck["bf16"].dtype is gt.bfloat16 and ck["bf16"].tolist() == [1.5, -2.0]
    assert ck["c64"].dtype is gt.complex64 and ck["c64"].tolist() == [1 + 2j]
    assert ck["mask"].tolist() == [True, False, True]
    assert ck["u16"].dtype is gt.uint16 and ck["u16"].tolist() == [7, 65535]
    assert isinstance(ck["param"], gt.nn.Parameter) and ck["param"].requires_grad
    lin = gt.nn.Linear(2, 1)
    lin.load_state_dict(ck["model"])
    assert lin(gt.tensor([[2.0, 1.0]])).item() == 1.5  # 0.25*2 - 0.5*1 + 1.5
    assert ck["step"] == 5 and ck["dtype"] is gt.float16


def test_weights_only_refuses_code_and_runs_nothing(tmp_path):
    marker = tmp_path / "pwned"

    class Hostile:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    buf = io.BytesIO()
    gt.save({"x": Hostile()}, buf)
    for weights_only in (None, True):
        buf.seek(0)
        with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL io\.open was not an allowed"):
            gt.load(buf, weights_only=weights_only)
    assert not marker.exists()
    buf.seek(0)
    opened = gt.load(buf, weights_only=False)["x"]  # trusted: plain pickle semantics
    opened.close()
    assert marker.exists()


def test_safe_globals_allow_a_class():
    buf = io.BytesIO()
    gt.save({"f": fractions.Fraction(1, 3)}, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="Fraction"):
        gt.load(buf)
    with gt.serialization.safe_globals([fractions.Fraction]):
        buf.seek(0)
        assert gt.load(buf)["f"] == fractions.Fraction(1, 3)
    assert fractions.Fraction not in gt.serialization.get_safe_globals()


def test_map_location_forms(device):
    buf = io.BytesIO()
    gt.save({"a": gt.arange(4.0, device=device)}, buf)
    for where in ("cpu", gt.device("cpu"), {str(gt.arange(1, device=device).device): "cpu"}):
        buf.seek(0)
        assert gt.load(buf, map_location=where)["a"].device.type == "cpu"
    seen = []
    buf.seek(0)
    back = gt.load(buf, map_location=lambda storage, loc: seen.append(loc) or storage)
    assert back["a"].device.type == "cpu" and seen == [str(gt.arange(1, device=device).device)]
    buf.seek(0)
    assert gt.load(buf, map_location="cuda")["a"].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_loading_into_cuda_goes_through_the_pinned_pool():
    w = gt.arange(6.0, device="cpu").reshape(2, 3)
    buf = io.BytesIO()
    gt.save({"w": w, "row": w[1], "h": gt.ones(2, dtype=gt.bfloat16, device="cpu")}, buf)
    buf.seek(0)
    before = pinned.host_memory_stats()["allocation.all.allocated"]
    sd = gt.load(buf, map_location="cuda")
    assert pinned.host_memory_stats()["allocation.all.allocated"] > before
    assert (
        sd["w"].device.type == "cuda" and sd["row"].untyped_storage() is sd["w"].untyped_storage()
    )
    assert sd["row"].tolist() == [3.0, 4.0, 5.0] and sd["h"].tolist() == [1.0, 1.0]


def test_cuda_location_without_cuda_says_what_to_do(monkeypatch):
    from gpu_tensor import serialization

    monkeypatch.setattr(serialization, "cuda_available", lambda: False)
    buf = io.BytesIO()
    gt.save(gt.ones(2, device="cuda"), buf)
    buf.seek(0)
    with pytest.raises(RuntimeError, match=r"map_location=gt.device\('cpu'\)"):
        gt.load(buf)
    buf.seek(0)
    assert gt.load(buf, map_location="cpu").tolist() == [1.0, 1.0]


def test_mmap_views_a_private_map(tmp_path):
    path = tmp_path / "m.pt"
    gt.save({"a": gt.arange(1000.0, device="cpu"), "b": gt.ones(3, device="cpu")}, path)
    m = gt.load(path, mmap=True)
    assert m["a"][999].item() == 999.0
    m["a"][0] = 5.0  # copy-on-write: the file keeps its bytes
    assert gt.load(path)["a"][0].item() == 0.0
    with pytest.raises(ValueError, match="file path"):
        gt.load(io.BytesIO(path.read_bytes()), mmap=True)


def test_bad_files_get_clear_errors(tmp_path):
    with pytest.raises(RuntimeError, match="zip format"):
        gt.load(io.BytesIO(b"not a checkpoint at all"))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("x/other", b"1")
    buf.seek(0)
    with pytest.raises(RuntimeError, match="data.pkl"):
        gt.load(buf)
    for not_a_file in (3.5, object()):  # torch's error and hint, and no half-built ZipFile
        with pytest.raises(AttributeError, match="no attribute 'seek'. You can only torch.load"):
            gt.load(not_a_file)
    x = gt.arange(4.0, device="cpu")
    with pytest.raises(RuntimeError, match="different types"):
        gt.save([x, x.view(gt.int32)], io.BytesIO())


def test_pickler_takes_new_tensor_kinds():
    """A new tensor kind registers how it is written (quantized tensors, subclasses)."""
    from gpu_tensor.serialization import TorchName, register_global, register_reducer

    class Tagged:
        def __init__(self, t, tag):
            self.t, self.tag = t, tag

    register_reducer(Tagged, lambda o: (TorchName("mylib", "tagged"), (o.t, o.tag)))
    register_global("mylib.tagged", lambda t, tag: (tag, t))
    buf = io.BytesIO()
    gt.save([Tagged(gt.ones(2), "q")], buf)
    assert "mylib tagged" in _globals(zipfile.ZipFile(buf).read("archive/data.pkl"))
    buf.seek(0)
    tag, t = gt.load(buf)[0]
    assert tag == "q" and t.tolist() == [1.0, 1.0]
