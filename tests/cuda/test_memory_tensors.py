"""gt.cuda.memory seen through real tensors on the cuda device (emulated here, real on a
GPU): stats follow tensor lifetimes, live_tensors names shape, dtype and creation line."""

from __future__ import annotations

import gc
import inspect

import pytest

import gpu_tensor.cuda.memory as m

creation = pytest.importorskip("gpu_tensor.creation")
from gpu_tensor import dtype as gdt  # noqa: E402


@pytest.fixture(autouse=True)
def cuda_device(monkeypatch):
    from gpu_tensor import device

    if not device.real_cuda_available():
        monkeypatch.setenv("GPU_TENSOR_FALLBACK", "1")
    m.record_creation_sites(True)
    yield
    m.record_creation_sites(None)


def test_tensor_lifetime_drives_memory_allocated():
    gc.collect()
    before = m.memory_allocated()
    t = creation.empty((512, 1024), dtype=gdt.float32, device="cuda")
    line = inspect.currentframe().f_lineno - 1
    assert m.memory_allocated() - before == 512 * 1024 * 4
    row = next(
        r for r in m.live_tensors() if r["size"] == 512 * 1024 * 4 and r["shape"] == (512, 1024)
    )
    assert row["dtype"] == "float32"
    assert row["site"] == f"{__file__}:{line} in test_tensor_lifetime_drives_memory_allocated"
    view = t[1:3]
    del t
    gc.collect()
    assert m.memory_allocated() - before == 512 * 1024 * 4  # the view keeps the storage
    del view
    gc.collect()
    assert m.memory_allocated() == before
    assert m.max_memory_allocated() >= before + 512 * 1024 * 4


def test_oom_names_the_tensor_that_holds_memory():
    free, total = m.mem_get_info()
    hog = creation.empty((total // 2 // 4,), dtype=gdt.float32, device="cuda")
    line = inspect.currentframe().f_lineno - 1
    with pytest.raises(m.OutOfMemoryError) as info:
        creation.empty((total,), dtype=gdt.uint8, device="cuda")
    text = str(info.value)
    assert f"shape ({total // 2 // 4},) float32" in text and f"{__file__}:{line}" in text
    del hog
    gc.collect()
    ok = creation.empty((total // 2,), dtype=gdt.uint8, device="cuda")  # fits again
    del ok
