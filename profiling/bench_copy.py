"""Strided-to-contiguous copy benchmark: gpu_tensor's planned kernels vs the peers.

    .venv/bin/python -m profiling.bench_copy [--quick] [--out DIR]

GPU (outputs of ~1 GiB; --quick: a few MiB): each case makes a strided (or broadcast) view
contiguous, optionally casting:
- `gpu_tensor`: `strided_copy(out, view)` into a fresh `cupy.empty` (the planner's kernel);
- `cupy.ascontiguousarray`: CuPy's elementwise copy (with dtype= for the cast case);
- `torch .contiguous()` / `torch copy_` (cast case) when torch with CUDA is installed.
GB/s counts bytes read + written (a broadcast source's unique bytes once), beside the
device-to-device copy ceiling measured in the same run (`suite.ceiling('d2d')`).

CPU (no GPU): no bandwidth is claimed. For every case the planner's decision at full size
(path, kernel variant, 32/64-bit index, vector width, coalesced shape) is recorded, and the
same case at a small size runs through the CUDA kernels under host emulation and is checked
against numpy (`correct` column).
"""

from __future__ import annotations

import numpy as np

from profiling.harness import Suite

GiB = 1 << 30


def _contig_strides(shape, itemsize):
    strides, acc = [], itemsize
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return tuple(strides[::-1])


# name, source base shape (full, quick, emulated), dtype, view of the base, output dtype.
# Full sizes: ~1 GiB of output, far beyond L2 (50 MiB on H100/H200-class parts).
# fmt: off
CASES = [
    ("2D transpose fp32", ((16384, 16384), (2048, 2048), (70, 90)), "float32", lambda a, xp: a.T, None),
    ("2D transpose fp16", ((16384, 32768), (2048, 4096), (64, 96)), "float16", lambda a, xp: a.T, None),
    ("batched 3D transpose (0,2,1)", ((64, 2048, 2048), (8, 512, 512), (3, 40, 50)), "float32", lambda a, xp: a.transpose(0, 2, 1), None),
    ("NCHW->NHWC", ((256, 256, 64, 64), (8, 64, 32, 32), (2, 24, 9, 7)), "float32", lambda a, xp: a.transpose(0, 2, 3, 1), None),
    ("NHWC->NCHW", ((256, 64, 64, 256), (8, 32, 32, 64), (2, 9, 7, 24)), "float32", lambda a, xp: a.transpose(0, 3, 1, 2), None),
    ("general 4D permute (1,3,0,2)", ((128, 64, 128, 256), (16, 16, 32, 64), (6, 24, 20, 18)), "float32", lambda a, xp: a.transpose(1, 3, 0, 2), None),
    ("attention BHSD->BSHD inner-contiguous", ((16, 32, 4096, 128), (2, 8, 512, 64), (2, 3, 20, 16)), "float32", lambda a, xp: a.transpose(0, 2, 1, 3), None),
    ("step slice x[:, ::2]", ((16384, 32768), (2048, 2048), (40, 50)), "float32", lambda a, xp: a[:, ::2], None),
    ("narrowed inner dim x[:, 8:8+n/2]", ((32768, 16384), (2048, 2048), (30, 64)), "float32", lambda a, xp: a[:, 8 : 8 + a.shape[1] // 2], None),
    ("expanded broadcast src [1,N]->[M,N]", ((1, 16384), (1, 4096), (1, 64)), "float32", lambda a, xp: xp.broadcast_to(a, (a.shape[1], a.shape[1])), None),
    ("transpose + cast fp32->fp16", ((16384, 16384), (2048, 2048), (50, 40)), "float32", lambda a, xp: a.T, "float16"),
]
# fmt: on


def _np_dtype(name):
    import ml_dtypes  # noqa: F401  (registers bfloat16 with numpy)

    return np.dtype(name)


def _plan_row(suite, name, base_shape, dtype, view, out_dtype):
    """The planner's decision at full size, from shapes and strides only (no memory)."""
    from gpu_tensor.kernel.copy import broadcast_strides
    from gpu_tensor.kernel.copy_plan import plan_copy

    base = np.lib.stride_tricks.as_strided(
        np.zeros(1, dtype), base_shape, _contig_strides(base_shape, dtype.itemsize)
    )
    src = view(base, np)  # metadata only: never read
    out_dtype = dtype if out_dtype is None else out_dtype
    dst_strides = _contig_strides(src.shape, out_dtype.itemsize)
    plan = plan_copy(
        src.shape,
        dst_strides,
        broadcast_strides(src.shape, src.strides, src.shape),
        out_dtype,
        dtype,
        256 << 20,
        1 << 40,
    )  # 256-byte aligned, like CuPy's pool
    return plan


def _describe(plan):
    return dict(
        path=plan.path,
        variant=plan.variant.name if plan.variant else None,
        index64=plan.index64,
        vec=plan.vec,
        unit=plan.unit,
        coalesced_shape=list(plan.shape),
        reason=plan.reason,
    )


def run_cpu(suite: Suite) -> None:
    from gpu_tensor.kernel import emulate
    from gpu_tensor.kernel.copy import EmulatedCopyKernels, HostLauncher, strided_copy

    rng = np.random.default_rng(0)
    plans = []
    for name, shapes, dt, view, out_dt in CASES:
        dtype = _np_dtype(dt)
        out_dtype = _np_dtype(out_dt) if out_dt else dtype
        plans.append(_plan_row(suite, name, shapes[0], dtype, view, out_dtype))
    if emulate.compiler() is None:
        for (name, *_), plan in zip(CASES, plans, strict=True):
            suite.skip(
                name, "gpu_tensor (emulated)", "no g++ for the host emulation", **_describe(plan)
            )
        return
    host = HostLauncher(
        EmulatedCopyKernels(
            sorted({p.variant for p in plans if p.variant}, key=lambda v: v.name)
            + _small_variants()
        )
    )
    for (name, shapes, dt, view, out_dt), plan in zip(CASES, plans, strict=True):
        dtype = _np_dtype(dt)
        out_dtype = _np_dtype(out_dt) if out_dt else dtype
        base = (rng.integers(-50, 100, int(np.prod(shapes[2]))) / 2).astype(dtype)
        src = view(base.reshape(shapes[2]), np)
        out = np.zeros(src.shape, out_dtype)
        small = strided_copy(out, src, launcher=host)
        correct = bool(np.array_equal(out, src.astype(out_dtype)))
        suite.record(
            name,
            "gpu_tensor (emulated)",
            correct=correct,
            emulated_shape=list(src.shape),
            emulated_path=small.path,
            full_bytes=plan.bytes_moved,
            **_describe(plan),
        )
        if not correct:
            FAILURES.append(f"{name}: emulated kernel result differs from numpy")


def _small_variants():
    """Variants the small emulated cases plan to (they may differ from the full-size plan)."""
    from gpu_tensor.kernel import variants as V

    out = list(V.same_dtype_variants())
    out += list(V.cast_variants(np.float16, np.float32))
    return out


def run_gpu(suite: Suite) -> None:
    from gpu_tensor.kernel.copy import strided_copy

    cp = suite.cupy
    suite.ceiling("d2d")  # measured once, first, on its own buffers
    d2d = "d2d"
    torch = suite.torch if suite.has_torch_cuda else None
    for name, shapes, dt, view, out_dt in CASES:
        dtype = _np_dtype(dt)
        out_dtype = _np_dtype(out_dt) if out_dt else dtype
        shape = suite.choose(shapes[0], shapes[1])
        base = cp.arange(int(np.prod(shape)), dtype=cp.float32).reshape(shape).astype(dtype)
        src = view(base, cp)
        plan = _plan_row(suite, name, shape, dtype, view, out_dtype)
        nbytes = plan.bytes_moved

        def ours(src=src, out_dtype=out_dtype):
            out = cp.empty(src.shape, out_dtype)
            strided_copy(out, src)
            return out

        def peer(src=src, out_dtype=out_dtype):
            return cp.ascontiguousarray(src, dtype=out_dtype)

        matches = bool(cp.array_equal(ours(), peer()))
        if not matches:
            FAILURES.append(f"{name}: gpu_tensor result differs from cupy")
        t = suite.time(ours, sync="cuda")
        suite.record(
            name,
            "gpu_tensor",
            seconds=t,
            nbytes=nbytes,
            ceiling=d2d,
            matches_cupy=matches,
            **_describe(plan),
        )
        t = suite.time(peer, sync="cuda")
        suite.record(name, "cupy.ascontiguousarray", seconds=t, nbytes=nbytes, ceiling=d2d)
        if torch is None:
            suite.skip(name, "torch .contiguous()", suite.peer_reason("torch_cuda"))
        else:
            tsrc = _torch_view(torch, base, src)
            tdt = getattr(torch, str(out_dtype))
            if out_dtype == dtype:
                fn = tsrc.contiguous
                impl = "torch .contiguous()"
            else:

                def fn(tsrc=tsrc, tdt=tdt):
                    return torch.empty(tuple(tsrc.shape), dtype=tdt, device="cuda").copy_(tsrc)

                impl = "torch copy_ (cast)"
            t = suite.time(fn, sync="cuda")
            suite.record(name, impl, seconds=t, nbytes=nbytes, ceiling=d2d)
        del base, src
        cp.get_default_memory_pool().free_all_blocks()


def _torch_view(torch, base, src):
    """The same view as cupy's ``src`` on a torch tensor sharing ``base``'s memory (DLPack):
    the same sizes, element strides (0 for broadcast dims) and offset."""
    t = torch.from_dlpack(base)
    item = base.dtype.itemsize
    return torch.as_strided(
        t,
        tuple(src.shape),
        tuple(s // item for s in src.strides),
        (src.data.ptr - base.data.ptr) // item,
    )


FAILURES: list[str] = []  # wrong results: reported after the table, and the exit status


def main(argv=None):
    FAILURES.clear()
    suite = Suite("copy", argv)
    if suite.device == "cuda":
        run_gpu(suite)
    else:
        run_cpu(suite)
    result = suite.finish()
    if FAILURES:
        raise SystemExit("bench_copy: wrong results:\n  " + "\n  ".join(FAILURES))
    return result


if __name__ == "__main__":
    main()
