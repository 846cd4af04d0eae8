"""A 4-layer MLP training step (forward, cross entropy, backward, fused Adam), eager vs
captured in a CUDA graph and replayed.

    .venv/bin/python -m profiling.bench_graphs [--quick] [--out DIR]
    GPU_TENSOR_FALLBACK=sim .venv/bin/python -m profiling.bench_graphs --quick

Counts per step (any device): gpu_tensor Python functions entered (sys.setprofile; the
simulator's own code and the host emulation it runs kernels with excluded) and, on the simulated CuPy (GPU_TENSOR_FALLBACK=sim), its
kernel launches, cupy routines, driver calls and graph launches. Counts do not depend on
the width, so they use width 64 (the simulator runs every kernel under host emulation).

On a GPU: step time for widths 256, 1024 and 4096 (batch 64), gpu_tensor eager vs graphed
beside torch eager and torch with CUDA graphs when torch sees the GPU, CUDA-event timed.
Without a GPU the timings are skipped with that reason: on the emulated device a "graph"
re-runs the step's Python (graphs_emulated.py), so its time says nothing about replay.
Adam runs with capturable=True in both modes, as a graphed step needs (torch's rule).
"""

from __future__ import annotations

import os

from profiling.harness import Suite

LAYERS = 4
CLASSES = 10
BATCH = 64
WIDTHS_FULL = (256, 1024, 4096)
WIDTHS_QUICK = (256,)
COUNT_WIDTH = 64


def _model(gt, width: int, device: str):
    nn = gt.nn
    gt.manual_seed(0)
    mods = []
    for _ in range(LAYERS - 1):
        mods += [nn.Linear(width, width), nn.ReLU()]
    model = nn.Sequential(*mods, nn.Linear(width, CLASSES)).to(device)
    opt = gt.optim.Adam(model.parameters(), lr=1e-3, capturable=True)
    x = gt.randn(BATCH, width, device=device)
    y = gt.randint(0, CLASSES, (BATCH,), device=device)
    return model, opt, x, y


def _eager(gt, model, opt, x, y):
    def step():
        opt.zero_grad(set_to_none=True)
        gt.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    return step


def _graphed(gt, model, opt, x, y):
    _eager(gt, model, opt, x, y)()  # warm-up: kernels compiled, optimizer state made
    opt.zero_grad(set_to_none=True)
    g = gt.cuda.CUDAGraph()
    with gt.cuda.graph(g):
        loss = gt.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return g.replay


def count(suite: Suite, gt) -> None:
    from gpu_tensor import device as _device
    from gpu_tensor.testing import python_calls

    sim = None
    if _device.cuda_is_simulated():
        from gpu_tensor.testing import sim
    where = (
        "simulated CuPy"
        if sim
        else "GPU"
        if suite.device == "cuda"
        else "emulated cuda (a graph re-runs the step's Python)"
    )
    case = f"per step, width {COUNT_WIDTH} ({where})"
    for impl, make in (("gpu_tensor eager", _eager), ("gpu_tensor graphed", _graphed)):
        step = make(gt, *_model(gt, COUNT_WIDTH, "cuda"))
        step()  # steady state
        gt.cuda.synchronize()
        if sim:
            sim.reset_counters()
        calls = python_calls(step)
        extra = {}
        if sim:
            gt.cuda.synchronize()
            c = sim.counters()
            extra = {
                k: c[k]
                for k in (
                    "kernel_launches",
                    "cupy_routines",
                    "graph_launches",
                    "driver_calls",
                    "device_syncs",
                )
            }
        suite.record(case, impl, python_calls=calls, **extra)


def time_steps(suite: Suite, gt) -> None:
    widths = suite.choose(WIDTHS_FULL, WIDTHS_QUICK)
    for width in widths:
        case = f"step time, width {width}, batch {BATCH}"
        if suite.device != "cuda":
            for impl in ("gpu_tensor eager", "gpu_tensor graphed"):
                suite.skip(case, impl, "GPU timings only on a GPU (profiling/gpu_check.sh)")
            continue
        for impl, make in (("gpu_tensor eager", _eager), ("gpu_tensor graphed", _graphed)):
            step = make(gt, *_model(gt, width, "cuda"))
            suite.record(case, impl, suite.time(step, sync="cuda", repeat=suite.choose(50, 10)))
        _torch_steps(suite, case, width)


def _torch_steps(suite: Suite, case: str, width: int) -> None:
    if not suite.has_torch_cuda:
        for impl in ("torch eager", "torch graphed"):
            suite.skip(case, impl, suite.peer_reason("torch_cuda"))
        return
    for graphed in (False, True):
        step = _torch_step(suite.torch, width, graphed)
        suite.record(
            case,
            "torch graphed" if graphed else "torch eager",
            suite.time(step, sync="cuda", repeat=suite.choose(50, 10)),
        )


def _torch_step(torch, width: int, graphed: bool):
    """torch's step, eager or captured as its docs show (warm-up on a side stream)."""
    torch.manual_seed(0)
    mods = []
    for _ in range(LAYERS - 1):
        mods += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*mods, torch.nn.Linear(width, CLASSES)).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=True)
    x = torch.randn(BATCH, width, device="cuda")
    y = torch.randint(0, CLASSES, (BATCH,), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    if not graphed:
        return step
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    opt.zero_grad(set_to_none=True)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return g.replay


def main(argv=None):
    suite = Suite("graphs", argv, description=__doc__)
    os.environ.setdefault("GPU_TENSOR_FALLBACK", "1")  # no GPU: the emulated device
    import gpu_tensor as gt

    count(suite, gt)
    time_steps(suite, gt)
    return suite.finish()


if __name__ == "__main__":
    main()
