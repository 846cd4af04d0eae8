"""cuda:1 without set_device(1), on two simulated GPUs (a subprocess: the simulator's device
count is fixed per process). The legacy default stream must be cuda:1's own: events,
syncs and staging of a cuda:1 tensor that went to device 0's stream completed at once and
let the host read pinned slots before the copy landed. Peer copies order both ways."""

import textwrap

import pytest

from gpu_tensor.kernel import emulate
from tests.sim_process import run_sim_script

pytestmark = [
    pytest.mark.sim,
    pytest.mark.skipif(emulate.compiler() is None, reason="the simulator needs g++"),
]

SCRIPT = textwrap.dedent("""
    import gpu_tensor as gt
    from gpu_tensor.testing import sim

    n = 3000
    want = [2.0 * i for i in range(n)]
    x = gt.arange(float(n), device="cuda:1") * 2        # queued on cuda:1's default stream
    assert x.cpu().tolist() == want, "device-to-host copy of a cuda:1 tensor"
    h = gt.tensor(want, device="cpu")
    assert h.to("cuda:1").mul(1).cpu().tolist() == want, "host-to-device copy to cuda:1"
    src = gt.arange(float(n), device="cuda:0") * 1
    z = src.to("cuda:1", non_blocking=True)             # a peer copy, still reading src
    del src                                             # its block goes back to cuda:0 ...
    w = gt.zeros(n, device="cuda:0")                    # ... which hands it out again
    w.add_(1.0)                                         # a race unless cuda:0 waits too
    gt.cuda.synchronize(1)
    assert z.cpu().tolist() == [float(i) for i in range(n)], "peer copy"
    assert not sim.races(), sim.races()
    print("ok")
""")


def test_cuda_1_uses_its_own_default_stream():
    run_sim_script(SCRIPT, GPU_TENSOR_SIM_DEVICES="2")


FOREIGN = textwrap.dedent("""
    import gpu_tensor as gt
    from gpu_tensor.testing import sim

    # A stream of cuda:1 that another library owns, wrapped while cuda:0 is current: cupy's
    # wrapper has no device (device_id -1), so its events must still be made on cuda:1.
    torn = gt.cuda.Stream(device="cuda:1")
    ext = gt.cuda.Stream.from_external(torn, "cuda:1")
    assert gt.cuda.current_device() == 0
    ev = ext.record_event()                     # cudaErrorInvalidResourceHandle if on cuda:0
    ext.wait_event(ev)
    ext.synchronize()
    assert ext.query() and ev.query()
    with gt.cuda.stream(ext):                   # current on cuda:1, not on cuda:0
        assert gt.cuda.current_stream("cuda:1").cuda_stream == torn.cuda_stream
        assert gt.cuda.current_stream("cuda:0").cuda_stream != torn.cuda_stream
        y = gt.ones(1000, device="cuda:1") * 3
    ext.synchronize()
    assert y.sum().item() == 3000.0

    # record_stream of a cuda:0 tensor on a cuda:1 stream: the event at free goes on cuda:1
    # (made on cuda:0 it fails inside the finaliser, which swallows it: the block never
    # comes back)
    x = gt.ones(1 << 20, device="cuda:0")
    s1 = gt.cuda.Stream(device="cuda:1")
    x.record_stream(s1)
    x.record_stream(ext)                        # the wrapped one: cuda:1 too
    del x
    gt.cuda.synchronize(0)
    gt.cuda.synchronize(1)
    gt.cuda.empty_cache()
    stats = gt.cuda.memory_stats(0)
    assert stats["active_bytes.all.current"] == 0, stats["active_bytes.all.current"]
    assert gt.cuda.memory_reserved(0) == 0, gt.cuda.memory_reserved(0)
    assert not sim.races(), sim.races()
    print("ok")
""")


def test_streams_of_another_device_keep_their_device():
    run_sim_script(FOREIGN, GPU_TENSOR_SIM_DEVICES="2")
