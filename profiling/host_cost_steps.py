"""Where gpu_tensor's own host time goes in one warm cuda op, step by step, with no GPU.

    .venv/bin/python -m profiling.host_cost_steps [--calls N]

The companion of bench_host_cost.py (same method: the real CudaBackend over the simulated
CuPy as a null device, the simulator's time measured at its boundary and subtracted, see
gpu_tensor/testing/sim/boundary.py). It times nested entry points of `x + y` (32×32
float32, the result dropped each call) and reports the differences, so each row is the
own host time of one step:

- dispatch: Tensor.__add__ (ops/_dispatch.py): the operator's key of its operands, the
  lookup of the backend's warm entry, and the result Tensor;
- the warm entry (backends/cuda_warm.py) less its allocation: the stream query, the
  block's owner and tag, packing and the launch call;
- caching allocator: malloc and free of the result's block (gpu_tensor/memory/);
- cupy objects: calling the UnownedMemory, MemoryPointer and ndarray constructors that
  wrap the block, and dropping them: what is left once the simulator's share (their
  `__new__`, `__init__`, `__del__` on the clock, the rest of their life by
  `BoundaryTimer.objects_ns`) is taken out, i.e. the calls themselves.

It reaches into the backend's internals, so it measures this tree only.
"""

from __future__ import annotations

import argparse
import os
import sys

from profiling.bench_host_cost import own_seconds

SHAPE = (32, 32)


def _own_us(fn, timer, per_crossing: float, n: int) -> float:
    return own_seconds(fn, n, timer, per_crossing, timer.objects_ns(fn)[0])[0] * 1e6


def steps(n: int) -> list[tuple[str, float]]:
    """(step, own µs) for `x + y`, the last row the whole op."""
    os.environ["GPU_TENSOR_FALLBACK"] = "sim"
    import numpy as np

    import gpu_tensor as gt
    from gpu_tensor.testing import sim
    from gpu_tensor.testing.sim.boundary import BoundaryTimer

    sim.set_null_device(True)
    rng = np.random.default_rng(0)
    x, y = (gt.from_numpy(rng.standard_normal(SHAPE).astype(np.float32)).to("cuda")
            for _ in range(2))  # fmt: skip
    for _ in range(50):
        x + y
    backend = x.device._backend
    cp, alloc, f32 = backend.xp, backend._alloc, np.dtype(np.float32)
    xd, yd = x._data, y._data
    nbytes = f32.itemsize * SHAPE[0] * SHAPE[1]
    held = alloc.malloc(nbytes, 0)  # a block for the cupy-objects step (not freed by it)
    # the warm entry of x + y, as the operator finds it
    entry = next(e for k, e in backend.warm.items() if k[0] == "add:warm")

    def objects():
        mem = cp.cuda.UnownedMemory(held.ptr, nbytes, None, 0)
        return cp.ndarray(SHAPE, f32, cp.cuda.MemoryPointer(mem, 0))

    probes = {
        "op": lambda: x + y,
        "entry": lambda: entry(xd, yd),
        "allocator": lambda: alloc.free(alloc.malloc(nbytes, 0)),
        "objects": objects,
    }
    timer = BoundaryTimer().install()
    try:
        for name, fn in probes.items():
            missed = timer.uncovered(fn)
            if missed:
                raise SystemExit(f"host_cost_steps: {name}: the clock misses {missed}")
        per = timer.overhead_ns()
        us = {name: _own_us(fn, timer, per, n) for name, fn in probes.items()}
    finally:
        timer.uninstall()
        alloc.free(held)
    return [
        ("dispatch: the operator, its key, the entry's lookup, the Tensor", us["op"] - us["entry"]),
        (
            "warm entry: stream query, owner, tag, packing, launch call",
            us["entry"] - us["allocator"] - us["objects"],
        ),
        ("caching allocator: malloc + free (gpu_tensor/memory)", us["allocator"]),
        ("cupy objects: calling UnownedMemory, MemoryPointer, ndarray", us["objects"]),
        ("the whole op, x + y", us["op"]),
    ]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=3000, help="calls per step (default 3000)")
    args = p.parse_args(argv)
    rows = steps(args.calls)
    width = max(len(name) for name, _ in rows)
    print(f"{'step of a warm cuda x + y (32×32 float32, sim null device)':<{width}}  own µs")
    for name, us in rows:
        print(f"{name:<{width}}  {us:6.2f}")
    print(f"(load average: {os.getloadavg()[0]:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
