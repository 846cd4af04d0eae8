"""One MLP training step (forward + backward + SGD) with gpu_tensor autograd, against the
same step written by hand (numpy on cpu, cupy on a GPU: the same math with no graph) and
torch on the same device when installed.

    .venv/bin/python -m profiling.bench_autograd [--quick] [--out DIR]

Model: x[B, D] -> relu(x @ W1.T + b1) -> @ W2.T + b2 -> mean squared error; float32.
`ratio` is ours over the hand-written step: the price of recording and walking the graph.
A forward-only row under no_grad shows the forward's own share. The "record" rows time the
cost of recording one node (`y = y * 1.0001`, CHAIN times from a 4-element leaf) against
torch in the same run, with the same chain under no_grad and its backward.
(The cost of the autograd check on tensors that need no grad is in bench_dispatch.py.)
"""

from __future__ import annotations

import numpy as np

from profiling.harness import Suite

LR = 0.01  # any small step: the timing does not depend on it


def _shapes(suite):
    # (batch, in, hidden, out): tiny exposes per-op overhead, the larger one the math
    return suite.choose([(64, 256, 512, 10), (256, 1024, 2048, 256)], [(64, 256, 512, 10)])


def _data(b, d, h, o):
    rng = np.random.default_rng(0)
    f = np.float32
    return (
        rng.standard_normal((b, d)).astype(f),
        rng.standard_normal((b, o)).astype(f),
        (rng.standard_normal((h, d)) * 0.05).astype(f),
        np.zeros(h, f),
        (rng.standard_normal((o, h)) * 0.05).astype(f),
        np.zeros(o, f),
    )


def _autograd_step(m, device, arrays):
    """(step, infer) of the MLP with `m`'s autograd (gpu_tensor or torch, the same code)."""
    x, y, w1, b1, w2, b2 = (m.tensor(a, device=device) for a in arrays)
    params = [p.requires_grad_() for p in (w1, b1, w2, b2)]

    def forward():
        return (((x @ w1.T + b1).relu() @ w2.T + b2 - y) ** 2).mean()

    def step():
        loss = forward()
        loss.backward()
        with m.no_grad():
            for p in params:
                p -= LR * p.grad
                p.grad = None
        return loss

    def infer():
        with m.no_grad():
            return forward()

    return step, infer


def _manual_step(xp, arrays):
    """The same step with hand-derived gradients: the floor for any autograd."""
    x, y, w1, b1, w2, b2 = (xp.asarray(a) for a in arrays)
    n = y.size

    def step():
        pre = x @ w1.T + b1
        h = xp.maximum(pre, 0)
        diff = h @ w2.T + b2 - y
        loss = (diff * diff).mean()
        g = diff * (2.0 / n)
        gw2, gb2 = g.T @ h, g.sum(0)
        gh = (g @ w2) * (pre > 0)
        gw1, gb1 = gh.T @ x, gh.sum(0)
        for p, gp in ((w1, gw1), (b1, gb1), (w2, gw2), (b2, gb2)):
            p -= LR * gp
        return loss

    return step


def _time(suite, fn, sync):
    return suite.time(fn, sync=sync, warmup=3, repeat=suite.choose(20, 10))


def _run(suite, label, device, peer_label, peer_xp, sync):
    import gpu_tensor as gt  # imported once the harness has set the device up

    for shape in _shapes(suite):
        b, d, h, o = shape
        case = f"mlp step B={b} {d}->{h}->{o}"
        arrays = _data(*shape)
        step, infer = _autograd_step(gt, device, arrays)
        t = _time(suite, step, sync)
        pt = None if peer_xp is None else _time(suite, _manual_step(peer_xp, arrays), sync)
        suite.record_vs(case, label, t, peer_label, pt)
        suite.record(
            f"forward only, no_grad B={b} {d}->{h}->{o}", label, seconds=_time(suite, infer, sync)
        )


def _run_torch(suite):
    if not suite.has_torch:
        suite.skip("mlp step", "torch", suite.peer_reason("torch"))
        return
    torch = suite.torch
    dev = "cuda" if suite.has_torch_cuda else "cpu"
    for shape in _shapes(suite):
        b, d, h, o = shape
        step, _ = _autograd_step(torch, dev, _data(*shape))

        def run(step=step):
            step()
            if dev == "cuda":  # inside the clock: torch's own stream, not the harness's
                torch.cuda.synchronize()

        suite.record(
            f"mlp step B={b} {d}->{h}->{o}", f"torch ({dev})", seconds=_time(suite, run, "cpu")
        )


CHAIN = 20000  # ops per chain: y = y * 1.0001 on a 4-element leaf (the probe)


def _chain(mod, x):
    y = x
    for _ in range(CHAIN):
        y = y * 1.0001
    return y


def _recording_cost(suite):
    """Per-op cost of recording a node: a chain of CHAIN multiplications from a leaf that
    requires grad (ours, and torch's in the same run); then the same chain under no_grad
    (the op alone) and its backward, all per op."""
    import gpu_tensor as gt

    peers = [("gpu_tensor (cpu)", gt, gt.ones(4, requires_grad=True))]
    if suite.has_torch:
        torch = suite.torch
        peers.append(("torch (cpu)", torch, torch.ones(4, requires_grad=True)))
    else:
        suite.skip("record y * 1.0001 (per op)", "torch", suite.peer_reason("torch"))
    base = {}
    for label, mod, x in peers:
        rec = suite.time(
            lambda m=mod, x=x: _chain(m, x),
            sync="cpu",
            warmup=1,
            repeat=suite.choose(7, 3),
            number=1,
        )

        def no_grad(m=mod, x=x):
            with m.no_grad():
                _chain(m, x)

        plain = suite.time(no_grad, sync="cpu", warmup=1, repeat=suite.choose(7, 3), number=1)
        back = _backward_median(mod, x, suite.choose(5, 3))
        for case, sec in (
            ("record y * 1.0001 (per op)", rec.median),
            ("no_grad y * 1.0001 (per op)", plain.median),
            ("backward of the chain (per op)", back),
        ):
            per_op = sec / CHAIN
            ratio = None
            if label.startswith("torch"):
                ratio = round(base[case] / per_op, 2)  # ours over torch's
            else:
                base[case] = per_op
            suite.record(case, label, seconds=per_op, ratio_ours_over_torch=ratio)


def _backward_median(mod, x, repeat) -> float:
    """Median seconds of backward() through a fresh chain (the chain is built untimed)."""
    import statistics
    import time

    times = []
    for _ in range(repeat):
        y = _chain(mod, x).sum()
        t0 = time.perf_counter()
        y.backward()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None):
    suite = Suite("autograd", argv, description=__doc__)
    _recording_cost(suite)
    _run(suite, "gpu_tensor (cpu)", "cpu", "numpy by hand", np, "cpu")
    if suite.has_cupy_gpu:
        _run(suite, "gpu_tensor (cuda)", "cuda", "cupy by hand", suite.cupy, "cuda")
    else:
        suite.skip("cuda cases", "cupy", suite.peer_reason("cupy_gpu"))
    _run_torch(suite)
    return suite.finish()


if __name__ == "__main__":
    main()
