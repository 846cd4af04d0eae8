"""Training steps as a user's CI runs them: torch CPU vs gpu_tensor cpu vs emulated cuda.

    .venv/bin/python -m profiling.bench_train [--quick] [--out DIR]
        [--torch-python PY] [--before DIR]

Models (Adam, cross_entropy, one step = zero_grad, forward, loss, backward, step):
- mlp: 784-256-256-10, batch 64;
- cnn: 2 x (conv 3x3, BatchNorm, ReLU, max-pool 2), Linear, 3x32x32, batch 32;
- deep_mlp: 17 Linear layers of width 32, batch 8 (dispatch-bound);
- demo: `gpu-tensor demo`'s classifier (Flatten, 12288-256-10), batch 32.
Single ops: x.sum() and x.t().contiguous() of 1 M float32; an Adam step over 10.2 M
parameters (1.0 M under --quick) against torch's fused=True.

Each framework runs in a worker process of its own, kept warm and driven over a pipe, one
thread each (OMP/OPENBLAS/MKL_NUM_THREADS=1, torch.set_num_threads(1)); the emulated device
needs its own process (GPU_TENSOR_FALLBACK is read once per process). Rounds interleave
every worker on every case, so a busy neighbour on a shared machine slows all of them
alike; a row's time is the median over all its samples. torch runs in this interpreter
when it imports torch, else in `--torch-python`; without either its rows are skipped.
`--before DIR` (an older tree, e.g. `git archive <rev> | tar -x -C DIR`) adds that tree's
cpu and emulated rows to the same rounds. The pivot table prints each time and its ratio
to torch. Goals (issue 30): gt cpu <= 1.5x torch, emulated cuda <= 2x, per row.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
ONE_THREAD = {k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
MODELS = ("mlp", "cnn", "deep_mlp", "demo")
OPS = ("x.sum() 1M fp32", "x.t().contiguous() 1M fp32", "adam")
ADAM_LAYERS = {False: [(1024, 1248)] * 8, True: [(512, 496)] * 4}  # 10.23 M / 1.02 M params
CALLS_PER_SAMPLE = 20  # single ops: calls per timed sample (each ~0.1-1 ms)


# -- the worker: one framework, one device, driven over stdin/stdout -------------------------
def _model(mod, name):
    """(model, input shape, batch) of `name`, built with `mod` (torch or gpu_tensor: the
    same code, as gpu_tensor follows torch's API)."""
    nn = mod.nn
    if name == "mlp":
        return nn.Sequential(
            nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)
        ), (64, 784)
    if name == "cnn":
        return nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(32 * 8 * 8, 10),
        ), (32, 3, 32, 32)
    if name == "deep_mlp":
        layers = [nn.Linear(32, 32)]
        for _ in range(16):
            layers += [nn.ReLU(), nn.Linear(32, 32)]
        return nn.Sequential(*layers), (8, 32)
    if name == "demo":
        return nn.Sequential(
            nn.Flatten(), nn.Linear(3 * 64 * 64, 256), nn.ReLU(), nn.Linear(256, 10)
        ), (32, 3, 64, 64)
    raise ValueError(f"unknown model {name!r}")


def _setup(mod, device, case, quick):
    """A no-argument callable doing one timed unit of `case`, and calls per unit."""
    rng = np.random.default_rng(0)
    if case in MODELS:
        model, shape = _model(mod, case)
        model = model.to(device)
        x = mod.from_numpy(rng.standard_normal(shape).astype(np.float32)).to(device)
        y = mod.from_numpy(rng.integers(0, 10, shape[0])).to(device)
        opt = mod.optim.Adam(model.parameters(), lr=1e-3)
        F = mod.nn.functional

        def step():
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()

        return step, 1
    if case.startswith("x."):
        x = mod.from_numpy(rng.standard_normal((1000, 1000)).astype(np.float32)).to(device)
        fn = (lambda: x.sum()) if case.startswith("x.sum") else (lambda: x.t().contiguous())
        return fn, CALLS_PER_SAMPLE
    if case == "adam":
        params = []
        for rows, cols in ADAM_LAYERS[quick]:
            for s in ((rows, cols), (rows,)):
                p = mod.from_numpy(rng.standard_normal(s).astype(np.float32)).to(device)
                p.requires_grad_(True)
                p.grad = mod.from_numpy(rng.standard_normal(s).astype(np.float32)).to(device)
                params.append(p)
        kw = {"fused": True} if mod.__name__ == "torch" else {}
        opt = mod.optim.Adam(params, lr=1e-3, **kw)
        return opt.step, 1
    raise ValueError(f"unknown case {case!r}")


def worker(framework: str, device: str, quick: bool) -> None:
    """Serve {"case", "n"} requests on stdin with {"times": [...]} (seconds per call)."""
    if framework == "torch":
        import torch as mod

        mod.set_num_threads(1)
    else:
        import gpu_tensor as mod
    cases = {}
    out = sys.stdout
    sys.stdout = sys.stderr  # (nothing the frameworks print can corrupt the replies)
    for line in sys.stdin:
        req = json.loads(line)
        try:
            case = req["case"]
            if case not in cases:
                cases[case] = _setup(mod, device, case, quick)
                for _ in range(2):  # warm-up: state made, caches filled
                    cases[case][0]()
            fn, calls = cases[case]
            times = []
            for _ in range(req["n"]):
                with mod.no_grad() if case.startswith("x.") else _nothing():
                    t0 = time.perf_counter()
                    for _ in range(calls):
                        fn()
                    times.append((time.perf_counter() - t0) / calls)
            reply = {"times": times}
        except Exception as exc:  # reported as the row's skip reason
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(reply) + "\n")
        out.flush()


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# -- the driver ------------------------------------------------------------------------------
class _Worker:
    def __init__(self, label, python, framework, device, tree, quick):
        self.label = label
        env = dict(os.environ, **ONE_THREAD, PYTHONUNBUFFERED="1")
        env.pop("GPU_TENSOR_FALLBACK", None)
        if device == "cuda":
            env["GPU_TENSOR_FALLBACK"] = "1"
        # the tree's gpu_tensor first; this file is run by path, so its profiling/ is
        # not imported from the tree (an older tree may have none of it)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree), env.get("PYTHONPATH")]))
        cmd = [python, str(Path(__file__).resolve()), "--worker", framework, device]
        cmd += ["--quick"] if quick else []
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd="/"
        )
        self.error = None

    def run(self, case, n):
        self.proc.stdin.write(json.dumps({"case": case, "n": n}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            return {"error": f"worker exited (code {self.proc.wait()})"}
        return json.loads(line)

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def _torch_python(suite) -> tuple[str | None, str]:
    if suite.args.torch_python:
        return suite.args.torch_python, f"torch from {suite.args.torch_python}"
    if suite.has_torch:
        return sys.executable, "torch in this interpreter"
    return None, "torch is not importable here; pass --torch-python PATH"


def _add_arguments(p):
    p.add_argument("--torch-python", default=None, help="an interpreter that imports torch")
    p.add_argument(
        "--before",
        type=Path,
        default=None,
        help="an older gpu_tensor tree: its cpu and emulated rows join the rounds",
    )
    p.add_argument("--rounds", type=int, default=None, help="interleaved rounds")
    p.add_argument(
        "--cases",
        default="",
        help=f"comma-separated subset of {', '.join(MODELS + ('sum', 't', 'adam'))}",
    )


def _case_name(case, quick):
    if case == "adam":
        n = sum(r * c + r for r, c in ADAM_LAYERS[quick])
        return f"Adam step {n / 1e6:.1f}M params (torch fused=True)"
    return {
        "mlp": "MLP 784-256-256-10 b64",
        "cnn": "CNN 2conv+BN+pool 3x32x32 b32",
        "deep_mlp": "17-layer MLP w32 b8",
        "demo": "demo MLP 12288-256-10 b32",
    }.get(case, case)


def main(argv=None) -> int:
    from profiling.harness import Suite, Timing
    from profiling.tables import fmt_seconds, markdown_table

    suite = Suite("train", argv, description=__doc__.split("\n\n")[0], add_arguments=_add_arguments)
    quick = suite.quick
    workers = []
    torch_py, why = _torch_python(suite)
    if torch_py:
        workers.append(_Worker("torch", torch_py, "torch", "cpu", REPO_ROOT, quick))
    trees = [("", REPO_ROOT)] + ([(" before", suite.args.before)] if suite.args.before else [])
    for tag, tree in trees:
        workers.append(_Worker(f"gpu_tensor{tag} (cpu)", sys.executable, "gt", "cpu", tree, quick))
        workers.append(
            _Worker(f"gpu_tensor{tag} (emulated cuda)", sys.executable, "gt", "cuda", tree, quick)
        )
    cases = list(MODELS) + list(OPS)
    if suite.args.cases:
        wanted = {c.strip() for c in suite.args.cases.split(",")}
        cases = [c for c in cases if c in wanted or c.split("(")[0].removeprefix("x.") in wanted]
    rounds = suite.args.rounds or suite.choose(5, 2)
    per_round = suite.choose(6, 3)
    samples = {(c, w.label): [] for c in cases for w in workers}
    errors = {}
    try:
        for r in range(rounds):
            if r >= 1 and suite.over_budget:
                break
            for case in cases:
                for w in workers:
                    if (case, w.label) in errors:
                        continue
                    n = max(1, per_round // 2) if case == "adam" else per_round
                    reply = w.run(case, n)
                    if "error" in reply:
                        errors[(case, w.label)] = reply["error"]
                    else:
                        samples[(case, w.label)] += reply["times"]
    finally:
        for w in workers:
            w.close()
    medians = {}
    for case in cases:
        name = _case_name(case, quick)
        if not torch_py:
            suite.skip(name, "torch", why)
        for w in workers:
            key = (case, w.label)
            if key in errors:
                suite.skip(name, w.label, errors[key])
                continue
            s = samples[key]
            medians[key] = statistics.median(s)
            ref = medians.get((case, "torch"))
            extra = {"x_torch": round(medians[key] / ref, 2)} if ref and w.label != "torch" else {}
            suite.record(name, w.label, seconds=Timing.from_samples(s, "perf_counter", 1), **extra)
    labels = [w.label for w in workers]
    body = []
    for case in cases:
        ref = medians.get((case, "torch"))
        row = [_case_name(case, quick)]
        for label in labels:
            t = medians.get((case, label))
            cell = "—" if t is None else fmt_seconds(t)
            if t is not None and ref and label != "torch":
                cell += f" ({t / ref:.1f}×)"
            row.append(cell)
        body.append(row)
    print("\n" + markdown_table(["case"] + labels, body))
    suite.finish()
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3], "--quick" in sys.argv[4:])
    else:
        sys.path.insert(0, str(REPO_ROOT))
        sys.exit(main())
