"""The one line a worker script prints when its checks pass (tests/distributed/_launch.py
reads it)."""

import gpu_tensor.distributed as dist


def report(checks: int) -> None:
    """One line from rank 0 with every rank's count (ranks' prints can interleave)."""
    n = dist.get_world_size()
    counts = [None] * n
    dist.all_gather_object(counts, checks)
    if dist.get_rank() == 0:
        print(f"OK {n} ranks: {counts} checks", flush=True)
