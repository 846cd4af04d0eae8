"""What each operation costs on warm cuda, counted by the simulated CuPy (no GPU needed):
kernel launches (our kernels), cupy routines, allocations (our caching allocator's mallocs),
driver calls (cudaMalloc/cudaFree/cudaHostRegister/stream and event creation...), device
syncs (cudaFree, blocking copies, device synchronize) and bytes copied, per op. Then
gpu_tensor's own host-side cost per op, with launches and copies made no-ops (a null device,
as tinygrad has); that time still includes the simulator's bookkeeping, so it is an upper
bound on what a GPU machine pays.

    python -m profiling.bench_costs [--quick] [--json PATH]

Goals (issue 12): warm steady state 0 driver calls and 0 device syncs; one launch per eager
elementwise op and per contiguous copy; host-side cost at most ~3 us per cuda op.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time


def _ops(gt):
    x = gt.randn(256, 256, device="cuda")
    y = gt.randn(256, 256, device="cuda")
    pinned = gt.empty(256, 256, pin_memory=True)
    pinned.copy_(gt.randn(256, 256, device="cpu"))
    pageable = gt.randn(256, 256, device="cpu")

    @gt.fuse
    def chain(a, b):
        return ((a * 2.0 + b).relu() - 0.5).sigmoid()

    w1 = gt.randn(64, 128, device="cuda", requires_grad=True)
    w2 = gt.randn(128, 10, device="cuda", requires_grad=True)
    data = gt.randn(32, 64, device="cuda")

    def mlp_step():
        loss = (data @ w1).relu().matmul(w2).pow(2).mean()
        loss.backward()
        with gt.no_grad():
            for w in (w1, w2):
                w.sub_(w.grad * 1e-3)
                w.grad = None

    sizes = iter(range(1, 10**6))

    def grow():
        return gt.empty(next(sizes) * 4096, device="cuda")

    return [
        ("x + y", lambda: x + y),
        ("x.t().contiguous()", lambda: x.t().contiguous()),
        ('.to("cuda", non_blocking=True) pinned', lambda: pinned.to("cuda", non_blocking=True)),
        ('.to("cuda", non_blocking=True) pageable', lambda: pageable.to("cuda", non_blocking=True)),
        ("@gt.fuse chain (4 ops)", lambda: chain(x, y)),
        ("MLP training step (2 layers)", mlp_step),
        ("allocation of growing sizes", grow),
    ]


def _allocations(gt) -> int:
    return gt.cuda.memory_stats(0).get("allocation.all.allocated", 0)


def measure(quick: bool) -> list[dict]:
    import gpu_tensor as gt
    from gpu_tensor.testing import sim

    reps = 3 if quick else 10
    rows = []
    for name, op in _ops(gt):
        for _ in range(2):  # warm: compiles, pool fill
            op()
        sim.synchronize()
        sim.reset_counters()
        before = _allocations(gt)
        for _ in range(reps):
            op()
        sim.synchronize()
        c = sim.counters()
        row = {"op": name, "allocations": (_allocations(gt) - before) / reps}
        for k in (
            "kernel_launches",
            "cupy_routines",
            "driver_calls",
            "device_syncs",
            "bytes_copied",
        ):
            row[k] = c[k] / reps
        sim.set_null_device(True)
        times = []
        for _ in range(5 if quick else 20):
            t0 = time.perf_counter()
            op()
            times.append(time.perf_counter() - t0)
        sim.set_null_device(False)
        sim.synchronize()
        row["host_us"] = 1e6 * statistics.median(times)
        rows.append(row)
    return rows


def table(rows) -> str:
    head = (
        "| op | launches | cupy routines | allocations | driver calls | device syncs | "
        "bytes copied | host µs (null device) |\n|---|---|---|---|---|---|---|---|\n"
    )
    return head + "".join(
        f"| {r['op']} | {r['kernel_launches']:g} | {r['cupy_routines']:g} | "
        f"{r['allocations']:g} | {r['driver_calls']:g} | {r['device_syncs']:g} | "
        f"{r['bytes_copied']:.0f} | {r['host_us']:.0f} |\n"
        for r in rows
    )


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if os.environ.get("GPU_TENSOR_FALLBACK") != "sim":
        # The simulator is chosen once per process, before gpu_tensor decides its devices:
        # measure in a child process that has it from the start.
        env = dict(os.environ, GPU_TENSOR_FALLBACK="sim")
        return subprocess.call([sys.executable, "-m", "profiling.bench_costs", *argv], env=env)
    from profiling.harness import Suite

    suite = Suite("costs", argv, description=__doc__.splitlines()[0])
    rows = measure(suite.quick)
    for r in rows:
        suite.record(
            r["op"],
            "gpu_tensor on simulated cuda",
            seconds=r["host_us"] * 1e-6,
            **{k: v for k, v in r.items() if k not in ("op", "host_us")},
        )
    print(table(rows))
    suite.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
