"""One Adam step over a 10M-parameter model: eager vs fused vs torch, against the ceiling.

    .venv/bin/python -m profiling.bench_optim [--quick] [--out DIR]

The model is a stack of Linear-shaped fp32 tensors (weights and biases, 10.2M parameters;
1.0M under --quick), each with a gradient. Bytes per step = what the fused minimum moves:
param, grad, exp_avg, exp_avg_sq read and param, exp_avg, exp_avg_sq written, 28 B per
parameter; the ceiling is that many bytes at the device-to-device copy bandwidth measured
in the same run.

GPU impls: `gpu_tensor eager` (fused=False: about a dozen elementwise kernels per
parameter), `gpu_tensor fused` (one generated kernel per parameter through gt.fuse),
`torch fused=True`, `torch foreach`, timed with CUDA events.

Kernel launches per step are counted by the first counter that applies (COUNTERS):
the simulator's own launch counter (GPU_TENSOR_FALLBACK=sim, where gpu_tensor.testing.sim
exists); on a GPU, every generated elementwise kernel (fusion.eager.launch_graph); with
neither, the fused step through the real-CUDA launch path with each kernel run under host
emulation (g++), which counts the fused step but cannot run the eager one. Counting uses a
model with the same tensors at 1/64 of the size: launches do not depend on sizes.

CPU (no GPU): eager vs fused (numpy evaluation) on the cpu device, and torch's CPU Adam,
timed with perf_counter; the % is of a same-run numpy copy.
"""

from __future__ import annotations

import contextlib
import os

import numpy as np

from profiling.harness import Suite

LAYERS_FULL = [(1024, 1248)] * 8  # 8 x (1024*1248 + 1024) = 10.23M parameters
LAYERS_QUICK = [(512, 496)] * 4  # 1.02M parameters
BYTES_PER_PARAM = 7 * 4  # fp32: p, g, m, v read + p, m, v written
LR = 1e-3


def shapes(layers, scale: int = 1) -> list[tuple]:
    out = []
    for rows, cols in layers:
        out += [(max(rows // scale, 1), max(cols // scale, 1)), (max(rows // scale, 1),)]
    return out


def _host_params(shape_list, seed=0):
    rng = np.random.default_rng(seed)
    return [
        (
            rng.standard_normal(s).astype(np.float32) * 0.02,
            rng.standard_normal(s).astype(np.float32) * 0.01,
        )
        for s in shape_list
    ]


def gt_model(device, shape_list):
    """(params with grads) on `device`."""
    from gpu_tensor.creation import from_numpy

    params = []
    for p, g in _host_params(shape_list):
        t = from_numpy(p).to(device)
        t.grad = from_numpy(g).to(device)
        params.append(t)
    return params


def gt_adam(device, shape_list, fused):
    from gpu_tensor.optim import Adam

    params = gt_model(device, shape_list)
    return Adam(params, lr=LR, fused=fused), params


# -- launch counters (pluggable) ------------------------------------------------------------
class SimCounter:
    """The simulated CuPy's own kernel-launch counter."""

    name = "simulator kernel_launches"

    def available(self) -> bool:
        if os.environ.get("GPU_TENSOR_FALLBACK") != "sim":
            return False
        try:
            from gpu_tensor.testing import sim  # noqa: F401
        except ImportError:
            return False
        return True

    def count(self, step) -> int:
        from gpu_tensor.testing import sim

        sim.synchronize()
        before = sim.counters()["kernel_launches"]
        step()
        sim.synchronize()
        return sim.counters()["kernel_launches"] - before

    can_count_eager = True


class LaunchGraphCounter:
    """Every generated elementwise kernel on real CUDA (eager ops and fused functions both
    launch through fusion.eager.launch_graph)."""

    name = "generated kernels (launch_graph)"
    can_count_eager = True

    def available(self) -> bool:
        from gpu_tensor import device

        return device.real_cuda_available()

    def count(self, step) -> int:
        from gpu_tensor.fusion import eager

        calls = []
        real = eager.launch_graph

        def counted(*args, **kwargs):
            calls.append(1)
            return real(*args, **kwargs)

        eager.launch_graph = counted
        try:
            step()
        finally:
            eager.launch_graph = real
        return len(calls)


class _FakeCudaBackend:
    xp = None
    host_arrays = False  # not host memory: gt.fuse takes its compiled-kernel branch


class HostEmulatedCounter:
    """The fused step through gt.fuse's real-CUDA branch (plan, codegen, argument packing,
    launch), each kernel executed from its CUDA source under host emulation."""

    name = "real-CUDA launch path, kernels under host emulation"
    can_count_eager = False  # eager ops on a cpu tensor never reach a CUDA launch

    def available(self) -> bool:
        from gpu_tensor.kernel import emulate

        return emulate.compiler() is not None

    @contextlib.contextmanager
    def patched(self, launches: list):
        import gpu_tensor.backends as backends
        from gpu_tensor.kernel import compile as kcompile
        from gpu_tensor.kernel import emulate

        def get_kernel(name, source, options=()):
            lib = emulate.build(source, [name])

            def kernel(grid, block, args):
                launches.append(name)
                emulate.launch(lib, name, grid, block, args, serial=True)

            return kernel

        saved = kcompile.get_kernel, kcompile.sm_count, backends.get_backend
        kcompile.get_kernel = get_kernel
        kcompile.sm_count = lambda device_id=None: 2  # a small grid: blocks run in turn
        backends.get_backend = lambda device: _FakeCudaBackend()
        try:
            yield launches
        finally:
            kcompile.get_kernel, kcompile.sm_count, backends.get_backend = saved

    def count(self, step) -> int:
        launches: list = []
        with self.patched(launches):
            step()
        return len(launches)


COUNTERS = [SimCounter(), LaunchGraphCounter(), HostEmulatedCounter()]


def launch_counter():
    return next((c for c in COUNTERS if c.available()), None)


def count_launches(suite: Suite, shape_list) -> None:
    counter = launch_counter()
    case = f"launches per Adam step ({len(shape_list)} parameter tensors)"
    if counter is None:
        suite.skip(case, "gpu_tensor fused", "no launch counter: no simulator, no GPU, no g++")
        return
    device = "cpu" if isinstance(counter, HostEmulatedCounter) else "cuda"
    small = [tuple(max(d, 1) for d in s) for s in shape_list]
    for fused in (True, False):
        impl = "gpu_tensor fused" if fused else "gpu_tensor eager"
        if not fused and not counter.can_count_eager:
            suite.skip(
                case,
                impl,
                f"{counter.name}: cannot count the eager step (run with "
                "GPU_TENSOR_FALLBACK=sim or on a GPU)",
            )
            continue
        opt, _ = gt_adam(device, small, fused)
        opt.step()  # state created and kernels compiled outside the count
        n = counter.count(opt.step)
        suite.record(
            case, impl, launches=n, per_tensor=round(n / len(small), 2), counter=counter.name
        )


# -- timing ------------------------------------------------------------------------------------
def _torch_adam(torch, device, shape_list, **kwargs):
    params = []
    for p, g in _host_params(shape_list):
        t = torch.from_numpy(p).to(device).requires_grad_()
        t.grad = torch.from_numpy(g).to(device)
        params.append(t)
    return torch.optim.Adam(params, lr=LR, **kwargs)


def time_steps(suite: Suite, shape_list) -> None:
    n = sum(int(np.prod(s)) for s in shape_list)
    nbytes = BYTES_PER_PARAM * n
    gpu = suite.device == "cuda"
    case = f"Adam step, {n / 1e6:.1f}M fp32 params" + ("" if gpu else " (CPU)")
    ceiling = "d2d" if gpu else "host"
    sync = "cuda" if gpu else "cpu"
    device = "cuda" if gpu else "cpu"
    repeat = suite.choose(20, 5)
    for fused in (False, True):
        impl = "gpu_tensor fused" if fused else "gpu_tensor eager"
        if not gpu:
            impl += " (numpy eval)" if fused else ""
        opt, _ = gt_adam(device, shape_list, fused)
        suite.record(case, impl, suite.time(opt.step, sync=sync, repeat=repeat), nbytes, ceiling)
        del opt
    if not suite.has_torch:
        suite.skip(case, "torch", suite.peer_reason("torch"))
        return
    torch = suite.torch
    if gpu and not suite.has_torch_cuda:
        suite.skip(case, "torch fused=True", suite.peer_reason("torch_cuda"))
        return
    tdev = "cuda" if gpu else "cpu"
    for label, kwargs in (
        ("torch fused=True", {"fused": True}),
        ("torch foreach", {"foreach": True}),
        ("torch single-tensor", {"foreach": False}),
    ):
        if not gpu and label == "torch foreach":
            continue  # foreach is a GPU code path; on CPU it is the single-tensor loop
        try:
            opt = _torch_adam(torch, tdev, shape_list, **kwargs)
            opt.step()
        except (RuntimeError, TypeError) as exc:  # an older torch without CPU fused Adam
            suite.skip(case, label, f"{type(exc).__name__}: {exc}")
            continue
        # torch runs on the legacy default stream, which the suite's CUDA events also see
        suite.record(case, label, suite.time(opt.step, sync=sync, repeat=repeat), nbytes, ceiling)
        del opt


def main(argv=None):
    suite = Suite("optim", argv, description=__doc__)
    layers = suite.choose(LAYERS_FULL, LAYERS_QUICK)
    shape_list = shapes(layers)
    time_steps(suite, shape_list)
    count_launches(suite, shapes(layers, scale=64))
    return suite.finish()


if __name__ == "__main__":
    main()
