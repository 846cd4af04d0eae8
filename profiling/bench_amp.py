"""Mixed precision on torch's AMP recipe network: step time, peak memory and host syncs.

    .venv/bin/python -m profiling.bench_amp [--quick] [--out DIR] [--width N]

The network of pytorch/tutorials' AMP recipe: Linear(W, W) + ReLU, twice, then Linear(W, W)
(W = 4096 on a GPU), batch 512, MSE loss, SGD(lr=1e-3). One training step = zero_grad,
forward, loss, backward, optimizer step. Three ways:

- `fp32`: plain float32;
- `bf16 autocast`: forward and loss under `autocast(device, dtype=bfloat16)`;
- `fp16 autocast + GradScaler`: the recipe's fp16 path (scale, backward, step, update).

Each is timed for gpu_tensor and, in the same run, for torch where it is installed (CUDA
events on a GPU, perf_counter on the CPU). The per-op cost of autocast itself is timed on
tiny cpu tensors: an op autocast leaves alone (`a + b`: the handler's lookup) and one it
casts (`mm`: two casts and the bf16 product), outside and inside a region. Peak memory is the allocator's max allocated
bytes over one step (cuda only). Host syncs per step are counted by the simulated CuPy
(GPU_TENSOR_FALLBACK=sim) over one fp16 + GradScaler step on a small width; torch's
GradScaler with an unfused optimizer syncs once per step (`found_inf.item()`).

`GradScaler.unscale_` + `update` alone is timed over the grads of a deeper stack of
Linear(W, W) layers (UNSCALE_LAYERS, 2 grads each, float32): on cuda gpu_tensor checks and
unscales them in one multi-tensor launch per (device, dtype) group (kernels/amp_unscale.cu),
torch in its `_amp_foreach_non_finite_check_and_unscale_`; `nbytes` counts each grad byte
read and written once. On the simulator the same call's kernel launches and host syncs are
counted.

On a CPU the width defaults to 1024 (512 under --quick): 4096 takes seconds per fp32 step
on a small machine, and bfloat16 on the host is emulated (ml_dtypes), so CPU numbers show the
overhead of autocast, not its speed-up.
"""

from __future__ import annotations

import sys

from profiling.harness import Suite

BATCH = 512
LAYERS = 3
SIM_WIDTH = 64  # the sim counts syncs, which do not depend on sizes
UNSCALE_LAYERS = 16  # 32 grads: the multi-tensor kernel's case


def _width(suite: Suite, argv) -> int:
    if "--width" in argv:
        return int(argv[argv.index("--width") + 1])
    if suite.device == "cuda":
        return 4096
    return suite.choose(1024, 512)


def make_model(lib, width, device):
    layers = []
    for _ in range(LAYERS - 1):
        layers += [lib.nn.Linear(width, width), lib.nn.ReLU()]
    layers.append(lib.nn.Linear(width, width))
    return lib.nn.Sequential(*layers).to(device)


def make_step(lib, width, device, mode, batch=BATCH, **sgd):
    """A closure running one training step of `mode` ('fp32', 'bf16', 'fp16')."""
    lib.manual_seed(0)
    model = make_model(lib, width, device)
    opt = lib.optim.SGD(model.parameters(), lr=1e-3, **sgd)
    x = lib.randn(batch, width, device=device)
    y = lib.randn(batch, width, device=device)
    scaler = lib.amp.GradScaler(device, enabled=(mode == "fp16"))
    dtype = {"bf16": lib.bfloat16, "fp16": lib.float16}.get(mode)

    def step():
        opt.zero_grad(set_to_none=True)
        with lib.autocast(device, dtype=dtype or lib.bfloat16, enabled=dtype is not None):
            loss = lib.nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    return step


def _peak(lib, step) -> int | None:
    cuda = lib.cuda
    if not cuda.is_available():
        return None
    cuda.synchronize()
    cuda.reset_peak_memory_stats()
    step()
    cuda.synchronize()
    return int(cuda.max_memory_allocated())


MODES = (("fp32", "fp32"), ("bf16", "bf16 autocast"), ("fp16", "fp16 autocast + GradScaler"))


def time_steps(suite: Suite, width: int) -> None:
    import gpu_tensor as gt

    device = suite.device
    sync = "cuda" if device == "cuda" else "cpu"
    repeat = suite.choose(10, 3)
    case_of = {m: f"{label}, W={width}, batch {BATCH}" for m, label in MODES}
    for mode, _ in MODES:
        step = make_step(gt, width, device, mode)
        step()  # kernels compiled, state made, outside the clock
        peak = _peak(gt, step) if device == "cuda" else None
        extra = {} if peak is None else {"peak_bytes": peak}
        suite.record(
            case_of[mode],
            "gpu_tensor",
            suite.time(step, sync=sync, warmup=1, repeat=repeat),
            **extra,
        )
        del step
    if not suite.has_torch:
        for mode, _ in MODES:
            suite.skip(case_of[mode], "torch", suite.peer_reason("torch"))
        return
    torch = suite.torch
    if device == "cuda" and not suite.has_torch_cuda:
        for mode, _ in MODES:
            suite.skip(case_of[mode], "torch", suite.peer_reason("torch_cuda"))
        return
    for mode, _ in MODES:
        step = make_step(torch, width, device, mode)
        step()
        peak = _peak(torch, step) if device == "cuda" else None
        extra = {} if peak is None else {"peak_bytes": peak}
        suite.record(
            case_of[mode], "torch", suite.time(step, sync=sync, warmup=1, repeat=repeat), **extra
        )
        del step


def time_overhead(suite: Suite) -> None:
    """Per-op cost of the autocast handler on 8x8 cpu tensors, gpu_tensor beside torch."""
    import gpu_tensor as gt

    libs = [("gpu_tensor", gt)] + ([("torch", suite.torch)] if suite.has_torch else [])
    for impl, lib in libs:
        a = lib.ones(8, 8)
        for label, fn in (
            ("a + b", lambda a=a, lib=lib: lib.add(a, a)),
            ("mm", lambda a=a, lib=lib: lib.mm(a, a)),
        ):
            for region in ("off", "bf16"):
                ctx = lib.autocast("cpu", dtype=lib.bfloat16, enabled=region == "bf16")
                with ctx:
                    t = suite.time(fn, sync="cpu", repeat=suite.choose(20, 5))
                suite.record(f"{label} on 8x8 cpu, autocast {region}", impl, t)


def make_unscale(lib, width, device, layers=UNSCALE_LAYERS):
    """A closure running `scaler.unscale_(opt)` + `scaler.update(new_scale)` over the grads
    of `layers` Linear(width, width); the scale alternates 0.5 / 2 so the grads stay the same
    size (no underflow into subnormals). Returns (closure, grad bytes)."""
    lib.manual_seed(0)
    model = lib.nn.Sequential(*[lib.nn.Linear(width, width) for _ in range(layers)]).to(device)
    ps = list(model.parameters())
    for p in ps:
        p.grad = lib.ones_like(p)
    opt = lib.optim.SGD(ps, lr=1e-3)
    scaler = lib.amp.GradScaler(device, init_scale=0.5)
    scaler.scale(lib.ones((), device=device))
    flip = [2.0]

    def unscale():
        scaler.unscale_(opt)
        flip[0] = 2.0 if flip[0] == 0.5 else 0.5
        scaler.update(new_scale=flip[0])

    return unscale, sum(p.numel() * p.element_size() for p in ps)


def time_unscale(suite: Suite) -> None:
    import gpu_tensor as gt

    device = suite.device
    # 2048 on a GPU: 16 x 4M grads (256 MiB) are plenty to read the kernel's bandwidth, and
    # the layers' host-side init stays within the benchmark's time slot
    width = suite.choose(2048, 512) if device == "cuda" else 512
    sync = "cuda" if device == "cuda" else "cpu"
    case = f"unscale_ + update, {2 * UNSCALE_LAYERS} fp32 grads, W={width}"
    libs = [("gpu_tensor", gt)]
    if suite.has_torch and (device != "cuda" or suite.has_torch_cuda):
        libs.append(("torch", suite.torch))
    else:
        suite.skip(case, "torch", suite.peer_reason("torch_cuda" if suite.has_torch else "torch"))
    for impl, lib in libs:
        fn, nbytes = make_unscale(lib, width, device)
        suite.record(
            case,
            impl,
            suite.time(fn, sync=sync, warmup=2, repeat=suite.choose(20, 5)),
            nbytes=2 * nbytes,
        )
        del fn


def count_syncs(suite: Suite) -> None:
    """Host syncs per fp16 + GradScaler step, through the simulated CuPy."""
    from gpu_tensor import device as dv

    case = f"host syncs per fp16 + GradScaler step (W={SIM_WIDTH})"
    if not dv.cuda_is_simulated():
        suite.skip(
            case, "gpu_tensor", "counted by the simulated CuPy: run with GPU_TENSOR_FALLBACK=sim"
        )
        return
    import gpu_tensor as gt
    from gpu_tensor.testing import sim

    for label, fused in (("gpu_tensor (fused SGD)", None), ("gpu_tensor (fused=False)", False)):
        step = make_step(gt, SIM_WIDTH, "cuda", "fp16", batch=8, fused=fused)
        step()
        sim.reset_counters()
        step()
        c = sim.counters()
        suite.record(
            case,
            label,
            host_syncs=c["host_waits"] + c["device_syncs"],
            kernel_launches=c["kernel_launches"],
            cupy_routines=c["cupy_routines"],
        )
    scaler_case = f"GradScaler.unscale_ of {2 * UNSCALE_LAYERS} fp32 grads (W={SIM_WIDTH})"
    model = gt.nn.Sequential(
        *[gt.nn.Linear(SIM_WIDTH, SIM_WIDTH) for _ in range(UNSCALE_LAYERS)]
    ).to("cuda")
    for p in model.parameters():
        p.grad = gt.ones_like(p)
    opt = gt.optim.SGD(model.parameters(), lr=1e-3)
    scaler = gt.amp.GradScaler("cuda")
    scaler.scale(gt.ones((), device="cuda"))
    for it in range(2):  # the first call uploads the grads' table; the second reuses it
        sim.synchronize()
        sim.reset_counters()
        scaler.unscale_(opt)
        c = sim.counters()
        scaler.update()
        suite.record(
            scaler_case,
            "gpu_tensor" + (" (first call)" if it == 0 else ""),
            host_syncs=c["host_waits"] + c["device_syncs"],
            kernel_launches=c["kernel_launches"],
            memcpy_calls=c["memcpy_calls"],
        )


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    width_arg = []
    if "--width" in argv:
        i = argv.index("--width")
        width_arg, argv = argv[i : i + 2], argv[:i] + argv[i + 2 :]
    suite = Suite("amp", argv, description=__doc__)
    time_steps(suite, _width(suite, width_arg))
    time_overhead(suite)
    time_unscale(suite)
    count_syncs(suite)
    suite.finish()


if __name__ == "__main__":
    main()
