"""gt.accelerator (torch's device-agnostic API), gt.device(...) as a context manager,
gt.get_default_device. Here cuda is the fallback emulation (conftest), so an accelerator
is available; the no-accelerator answers are checked by switching it off in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import gpu_tensor as gt


def test_tutorial_opening_line():
    device = gt.accelerator.current_accelerator().type if gt.accelerator.is_available() else "cpu"
    assert device == "cuda"
    assert gt.ones(2, device=device).device.type == "cuda"


def test_device_index_round_trip():
    assert gt.accelerator.device_count() == gt.cuda.device_count() >= 1
    assert gt.accelerator.current_device_index() == 0
    gt.accelerator.set_device_index(0)
    gt.accelerator.set_device_index(-1)  # torch: a negative index is a no-op
    assert gt.accelerator.current_device_index() == 0
    with gt.accelerator.device_index(0):
        assert gt.accelerator.current_device_index() == 0
    gt.accelerator.synchronize()
    with pytest.raises((RuntimeError, ValueError)):
        gt.accelerator.set_device_index("cpu")


def test_without_an_accelerator():
    env = {k: v for k, v in os.environ.items() if k != "GPU_TENSOR_FALLBACK"}
    env["GPU_TENSOR_FALLBACK"] = "0"
    code = (
        "import gpu_tensor as gt, sys\n"
        "if gt.cuda.is_available(): sys.exit(0)\n"  # a real GPU: nothing to check
        "assert not gt.accelerator.is_available()\n"
        "assert gt.accelerator.current_accelerator() is None\n"
        "assert gt.accelerator.device_count() == 0\n"
        "try:\n    gt.accelerator.current_device_index()\n"
        "except RuntimeError as e:\n    assert 'no accelerator' in str(e)\n"
        "else:\n    sys.exit('no error')\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr


def test_device_context_manager_sets_the_factory_default():
    before = gt.get_default_device()
    with gt.device("cuda") as d:
        assert d == gt.device("cuda")
        assert gt.get_default_device().type == "cuda"
        assert gt.zeros(2).device.type == "cuda"
        with gt.device("cpu"):
            assert gt.zeros(2).device.type == "cpu"
        assert gt.zeros(2).device.type == "cuda"
    assert gt.get_default_device() == before
    assert gt.zeros(2).device == before


def test_is_tensor_and_layout():
    assert gt.is_tensor(gt.ones(1)) and not gt.is_tensor([1.0])
    assert gt.ones(1).layout is gt.strided
    assert gt.is_storage(gt.ones(1).untyped_storage())
