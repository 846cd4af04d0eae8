"""Host↔device transfer benchmark: pinned and pageable paths, overlap, pinning cost, pool waste.

    .venv/bin/python -m profiling.bench_transfer [--quick] [--out DIR] [--sweep]

GPU (sizes 1 MiB–1 GiB, H2D and D2H, bytes moved once):
- `raw cudaMemcpyAsync pinned (peak)`: the same-run peak, cudaHostAlloc buffer + one copy;
- `gpu_tensor pinned`: `gt.empty(pin_memory=True).to('cuda', non_blocking=True)` /
  `d.to('cpu', non_blocking=True)` (lands in pinned memory);
- `gpu_tensor pageable staged`: a plain numpy-backed tensor `.to('cuda')` / `.cpu()`;
- `cupy.asarray` / `cupy .get()` from/to pageable numpy; torch `pin_memory()` +
  `non_blocking` and torch pageable, when torch with CUDA is installed;
- overlap: a compute kernel on one stream, 256 MiB copies on another: `hidden_fraction` =
  share of the copy time hidden behind the compute;
- pinning cost: cudaHostAlloc vs mmap + pre-fault + cudaHostRegister, ms per GiB;
- `--sweep`: the staging pipeline's chunk size x workers at 256 MiB.

CPU (no GPU: cuda is the emulated device) — what is meaningful there, labelled as such:
- the staging pipeline's throughput on the emulated device (its "DMA" is a host memmove, so
  this is the host side of the pipeline: two host copies per byte), beside one numpy copy;
- the pinned pool's host overhead (bytes pinned / bytes requested) on two traces, beside
  the power-of-two policy of torch's and cupy's pinned pools replayed on the same requests;
- host page pre-faulting (the part of pinning that does not need the driver), ms per GiB.
"""

from __future__ import annotations

import math
import os
import random

import numpy as np

from profiling.harness import Suite

MiB, GiB = 1 << 20, 1 << 30


def _gt(suite: Suite):
    """gpu_tensor modules, with cuda emulated when there is no GPU."""
    if suite.device == "cpu":
        os.environ["GPU_TENSOR_FALLBACK"] = "1"  # cuda = emulated host device for this run
    from gpu_tensor import creation, transfer
    from gpu_tensor.cuda import streams

    return creation, transfer, streams


# ------------------------------------------------------------------------------ pool waste
class _AddressSpace:
    """Raw source of fresh addresses and no memory: the pool's policy alone is measured."""

    def __init__(self):
        self.next, self.used, self.peak, self.allocs = 1 << 40, 0, 0, 0
        self.sizes: dict[int, int] = {}

    def alloc(self, n):
        ptr, self.next = self.next, self.next + n + 4096
        self.sizes[ptr] = n
        self.used += n
        self.allocs += 1
        self.peak = max(self.peak, self.used)
        return ptr

    def free(self, ptr):
        self.used -= self.sizes.pop(ptr)


def _pow2(n: int) -> int:
    return 1 << max(12, (n - 1).bit_length())


def _traces(seed: int = 0):
    rng = random.Random(seed)
    # 1. 500 live buffers, log-uniform 64 KiB..256 MiB (pinned weights / offload buffers)
    live = [
        int(math.exp(rng.uniform(math.log(64 * 1024), math.log(256 * MiB)))) for _ in range(500)
    ]
    # 2. a loader: batches of 32 x seq_len x 4096 fp16 tokens, seq_len varying per step,
    #    4 batches alive at once (pin, upload, free)
    loader = [32 * rng.randint(128, 2048) * 4096 * 2 for _ in range(400)]
    # 3. the same loader with a few bucketed lengths (padding to 512 / 1024 / 2048)
    bucketed = [32 * rng.choice((512, 1024, 2048)) * 4096 * 2 for _ in range(400)]
    return {
        "pool waste: 500 live buffers 64 KiB-256 MiB": ("live", live),
        "pool waste: loader trace, varying seq len": ("loader", loader),
        "pool waste: loader trace, 3 bucketed lengths": ("loader", bucketed),
    }


def bench_pool_waste(suite: Suite) -> None:
    from gpu_tensor.memory.pinned import PinnedPool

    for case, (kind, sizes) in _traces().items():
        for impl, rounding in (
            ("gpu_tensor PinnedPool", None),
            ("torch/cupy policy (power of two, exact-bucket reuse)", _pow2),
        ):
            raw = _AddressSpace()
            requested_live = peak_requested = 0
            if rounding is None:
                pool = PinnedPool(raw, None)
                malloc, free = pool.malloc, pool.free
            else:
                free_lists: dict[int, list] = {}

                def malloc(n, raw=raw, free_lists=free_lists, rounding=rounding):
                    size = rounding(n)
                    stack = free_lists.get(size)
                    if stack:
                        return stack.pop()
                    return (raw.alloc(size), size)

                def free(b, free_lists=free_lists):
                    free_lists.setdefault(b[1], []).append(b)

            held = []
            for n in sizes:
                held.append((malloc(n), n))
                requested_live += n
                peak_requested = max(peak_requested, requested_live)
                if kind == "loader" and len(held) > 4:
                    block, m = held.pop(0)
                    free(block)
                    requested_live -= m
            overhead = raw.peak / peak_requested
            suite.record(
                case,
                impl,
                host_overhead=round(overhead, 4),
                pinning_calls=raw.allocs,
                pinned_peak_mib=round(raw.peak / MiB, 1),
                requested_peak_mib=round(peak_requested / MiB, 1),
            )


# ------------------------------------------------------------------------------ CPU rows
def bench_emulated(suite: Suite) -> None:
    creation, transfer, streams = _gt(suite)
    from gpu_tensor.memory import pinned

    sizes = suite.choose([1 * MiB, 16 * MiB, 64 * MiB, 256 * MiB], [1 * MiB, 16 * MiB, 64 * MiB])
    for n in sizes:
        host = np.ones(n, np.uint8)
        src = creation.from_numpy(host)
        dev = src.to("cuda")
        pin = creation.empty(n, dtype="uint8", pin_memory=True)
        other = np.empty_like(host)
        label = f"{n // MiB} MiB"
        note = "emulated cuda: host memcpy, not PCIe"
        t = suite.time(lambda s=src: s.to("cuda", non_blocking=True), sync="cpu")
        suite.record(
            f"H2D {label} (emulated)", "gpu_tensor pageable staged", t, nbytes=n, note=note
        )
        t = suite.time(lambda p=pin: p.to("cuda", non_blocking=True), sync="cpu")
        suite.record(f"H2D {label} (emulated)", "gpu_tensor pinned", t, nbytes=n, note=note)
        t = suite.time(lambda d=dev: d.cpu(), sync="cpu")
        suite.record(
            f"D2H {label} (emulated)", "gpu_tensor pageable staged", t, nbytes=n, note=note
        )
        t = suite.time(lambda h=host, o=other: np.copyto(o, h), sync="cpu")
        for case in (f"H2D {label} (emulated)", f"D2H {label} (emulated)"):
            suite.record(case, "numpy copyto (one host copy)", t, nbytes=n, note=note)
        del src, dev, pin
    stats = pinned.host_memory_stats()
    suite.record(
        "pinned pool after the runs",
        "gpu_tensor PinnedPool",
        reserved_mib=round(stats["reserved_bytes.all.current"] / MiB, 1),
        num_host_alloc=stats["num_host_alloc"],
    )


def bench_prefault(suite: Suite) -> None:
    from gpu_tensor.backends.cuda_pinned import RegisterSource

    for n in suite.choose([64 * MiB, 256 * MiB, GiB], [64 * MiB]):
        src = RegisterSource()

        def pin_once(src=src, n=n):
            src.free(src.alloc(n))

        t = suite.time(pin_once, sync="cpu", warmup=1, repeat=5)
        suite.record(
            f"pin {n // MiB} MiB",
            "host mmap + pre-fault (no driver)",
            t,
            ms_per_gib=round(t.median * 1e3 * GiB / n, 2),
        )


def bench_sweep(suite: Suite, n: int) -> None:
    """The staging pipeline's knobs at one size (on the GPU: the real link)."""
    creation, transfer, streams = _gt(suite)
    from gpu_tensor.transfer import staging as _staging

    saved = _staging.config
    src = creation.from_numpy(np.ones(n, np.uint8))
    sync = "cuda" if suite.device == "cuda" else "cpu"
    try:
        for chunk in (2 * MiB, 4 * MiB, 8 * MiB, 16 * MiB, 32 * MiB):
            for workers in (1, 2, 4, 6, 8):
                if workers > (os.cpu_count() or 1):
                    continue
                cfg = _staging.StagingConfig()
                cfg.chunk_bytes, cfg.workers, cfg.depth = chunk, workers, workers + 2
                _staging.config = cfg
                t = suite.time(
                    lambda: src.to("cuda", non_blocking=True), sync=sync, warmup=2, repeat=10
                )
                suite.record(
                    f"H2D {n // MiB} MiB sweep",
                    f"staging chunk={chunk // MiB}MiB workers={workers} depth={workers + 2}",
                    t,
                    nbytes=n,
                )
    finally:
        _staging.config = saved


# ------------------------------------------------------------------------------ GPU rows
def bench_gpu(suite: Suite) -> None:
    creation, transfer, streams = _gt(suite)
    cp = suite.cupy
    rt = cp.cuda.runtime
    sizes = suite.choose(
        [MiB, 4 * MiB, 16 * MiB, 64 * MiB, 256 * MiB, GiB], [MiB, 16 * MiB, 64 * MiB]
    )
    torch = suite.torch if suite.has_torch_cuda else None
    torch_reason = None if torch is not None else suite.peer_reason("torch_cuda")
    for n in sizes:
        label = f"{n // MiB} MiB"
        dev_raw = cp.empty(n, cp.uint8)
        raw_host = rt.hostAlloc(n, 0)
        pageable = np.ones(n, np.uint8)
        try:
            for kind, case in ((1, f"H2D {label}"), (2, f"D2H {label}")):
                dst, src = (
                    (dev_raw.data.ptr, raw_host) if kind == 1 else (raw_host, dev_raw.data.ptr)
                )
                t = suite.time(
                    lambda d=dst, s=src, k=kind, n=n: rt.memcpyAsync(
                        d, s, n, k, cp.cuda.get_current_stream().ptr
                    )
                )
                suite.record(
                    case,
                    "raw cudaMemcpyAsync pinned (peak)",
                    t,
                    nbytes=n,
                    ceiling="h2d" if kind == 1 else "d2h",
                )
            pin = creation.empty(n, dtype="uint8", pin_memory=True)
            page_t = creation.from_numpy(pageable)
            dev = page_t.to("cuda")
            t = suite.time(lambda p=pin: p.to("cuda", non_blocking=True))
            suite.record(f"H2D {label}", "gpu_tensor pinned", t, nbytes=n, ceiling="h2d")
            t = suite.time(lambda p=page_t: p.to("cuda", non_blocking=True))
            suite.record(f"H2D {label}", "gpu_tensor pageable staged", t, nbytes=n, ceiling="h2d")
            t = suite.time(lambda h=pageable: cp.asarray(h))
            suite.record(f"H2D {label}", "cupy.asarray (pageable)", t, nbytes=n, ceiling="h2d")
            t = suite.time(lambda d=dev: d.to("cpu", non_blocking=True))
            suite.record(f"D2H {label}", "gpu_tensor pinned", t, nbytes=n, ceiling="d2h")
            t = suite.time(lambda d=dev: d.cpu())
            suite.record(f"D2H {label}", "gpu_tensor pageable staged", t, nbytes=n, ceiling="d2h")
            t = suite.time(lambda a=dev_raw: a.get())
            suite.record(f"D2H {label}", "cupy .get() (pageable)", t, nbytes=n, ceiling="d2h")
            if torch is None:
                for case in (f"H2D {label}", f"D2H {label}"):
                    suite.skip(case, "torch", torch_reason)
            else:
                _torch_rows(suite, torch, n, label)
            del pin, page_t, dev
        finally:
            rt.freeHost(raw_host)
            del dev_raw


def _torch_rows(suite: Suite, torch, n: int, label: str) -> None:
    tp = torch.ones(n, dtype=torch.uint8).pin_memory()
    tc = torch.ones(n, dtype=torch.uint8)
    td = tc.cuda()
    torch.cuda.synchronize()

    def in_torch_stream(fn):
        # the harness brackets cupy's current stream; run torch on that same stream
        stream = torch.cuda.ExternalStream(suite.cupy.cuda.get_current_stream().ptr)
        with torch.cuda.stream(stream):
            fn()

    t = suite.time(lambda: in_torch_stream(lambda: tp.to("cuda", non_blocking=True)))
    suite.record(f"H2D {label}", "torch pinned non_blocking", t, nbytes=n, ceiling="h2d")
    t = suite.time(lambda: in_torch_stream(lambda: tc.to("cuda", non_blocking=True)))
    suite.record(f"H2D {label}", "torch pageable non_blocking", t, nbytes=n, ceiling="h2d")
    t = suite.time(lambda: in_torch_stream(lambda: tp.copy_(td, non_blocking=True)))
    suite.record(f"D2H {label}", "torch into pinned non_blocking", t, nbytes=n, ceiling="d2h")
    t = suite.time(lambda: in_torch_stream(lambda: td.cpu()))
    suite.record(f"D2H {label}", "torch .cpu() pageable", t, nbytes=n, ceiling="d2h")


def bench_overlap(suite: Suite) -> None:
    creation, transfer, streams = _gt(suite)
    from gpu_tensor.testing import synced_seconds

    cp = suite.cupy
    n = suite.choose(256 * MiB, 64 * MiB)
    x = cp.ones(1 << 27, cp.float32)
    comp, side = streams.Stream(), streams.Stream()
    pin = creation.empty(n, dtype="uint8", pin_memory=True)
    page = creation.from_numpy(np.ones(n, np.uint8))

    def compute(k):
        with streams.stream(comp):
            for _ in range(k):
                cp.multiply(x, 1.0001, out=x)

    for name, src in (("gpu_tensor pinned", pin), ("gpu_tensor pageable staged", page)):

        def upload(src=src):
            with streams.stream(side):
                src.to("cuda", non_blocking=True)

        upload()
        t_copy = min(synced_seconds(upload) for _ in range(5))
        # a compute phase about as long as the copy, so hiding it all is possible
        t_one = min(synced_seconds(lambda: compute(1)) for _ in range(3))
        k = max(1, int(1.2 * t_copy / t_one))
        t_comp = min(synced_seconds(lambda k=k: compute(k)) for _ in range(5))
        # the compute is queued first (async); the upload's host staging then overlaps it
        t_both = min(synced_seconds(lambda k=k: (compute(k), upload())) for _ in range(5))
        hidden = max(0.0, min(1.0, (t_comp + t_copy - t_both) / t_copy))
        suite.record(
            f"overlap H2D {n // MiB} MiB with compute",
            name,
            seconds=t_both,
            hidden_fraction=round(hidden, 3),
            copy_s=t_copy,
            compute_s=t_comp,
        )


def bench_pinning(suite: Suite) -> None:
    from gpu_tensor.backends.cuda_pinned import (
        HostAllocSource,
        RegisterSource,
        cuda_register,
        cuda_unregister,
    )

    for n in suite.choose([64 * MiB, 256 * MiB, GiB], [64 * MiB]):
        for impl, src in (
            ("cudaHostAlloc", HostAllocSource()),
            ("mmap + pre-fault + cudaHostRegister", RegisterSource(cuda_register, cuda_unregister)),
        ):

            def pin_once(src=src, n=n):
                src.free(src.alloc(n))

            t = suite.time(pin_once, sync="cpu", warmup=1, repeat=5)
            suite.record(
                f"pin {n // MiB} MiB", impl, t, ms_per_gib=round(t.median * 1e3 * GiB / n, 2)
            )


def main(argv=None):
    suite = Suite(
        "transfer",
        argv,
        description=__doc__.splitlines()[0],
        add_arguments=lambda p: p.add_argument(
            "--sweep", action="store_true", help="chunk size x workers sweep"
        ),
    )
    bench_pool_waste(suite)
    if suite.device == "cuda":
        bench_gpu(suite)
        bench_overlap(suite)
        bench_pinning(suite)
        if suite.args.sweep or not suite.quick:
            bench_sweep(suite, 256 * MiB)
    else:
        from gpu_tensor.device import real_cuda_available

        if real_cuda_available():  # --device cpu on a GPU machine: cuda cannot be emulated
            suite.skip("H2D/D2H", "gpu_tensor", "--device cpu given on a GPU machine")
        else:
            bench_emulated(suite)
            bench_prefault(suite)
            if suite.args.sweep:
                bench_sweep(suite, 64 * MiB)
    return suite.finish()


if __name__ == "__main__":
    main()
