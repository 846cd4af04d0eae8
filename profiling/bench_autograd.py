"""One MLP training step (forward + backward + SGD) with gpu_tensor autograd, against the
same step written by hand (numpy on cpu, cupy on a GPU: the same math with no graph) and
torch on the same device when installed.

    .venv/bin/python -m profiling.bench_autograd [--quick] [--out DIR]

Model: x[B, D] -> relu(x @ W1.T + b1) -> @ W2.T + b2 -> mean squared error; float32.
`ratio` is ours over the hand-written step: the price of recording and walking the graph.
A forward-only row under no_grad shows the forward's own share. The "plain" rows time
tiny ops on tensors that do not require grad before and after autograd is activated (the
wrappers' cost; before activation the ops are the untouched plain functions).
"""

from __future__ import annotations

import numpy as np

from profiling.harness import Suite

LR = 0.01  # any small step: the timing does not depend on it


def _shapes(suite):
    # (batch, in, hidden, out): tiny exposes per-op overhead, the larger one the math
    return suite.choose([(64, 256, 512, 10), (256, 1024, 2048, 256)],
                        [(64, 256, 512, 10)])


def _data(b, d, h, o):
    rng = np.random.default_rng(0)
    f = np.float32
    return (rng.standard_normal((b, d)).astype(f), rng.standard_normal((b, o)).astype(f),
            (rng.standard_normal((h, d)) * 0.05).astype(f), np.zeros(h, f),
            (rng.standard_normal((o, h)) * 0.05).astype(f), np.zeros(o, f))


def _gt_step(device, arrays):
    import gpu_tensor as gt
    from gpu_tensor import autograd

    x, y, w1, b1, w2, b2 = (gt.tensor(a, device=device) for a in arrays)
    params = [p.requires_grad_() for p in (w1, b1, w2, b2)]

    def forward():
        return (((x @ w1.T + b1).relu() @ w2.T + b2 - y) ** 2).mean()

    def step():
        loss = forward()
        loss.backward()
        with autograd.no_grad():
            for p in params:
                p -= LR * p.grad
                p.grad = None
        return loss

    def infer():
        with autograd.no_grad():
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


def _torch_step(torch, dev, arrays):
    x, y, w1, b1, w2, b2 = (torch.tensor(a, device=dev) for a in arrays)
    params = [p.requires_grad_() for p in (w1, b1, w2, b2)]

    def step():
        loss = (((x @ w1.T + b1).relu() @ w2.T + b2 - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            for p in params:
                p -= LR * p.grad
                p.grad = None
        return loss

    return step


def _time(suite, fn, sync):
    return suite.time(fn, sync=sync, warmup=3, repeat=suite.choose(20, 10))


def _run(suite, label, device, peer_label, peer_xp, sync):
    for shape in _shapes(suite):
        b, d, h, o = shape
        case = f"mlp step B={b} {d}->{h}->{o}"
        arrays = _data(*shape)
        step, infer = _gt_step(device, arrays)
        t = _time(suite, step, sync)
        ratio = None
        if peer_xp is not None:
            pt = _time(suite, _manual_step(peer_xp, arrays), sync)
            suite.record(case, peer_label, seconds=pt)
            ratio = round(t.median / pt.median, 2)
        suite.record(case, label, seconds=t, ratio=ratio)
        suite.record(f"forward only, no_grad B={b} {d}->{h}->{o}", label,
                     seconds=_time(suite, infer, sync))


def _run_torch(suite):
    if not suite.has_torch:
        suite.skip("mlp step", "torch", suite.peer_reason("torch"))
        return
    torch = suite.torch
    dev = "cuda" if suite.has_torch_cuda else "cpu"
    for shape in _shapes(suite):
        b, d, h, o = shape
        step = _torch_step(torch, dev, _data(*shape))

        def run(step=step):
            step()
            if dev == "cuda":  # inside the clock: torch's own stream, not the harness's
                torch.cuda.synchronize()

        suite.record(f"mlp step B={b} {d}->{h}->{o}", f"torch ({dev})",
                     seconds=_time(suite, run, "cpu"))


def _dispatch_cost(suite):
    """What activation costs code that does not use gradients: a tiny op on plain tensors
    timed before the first tensor that requires grad exists, then after (same process)."""
    import gpu_tensor as gt
    from gpu_tensor.autograd import install

    if install.ACTIVE:
        suite.skip("plain x + y [16]", "gpu_tensor (cpu)", "autograd already active")
        return
    x, y = gt.ones(16), gt.ones(16)
    cases = {"plain x + y [16]": lambda: x + y, "plain x.sum() [16]": lambda: x.sum(),
             "plain x[1:] [16] (view)": lambda: x[1:]}
    before = {k: suite.time(f, sync="cpu", warmup=50, repeat=21, number=None)
              for k, f in cases.items()}
    gt.zeros(1, requires_grad=True)  # activates autograd for the rest of the process
    for k, f in cases.items():
        t = suite.time(f, sync="cpu", warmup=50, repeat=21, number=None)
        suite.record(k, "gpu_tensor, autograd not active", seconds=before[k])
        suite.record(k, "gpu_tensor, autograd active", seconds=t,
                     ratio=round(t.median / before[k].median, 2))


def main(argv=None):
    suite = Suite("autograd", argv, description=__doc__)
    _dispatch_cost(suite)
    _run(suite, "gpu_tensor (cpu)", "cpu", "numpy by hand", np, "cpu")
    if suite.has_cupy_gpu:
        _run(suite, "gpu_tensor (cuda)", "cuda", "cupy by hand", suite.cupy, "cuda")
    else:
        suite.skip("cuda cases", "cupy", suite.peer_reason("cupy_gpu"))
    _run_torch(suite)
    return suite.finish()


if __name__ == "__main__":
    main()
