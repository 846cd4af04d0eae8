"""Host memory outside the allocator on the emulated cuda device: for each op, the bytes of
its result, what the caching allocator grew by, and the peak of the host buffers numpy
allocated meanwhile (tracemalloc sees numpy's buffers; the allocator's segments are mmaps,
which it does not). Issue 18 item 7: results are the allocator's, and numpy's temporaries
stay piece-sized, so the host peak is a small fraction of the result, whatever its size.

    GPU_TENSOR_FALLBACK=1 .venv/bin/python -m profiling.bench_emulated_memory [--quick]

The operand is 16 MiB (4 MiB with --quick). The target is a host peak of at most 2 MiB
whatever the size: numpy's temporaries are piece-sized. `host_over_size` is the peak over
the larger of the result and the operand (a reduction's temporaries scale with its input),
which shrinks as the size grows.
Ops whose temporaries are intermediates that cannot be cut (a full reduction, LAPACK's
workspace) are listed with `kind = intermediates`: their results are the allocator's, but
their peak is not bounded. On a real GPU there is no emulated device (cupy allocates its
temporaries through the allocator itself), and every row says so.
"""

from __future__ import annotations

import os

os.environ.setdefault("GPU_TENSOR_FALLBACK", "1")  # (before gpu_tensor is imported)

from profiling.harness import Suite  # noqa: E402

TARGET_MIB = 2.0  # pieces of 65,536 elements: a handful of piece-sized temporaries


def _ops(gt, n):
    """(name, kind, fn) over operands of n x 1024 float32 (4 n KiB each)."""

    @gt.fuse
    def _two(x, y):
        return x * y + 1, gt.sigmoid(x - y)

    a = gt.arange(n * 1024, dtype=gt.float32, device="cuda").reshape(n, 1024) % 7 - 3
    b = a.flip(0)
    w = a[:1024].t().contiguous()  # (1024, 1024)
    sq = a[:1024] + gt.eye(1024, device="cuda") * 5000
    i = gt.randint(0, n, (n,), device="cuda")
    j = gt.randint(0, 1024, (1024,), device="cuda")
    m = a > 0
    piece = "pieces"
    return [
        ("a + b", piece, lambda: a + b),
        ("sigmoid", piece, lambda: gt.sigmoid(a)),
        ("gelu", piece, lambda: gt.nn.functional.gelu(a)),
        ("a.t().contiguous()", piece, lambda: a.t().contiguous()),
        ("to int32", piece, lambda: a.to(gt.int32)),
        ("sum(1)", piece, lambda: a.sum(1)),
        ("cumsum(1)", piece, lambda: a.cumsum(1)),
        ("a @ w", piece, lambda: a @ w),
        ("cat", piece, lambda: gt.cat([a, a])),
        ("sort(1)", piece, lambda: a.sort(1).values),
        ("gather", piece, lambda: a.gather(1, j.expand(n, 1024))),
        ("x[i]", piece, lambda: a[i]),
        ("x[:, j]", piece, lambda: a[:, j]),
        ("x[i, j]", piece, lambda: a[i[:, None], j]),
        ("x[mask]", piece, lambda: a[m]),
        ("nonzero", piece, lambda: m.nonzero()),
        ("roll", piece, lambda: a.roll(3, 1)),
        ("repeat", piece, lambda: a.repeat(2, 1)),
        ("cummax(1)", piece, lambda: a.cummax(1).values),
        ("einsum ij,kj->ik", piece, lambda: gt.einsum("ij,kj->ik", a, a[:256])),
        ("searchsorted", piece, lambda: gt.searchsorted(a[0].sort().values, a)),
        ("scatter_reduce amax", piece, lambda: a.scatter_reduce(1, j.expand(n, 1024), a, "amax")),
        ("@gt.fuse, two outputs", piece, lambda: _two(a, b)[0]),
        ("nan_to_num", piece, lambda: a.nan_to_num()),
        ("var(1)", piece, lambda: a.var(1)),
        ("norm(dim=1)", piece, lambda: a.norm(dim=1)),
        ("logsumexp(1)", piece, lambda: a.logsumexp(1)),
        ("randn", piece, lambda: gt.randn(n, 1024, device="cuda")),
        ("arange", piece, lambda: gt.arange(n * 1024, dtype=gt.float32, device="cuda")),
        ("eye", piece, lambda: gt.eye(n, 1024, device="cuda")),
        ("normal_", piece, lambda: gt.empty(n, 1024, device="cuda").normal_()),
        ("dropout", piece, lambda: gt.nn.functional.dropout(a, 0.5)),
        ("var() (all dims)", "intermediates", lambda: a.var()),
        ("std(0) (outer dim)", "intermediates", lambda: a.std(0)),
        ("unique", "intermediates", lambda: a.unique()),
        ("linalg.solve (1024 x 1024)", "intermediates", lambda: gt.linalg.solve(sq, w)),
    ]


def main(argv=None):
    suite = Suite("emulated_memory", argv, description=__doc__)
    import gpu_tensor as gt
    from gpu_tensor.cuda import memory as cmem
    from gpu_tensor.device import cuda_is_emulated
    from gpu_tensor.testing import host_peak

    impl = "gpu_tensor (emulated cuda)"
    n = suite.choose(4096, 1024)
    ops = _ops(gt, n) if cuda_is_emulated() else []
    if not ops:
        suite.record(
            "every op",
            impl,
            skipped="needs the emulated cuda device (no GPU, "
            "GPU_TENSOR_FALLBACK=1); on a GPU cupy's temporaries are the allocator's",
        )
    size = n * 1024 * 4  # the operand's bytes: the scale a reduction's temporaries follow
    lines = [
        "| op | kind | result MiB | allocator grew MiB | host peak MiB | peak / size | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, kind, fn in ops:
        fn()  # warm: the first call of a dtype combination resolves it once
        before = cmem.memory_allocated(0)
        r, peak = host_peak(fn)
        result = r.numel() * r.element_size()
        grew = cmem.memory_allocated(0) - before
        over = peak / max(result, size)
        verdict = ("ok" if peak <= TARGET_MIB * 2**20 else "over") if kind == "pieces" else "-"
        suite.record(
            name,
            impl,
            kind=kind,
            result_mib=round(result / 2**20, 3),
            allocator_grew_mib=round(grew / 2**20, 3),
            host_peak_mib=round(peak / 2**20, 3),
            host_over_size=round(over, 3),
            target=f"<= {TARGET_MIB} MiB" if kind == "pieces" else "(not bounded)",
            verdict=verdict,
        )
        lines.append(
            f"| {name} | {kind} | {result / 2**20:.2f} | {grew / 2**20:.2f} | "
            f"{peak / 2**20:.2f} | {over:.3f} | {verdict} |"
        )
        del r
    if ops:
        print(f"size = the larger of the result and the {size / 2**20:.0f} MiB operand\n")
        print("\n".join(lines))
        _threshold(suite, gt)
    return suite.finish()


def _threshold(suite, gt):
    """The direct-path threshold (issue 30): a composite elementwise result (gelu) at sizes
    around PIECE, computed whole (numpy allocates it, adopt() copies it in) and piece by
    piece into allocator memory, timed in the same run. Below PIECE elements the device
    takes the direct path, above it the pieces: the rows show what each costs there."""
    import time

    from gpu_tensor.backends import emulated
    from gpu_tensor.backends.base import PIECE

    print("\n| elements | direct us | pieces us | pieces / direct | the device takes |")
    print("|---|---|---|---|---|")
    sizes = suite.choose(
        (PIECE // 16, PIECE // 4, PIECE, 4 * PIECE, 16 * PIECE), (PIECE, 4 * PIECE)
    )
    for n in sizes:
        x = gt.linspace(-3, 3, n, device="cuda")
        times = {}
        for path, cut in (("direct", 1 << 62), ("pieces", 0)):
            emulated.PIECE = cut  # 0: pieces (of PIECE elements: _fill's own limit) at any size
            try:
                gt.nn.functional.gelu(x)  # warm
                best = float("inf")
                for _ in range(suite.choose(7, 3)):
                    reps = max(1, suite.choose(1 << 22, 1 << 19) // n)
                    t = time.perf_counter()
                    for _ in range(reps):
                        gt.nn.functional.gelu(x)
                    best = min(best, (time.perf_counter() - t) / reps)
                times[path] = best * 1e6
            finally:
                emulated.PIECE = PIECE
        taken = "direct" if n <= PIECE else "pieces"
        ratio = times["pieces"] / times["direct"]
        suite.record(
            f"gelu {n} elements: direct vs pieces",
            "gpu_tensor (emulated cuda)",
            kind="threshold",
            direct_us=round(times["direct"], 2),
            pieces_us=round(times["pieces"], 2),
            pieces_over_direct=round(ratio, 3),
            taken=taken,
        )
        print(f"| {n} | {times['direct']:.1f} | {times['pieces']:.1f} | {ratio:.2f} | {taken} |")


if __name__ == "__main__":
    main()
