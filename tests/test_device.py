"""Devices, the default device, fallback emulation and gt.cuda's device queries."""

import os
import subprocess
import sys

import pytest

from gpu_tensor import creation as cr
from gpu_tensor import device as dv
from gpu_tensor.cuda import _device as cuda


def test_parse_devices():
    assert dv.device("cpu").type == "cpu" and dv.device("cpu").index is None
    d = dv.device("cuda:1")
    assert (d.type, d.index) == ("cuda", 1) and str(d) == "cuda:1"
    assert dv.device("cuda").index is None
    assert dv.device("cuda", 0) == dv.device("cuda:0") == "cuda:0"
    assert dv.device(2) == dv.device("cuda:2")
    assert repr(dv.device("cuda:0")) == "device(type='cuda', index=0)"
    assert hash(dv.device("cuda:0")) == hash(dv.Device("cuda", 0))


@pytest.mark.parametrize("bad", ["gpu", "cuda:x", "tpu:0"])
def test_bad_device_strings(bad):
    with pytest.raises(RuntimeError, match="device"):
        dv.device(bad)


def test_emulated_cuda_here():
    if dv.real_cuda_available():
        pytest.skip("a real GPU is present")
    assert cuda.is_available() and cuda.is_emulated()
    assert cuda.device_count() == 1 and cuda.current_device() == 0
    t = cr.zeros(3, device="cuda")
    assert str(t.device) == "cuda:0" and t.is_cuda
    assert "emulated" in cuda.get_device_name()


def test_default_device_is_cpu_without_gpu():
    if dv.real_cuda_available():
        pytest.skip("a real GPU is present")
    assert dv.get_default_device() == "cpu"
    try:
        dv.set_default_device("cuda")
        assert cr.zeros(2).device == "cuda:0"
    finally:
        dv.set_default_device(None)
    assert cr.zeros(2).device == "cpu"


def test_out_of_range_cuda_index():
    with pytest.raises(RuntimeError, match="cuda:5"):
        cr.zeros(2, device="cuda:5")


def test_set_device_and_context():
    cuda.set_device(0)
    with cuda.device(0):
        assert cuda.current_device() == 0
    with pytest.raises(RuntimeError, match="cuda:3"):
        cuda.set_device(3)


def _run(code, **env):
    e = {k: v for k, v in os.environ.items() if not k.startswith("GPU_TENSOR")}
    e.update(env)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=120
    )


def test_cuda_without_fallback_says_how_to_enable_it():
    if dv.real_cuda_available():
        pytest.skip("a real GPU is present")
    r = _run("import gpu_tensor.creation as c; c.zeros(2, device='cuda')")
    assert r.returncode != 0
    assert "RuntimeError" in r.stderr and "GPU_TENSOR_FALLBACK=1" in r.stderr
    r = _run("from gpu_tensor.cuda import _device as c; print(c.is_available(), c.device_count())")
    assert r.stdout.split() == ["False", "0"]


def test_device_module_is_callable():
    """`gt.device('cuda:0')` works whether gt.device names the module or the function."""
    assert dv("cuda:1") == dv.device("cuda:1") and isinstance(dv("cpu"), dv.Device)
    assert dv.real_cuda_available() in (True, False)  # still the module
