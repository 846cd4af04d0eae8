"""gt.utils.prefetch: batches arrive on the device, in order, with stream ordering kept."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from gpu_tensor.creation import from_numpy
from gpu_tensor.cuda import streams
from gpu_tensor.device import real_cuda_available
from gpu_tensor.testing import requires_gpu_hardware
from gpu_tensor.utils import prefetch


@pytest.fixture(autouse=True)
def _cuda(monkeypatch):
    if not real_cuda_available():
        monkeypatch.setenv("GPU_TENSOR_FALLBACK", "1")


Batch = collections.namedtuple("Batch", "x y")


def _batches(n, log=None):
    for i in range(n):
        if log is not None:
            log.append(("produce", i))
        x = from_numpy(np.full((64, 33), i, np.float32))
        yield {
            "x": x,
            "meta": f"batch{i}",
            "pair": Batch(x[:, ::2], [from_numpy(np.arange(i + 1))]),
        }


def test_items_arrive_on_device_in_order_with_structure_kept():
    out = list(prefetch(_batches(5), "cuda"))
    assert len(out) == 5
    for i, item in enumerate(out):
        assert item["meta"] == f"batch{i}"
        assert item["x"].device.type == "cuda"
        assert isinstance(item["pair"], Batch)
        assert np.array_equal(item["pair"].x.cpu().numpy(), np.full((64, 17), i, np.float32))
        assert item["pair"].y[0].cpu().numpy().tolist() == list(range(i + 1))


@pytest.mark.parametrize("depth", [1, 2, 4])
def test_uploads_run_depth_batches_ahead(depth):
    log = []
    it = prefetch(_batches(6, log), "cuda", depth=depth)
    first = next(it)
    assert [e for e in log if e[0] == "produce"] == [("produce", i) for i in range(depth)]
    log.append(("consume", 0))
    next(it)  # asking for batch 1 starts the upload of batch depth
    assert log[-1] == ("produce", depth)
    assert first["meta"] == "batch0"
    assert len(list(it)) == 4


def test_consumer_stream_waits_on_upload_event(monkeypatch):
    waited = []
    real = streams.Stream.wait_event
    monkeypatch.setattr(
        streams.Stream, "wait_event", lambda self, ev: (waited.append(self), real(self, ev))
    )
    consumer = streams.Stream()
    with streams.stream(consumer):
        for _ in prefetch(_batches(3), "cuda"):
            pass
    assert waited.count(consumer) == 3


def test_bad_depth_and_cpu_target():
    with pytest.raises(ValueError, match="depth"):
        next(prefetch(_batches(1), "cuda", depth=0))
    out = list(prefetch(_batches(2), "cpu"))
    assert out[1]["x"].device.type == "cpu"


@pytest.mark.cuda
@requires_gpu_hardware  # real timing / a real GPU in a subprocess
def test_real_prefetch_overlaps_upload_with_compute():
    import time

    from gpu_tensor.testing import cupy_module

    cupy = cupy_module()

    batches = [from_numpy(np.ones((64 << 20) // 4, np.float32)).pin_memory() for _ in range(6)]
    w = cupy.ones(1 << 26, cupy.float32)

    def step(x):
        for _ in range(30):
            cupy.multiply(w, 1.0001, out=w)
        return x

    def run(it):
        streams.synchronize()
        t0 = time.perf_counter()
        for x in it:
            step(x)
        streams.synchronize()
        return time.perf_counter() - t0

    run(prefetch(batches, "cuda"))  # warm up
    serial = run(b.to("cuda") for b in batches)
    overlapped = run(prefetch(batches, "cuda"))
    assert overlapped < 0.9 * serial
