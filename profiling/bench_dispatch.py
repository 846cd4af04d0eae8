"""Per-op dispatch cost: gpu_tensor vs numpy (cpu) and vs raw cupy (cuda), tiny and medium.

    .venv/bin/python -m profiling.bench_dispatch [--quick] [--out DIR]

Each case is one op in a calibrated loop (host time per call, perf_counter, no sync inside
the loop: on a GPU that is the enqueue cost, which is what dispatch overhead is). Sizes:
tiny (16 elements: pure overhead) and medium (64 Ki elements), float32. Peers in the same
run: numpy on cpu; raw cupy on cuda (when a GPU is present); torch (when installed).
Goals (issue 2): cpu <= 2x numpy per tiny op; cuda <= 1.2x raw cupy. `ratio` is ours over
the peer's median. Emulated cuda rows (no GPU) show what the fallback device costs.

`--before DIR` (a checkout of an older tree, e.g. `git archive <rev> | tar -x -C DIR`) adds
the per-op check rows (the autograd check, the modes word): the same tiny ops on 2-element
tensors that need no grad, in fresh processes of both trees, before any tensor required grad
and after one backward ("used"), interleaved in the same run; min of 7 repeats per process,
best of the processes; plus the bytecodes each op executes, which a loaded machine cannot
blur (the modes word adds 2 per entry point).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

from profiling.harness import Suite

TINY, MEDIUM = 16, 64 * 1024


def _cases(mod, x, y):
    """(name, fn) pairs over operands x, y of the library `mod` (gt, numpy or cupy)."""
    if mod == "gt":
        from gpu_tensor.creation import empty
        from gpu_tensor.ops import elementwise as ew

        n = x.shape[0]
        dev = x.device
        return [
            ("x + y", lambda: x + y),
            ("x * 2.0", lambda: x * 2.0),
            ("exp(x)", lambda: x.exp()),
            ("gelu(x)", lambda: ew.gelu(x)),
            ("x > y", lambda: x > y),
            ("x.sum()", lambda: x.sum()),
            ("x[1:] (view)", lambda: x[1:]),
            ("x.view(-1, 4) (view)", lambda: x.view(-1, 4)),
            ("x.view(4, -1).T (view)", lambda: x.view(4, -1).T),
            ("x.view(4,-1).T.contiguous()", lambda: x.view(4, -1).T.contiguous()),
            ("x.clone()", lambda: x.clone()),
            ("x[None] (view)", lambda: x[None]),
            ("empty(n)", lambda: empty(n, device=dev)),
        ]
    xp = mod
    n = x.shape[0]
    if xp is np:
        import math

        erf = np.vectorize(math.erf, otypes=[np.float32])
        gelu = None if n > TINY else (lambda: 0.5 * x * (1 + erf(x * np.float32(0.70710678))))
    else:
        from cupyx.scipy.special import erf

        gelu = lambda: 0.5 * x * (1 + erf(x * np.float32(0.70710678)))  # noqa: E731
    return [
        ("x + y", lambda: x + y),
        ("x * 2.0", lambda: x * 2.0),
        ("exp(x)", lambda: xp.exp(x)),
        ("gelu(x)", gelu),
        ("x > y", lambda: x > y),
        ("x.sum()", lambda: x.sum()),
        ("x[1:] (view)", lambda: x[1:]),
        ("x.view(-1, 4) (view)", lambda: x.reshape(-1, 4)),
        ("x.view(4, -1).T (view)", lambda: x.reshape(4, -1).T),
        ("x.view(4,-1).T.contiguous()", lambda: xp.ascontiguousarray(x.reshape(4, -1).T)),
        ("x.clone()", lambda: x.copy()),
        ("x[None] (view)", lambda: x[None]),
        ("empty(n)", lambda: xp.empty(n, np.float32)),
    ]


def _torch_cases(torch, x, y):
    n = x.shape[0]
    return {
        "x + y": lambda: x + y,
        "x * 2.0": lambda: x * 2.0,
        "exp(x)": lambda: x.exp(),
        "gelu(x)": lambda: torch.nn.functional.gelu(x),
        "x > y": lambda: x > y,
        "x.sum()": lambda: x.sum(),
        "x[1:] (view)": lambda: x[1:],
        "x.view(-1, 4) (view)": lambda: x.view(-1, 4),
        "x.view(4, -1).T (view)": lambda: x.view(4, -1).T,
        "x.view(4,-1).T.contiguous()": lambda: x.view(4, -1).T.contiguous(),
        "x.clone()": lambda: x.clone(),
        "x[None] (view)": lambda: x[None],
        "empty(n)": lambda: torch.empty(n, device=x.device),
    }


def _time(suite, fn, sync):
    # many short samples: the median then shrugs off a loaded machine's stalls
    return suite.time(fn, sync=sync, warmup=50, repeat=suite.choose(41, 21), number=None)


def _run_device(suite, label, device, peer_name, peer_mod, sizes, sync):
    from gpu_tensor.creation import from_numpy

    rng = np.random.default_rng(0)
    for n in sizes:
        hx = rng.standard_normal(n).astype(np.float32)
        hy = rng.standard_normal(n).astype(np.float32)
        gx, gy = from_numpy(hx).to(device), from_numpy(hy).to(device)
        px, py = (
            (hx, hy) if peer_mod in (np, None) else (peer_mod.asarray(hx), peer_mod.asarray(hy))
        )
        ours = _cases("gt", gx, gy)
        peers = dict(_cases(peer_mod, px, py)) if peer_mod is not None else {}
        for name, fn in ours:
            case = f"{name} [{n}]"
            t = _time(suite, fn, sync)
            peer_fn = peers.get(name)
            ratio = None
            if peer_mod is not None:
                if peer_fn is None:
                    suite.skip(
                        case,
                        peer_name,
                        "no direct peer at this size (numpy has no erf;"
                        " a vectorised math.erf is timed on tiny inputs only)",
                    )
                else:
                    pt = _time(suite, peer_fn, sync)
                    suite.record(case, peer_name, seconds=pt)
                    ratio = round(t.median / pt.median, 2)
            suite.record(case, label, seconds=t, ratio=ratio)


def _run_torch(suite, sizes):
    if not suite.has_torch:
        suite.skip("all cases", "torch", suite.peer_reason("torch"))
        return
    torch = suite.torch
    dev = "cuda" if suite.has_torch_cuda else "cpu"
    for n in sizes:
        x, y = torch.randn(n, device=dev), torch.randn(n, device=dev)
        for name, fn in _torch_cases(torch, x, y).items():
            suite.record(f"{name} [{n}]", f"torch ({dev})", seconds=_time(suite, fn, "cpu"))


def _run_creation(suite):
    """gt.tensor(nested list of 10**5 Python floats) against np.array of the same list
    (goal: within 2x), and torch.tensor where installed."""
    from gpu_tensor.creation import tensor

    data = [[float(i * 100 + j) for j in range(100)] for i in range(1000)]
    case = "tensor(list 1000x100 floats)"
    peer = suite.time(lambda: np.array(data), sync="cpu", warmup=3, repeat=suite.choose(21, 7))
    suite.record(case, "numpy", seconds=peer)
    t = suite.time(lambda: tensor(data), sync="cpu", warmup=3, repeat=suite.choose(21, 7))
    suite.record(case, "gpu_tensor (cpu)", seconds=t, ratio=round(t.median / peer.median, 2))
    if suite.has_torch:
        suite.record(
            case,
            "torch (cpu)",
            seconds=suite.time(
                lambda: suite.torch.tensor(data), sync="cpu", warmup=3, repeat=suite.choose(21, 7)
            ),
        )


# Timed in a child process per (tree, phase): `import gpu_tensor` picks the tree from
# PYTHONPATH. The lambda's own call (~40 ns) is in every row, in both trees alike.
_CHILD = """
import json, sys, timeit
import gpu_tensor as gt
phase, number = sys.argv[1], int(sys.argv[2])
a, b, c = gt.ones(2), gt.ones(2), gt.ones(2)
f = gt.fuse(lambda x, y: x * y + 1.0)
if phase == "used":
    w = gt.ones(2, requires_grad=True)
    (w * w).sum().backward()
cases = {"a + b": lambda: a + b, "gt.mul(a, b)": lambda: gt.mul(a, b),
         "a * 2.0": lambda: a * 2.0, "a.exp()": lambda: a.exp(), "a.t()": lambda: a.t(),
         "a.view(2, 1)": lambda: a.view(2, 1), "a[1:]": lambda: a[1:],
         "a.sum()": lambda: a.sum(), "gt.zeros(2)": lambda: gt.zeros(2),
         "c.add_(b)": lambda: c.add_(b), "f(a, b) (@gt.fuse)": lambda: f(a, b)}


def bytecodes(fn):  # executed per call: deterministic, where time on a loaded host is not
    n = [0]

    def tracer(frame, event, arg):
        frame.f_trace_opcodes, frame.f_trace_lines = True, False
        n[0] += event == "opcode"
        return tracer
    fn()
    sys.settrace(tracer)
    fn()
    sys.settrace(None)
    return n[0]  # the lambda's own bytecodes included (the same in both trees)


print(json.dumps({k: [min(timeit.Timer(f).repeat(7, number)) / number, bytecodes(f)]
                  for k, f in cases.items()}))
"""


def _child(tree, phase, number):
    env = dict(os.environ, PYTHONPATH=str(tree))
    r = subprocess.run(
        [sys.executable, "-c", _CHILD, phase, str(number)],
        cwd=str(tree),
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return json.loads(r.stdout)


def _run_grad_check(suite, before):
    """Before/after rows for the call-time autograd check (see the module docstring)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = {"before": before, "after": here}
    number = suite.choose(20000, 5000)
    best: dict = {}
    codes: dict = {}
    for _ in range(suite.choose(3, 2)):  # interleaved: load drifts hit both trees alike
        for label, tree in trees.items():
            for phase in ("fresh", "used"):
                for case, (sec, ops) in _child(tree, phase, number).items():
                    key = (case, label, phase)
                    best[key] = min(best.get(key, sec), sec)
                    codes[key] = ops
    for (case, label, phase), sec in sorted(best.items()):
        base = best[(case, "before", "fresh")]
        suite.record(
            f"{case} [2], autograd {phase}",
            f"gpu_tensor {label} (cpu)",
            seconds=sec,
            delta_ns=round((sec - base) * 1e9),
            bytecodes=codes[(case, label, phase)],
            delta_bytecodes=codes[(case, label, phase)] - codes[(case, "before", phase)],
        )


def _add_arguments(parser):
    parser.add_argument(
        "--before", default=None, help="an older tree to compare the autograd check with"
    )


def main(argv=None):
    suite = Suite("dispatch", argv, description=__doc__, add_arguments=_add_arguments)
    if suite.args.before:
        _run_grad_check(suite, suite.args.before)
    sizes = suite.choose([TINY, MEDIUM], [TINY, MEDIUM])
    _run_device(suite, "gpu_tensor (cpu)", "cpu", "numpy", np, sizes, "cpu")
    if suite.has_cupy_gpu:
        _run_device(suite, "gpu_tensor (cuda)", "cuda", "cupy", suite.cupy, sizes, "cpu")
    else:
        suite.skip("cuda cases", "cupy", suite.peer_reason("cupy_gpu"))
        import os

        os.environ.setdefault("GPU_TENSOR_FALLBACK", "1")
        from gpu_tensor import _env

        if _env.fallback():
            _run_device(suite, "gpu_tensor (emulated cuda)", "cuda", "numpy", None, [TINY], "cpu")
    _run_torch(suite, sizes)
    _run_creation(suite)
    return suite.finish()


if __name__ == "__main__":
    main()
