"""Under CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1 the default stream's handle (2) names the
*calling* thread's stream. A pinned block filled by a non_blocking copy and freed in another
thread (a loader thread, a GC run) must still wait for the copy: its event is recorded on
the copying thread, at the copy. Run on the simulator, whose copies really are pending."""

import textwrap

import pytest

from gpu_tensor.kernel import emulate
from tests.sim_process import run_sim_script

pytestmark = [
    pytest.mark.sim,
    pytest.mark.skipif(emulate.compiler() is None, reason="the simulator needs g++"),
]

SCRIPT = textwrap.dedent("""
    import threading
    import gpu_tensor as gt

    x = gt.arange(1000.0, device="cuda") * 1
    for _ in range(12):                               # the simulator's order is seeded-random
        holder = [x.to("cpu", non_blocking=True)]     # pinned, filled by a pending copy
        t = threading.Thread(target=holder.clear)     # freed in another thread
        t.start()
        t.join()
        y = gt.empty(1000, pin_memory=True)           # must not get a block still being filled
        y.fill_(7.0)
        gt.cuda.synchronize()
        assert y.tolist() == [7.0] * 1000, y.tolist()[:4]
    print("ok")
""")


def test_pinned_block_freed_in_another_thread_waits_for_its_copy():
    run_sim_script(SCRIPT, CUPY_CUDA_PER_THREAD_DEFAULT_STREAM="1")
