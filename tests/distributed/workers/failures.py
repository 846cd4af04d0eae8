"""Failure modes (tests/distributed/test_failures.py); argv[1] picks one:
- raise: rank 1 raises while rank 0 waits in a barrier: the job must end, not hang;
- timeout: rank 1 joins all_reduce late; rank 0's times out with an error naming the op
  and the rank, then both finish the collective normally.
"""

import datetime
import sys
import time

import gpu_tensor as gt
import gpu_tensor.distributed as dist

mode = sys.argv[1]
if mode == "raise":
    dist.init_process_group("mpi")
    if dist.get_rank() == 1:
        raise RuntimeError("rank 1 fails on purpose")
    dist.barrier()  # never completes: rank 1 is gone
    print("rank 0 passed the barrier (it must not)", flush=True)
elif mode == "timeout":
    dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=0.5))
    t = gt.ones(4)
    if dist.get_rank() == 0:
        work = dist.all_reduce(t, async_op=True)
        try:
            work.wait()
        except dist.DistBackendError as exc:
            print(f"caught: {exc}", flush=True)
        assert not work.is_success() and work.exception() is not None
        work._request.wait(30)  # rank 1 arrives: the collective completes
    else:
        time.sleep(2)
        dist.all_reduce(t)
    values = [None] * dist.get_world_size()
    dist.all_gather_object(values, t.tolist())
    if dist.get_rank() == 0:
        print(f"done {values}", flush=True)
    dist.destroy_process_group()
