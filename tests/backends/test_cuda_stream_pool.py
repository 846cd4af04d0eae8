"""Side streams come from a pool that is never destroyed (torch.cuda.Stream()'s rule), so a
block that recorded a stream can always record an event on it when freed: with a stream
destroyed under it (cupy destroys a Stream's handle when the object dies), the event record
failed inside the block's finaliser and the block leaked."""

import gc

from gpu_tensor import creation as cr
from gpu_tensor.cuda import memory as cmem
from gpu_tensor.cuda import streams
from gpu_tensor.testing import requires_real_cuda


@requires_real_cuda
def test_freed_block_returns_after_its_recorded_stream_is_dropped():
    gc.collect()  # garbage of earlier tests (random order) must not be freed mid-test
    before = cmem.memory_allocated(0)
    x = cr.zeros(1 << 16, device="cuda")
    s = streams.Stream()
    s.wait_stream(streams.current_stream())  # x was made on the default stream
    with streams.stream(s):
        x.add_(1.0)  # used on the side stream
    x.record_stream(s)
    del s
    gc.collect()
    del x
    gc.collect()
    streams.current_stream().synchronize()
    cmem.empty_cache()
    assert cmem.memory_allocated(0) == before


@requires_real_cuda
def test_streams_are_pooled():
    handles = {streams.Stream().cuda_stream for _ in range(40)}
    assert len(handles) <= 32
