"""What gpu_tensor's own Python costs per warm elementwise op on cuda, with no GPU needed.

    .venv/bin/python -m profiling.bench_host_cost [--quick] [--out DIR]
        [--torch-python PY] [--before DIR]

Without a GPU the real `CudaBackend` runs over the simulated CuPy (GPU_TENSOR_FALLBACK=sim)
as a null device: launches and copies are counted, not run (`sim.set_null_device`). Per
warm op (32×32, the result dropped each call) it reports:

- `own_us`: gpu_tensor's own host µs, measured at the simulator's boundary (issue 23's
  method): every entry point of the simulated CuPy is wrapped by a clock
  (`gpu_tensor/testing/sim/boundary.py`; the outermost simulator frame only, and a callback
  of ours it makes, the allocator, is ours), so own = (wall time of a loop of warm ops −
  time inside the simulator) / ops − the clock's own cost per crossing × crossings per op.
  That cost (the wrapper outside its window) is measured in the same run on a wrapped
  no-op. Before measuring, each op is checked to reach no simulator function past the
  clock and to run none of ours inside it (`BoundaryTimer.uncovered`), else the run fails.
  The 10th percentile over loops of 10 ops. The simulator's objects: the clock times
  their `__new__` (install() gives each simulator class a clocked one), `__init__` and
  `__del__`, but not Python's dispatch between them nor freeing the object after its
  `__del__`. That share is measured per op and taken out too (`objects_us`, `objects`):
  `BoundaryTimer.objects_ns` follows, in one call, each simulator object made and dropped
  outside the clock (weak references; the result's ndarray, MemoryPointer and
  UnownedMemory), then per class makes and drops one with the arguments the op gave it in
  a loop, less a no-op loop, the windows and the clock's cost. It cannot hide our time: a
  class whose making or dropping runs any Python code but the simulator's (our allocator,
  our owner's finaliser) is charged 0 ns, the arguments (our owner among them) outlive
  the loop, and an object made or dropped inside the simulator is left to the clock
  (tests/testing/test_sim_boundary.py). Calling the constructors stays ours (about 0.6 µs
  an op, profiling/host_cost_steps.py; on a GPU these are calls into Cython). Both trees
  (`--before`) are measured with this tree's timer. (cProfile's own time, the previous
  method, is not kept as a column: its cost per call event lands unevenly in the
  functions it profiles, so subtracting an average leaves a bias; it read 20.7 µs for
  `x + y` where the boundary reads 8.4 µs, same tree and machine, and it was seen above
  the unprofiled wall time.)
- `sim_us`: time inside the simulator per op; `crossings`: outermost calls into it;
- `calls`: Python calls under gpu_tensor/ (not testing/) in one warm op, result kept
  (comprehensions and generators count); `bytecodes`: bytecode instructions executed in
  those calls (exact, so load cannot blur a before/after); `launches`: kernel launches;
- `total_us`: wall time per op with no clock installed, simulator included (context only).

Beside it, in the same run: numpy and torch CPU eager for the same op (torch in this
interpreter, else in `--torch-python`, else skipped with the reason), and with `--before
DIR` (a checkout of an older tree) the same gpu_tensor measurement of that tree.

On a GPU (cupy sees a device) it reports host µs per op of gpu_tensor on cuda against
cupy's own op and torch cuda eager instead (perf_counter around the calls, no sync inside).
Goals (issue 23): ≤ 20 calls and ≤ 3 µs own host time per warm op; on a GPU ≤ 1.2× cupy.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
SHAPE = (32, 32)
# case -> the op, on a dict of operands of any framework with torch's API (gpu_tensor, torch)
CASES = {
    "x + y": lambda t: t["x"] + t["y"],
    "x * 2.0": lambda t: t["x"] * 2.0,
    "x + int tensor": lambda t: t["x"] + t["i"],
    "half + float": lambda t: t["h"] + t["x"],
    "broadcast row": lambda t: t["x"] - t["row"],
    "transposed operand": lambda t: t["x_t"] * t["y"],
    "x.exp()": lambda t: t["x"].exp(),
    "x.t().contiguous()": lambda t: t["x_t"].contiguous(),
    "x.half()": lambda t: t["x"].half(),
    "x.clone()": lambda t: t["x"].clone(),
}
NUMPY = {
    "x + y": lambda t: t["x"] + t["y"],
    "x * 2.0": lambda t: t["x"] * np.float32(2.0),
    "x + int tensor": lambda t: t["x"] + t["i"],
    "half + float": lambda t: t["h"] + t["x"],
    "broadcast row": lambda t: t["x"] - t["row"],
    "transposed operand": lambda t: t["x_t"] * t["y"],
    "x.exp()": lambda t: np.exp(t["x"]),
    "x.t().contiguous()": lambda t: np.ascontiguousarray(t["x_t"]),
    "x.half()": lambda t: t["x"].astype(np.float16),  # (a cupy array's spelling too)
    "x.clone()": lambda t: t["x"].copy(),
}


def host_operands() -> dict:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SHAPE).astype(np.float32)
    return {
        "x": x,
        "y": rng.standard_normal(SHAPE).astype(np.float32),
        "i": rng.integers(-5, 5, SHAPE),
        "h": x.astype(np.float16),
        "row": rng.standard_normal(SHAPE[1:]).astype(np.float32),
    }


def _framework_operands(to) -> dict:
    t = {k: to(v) for k, v in host_operands().items()}
    t["x_t"] = t["x"].t() if hasattr(t["x"], "t") else t["x"].T
    return t


def per_call_s(fn, n: int, chunk: int = 10) -> float:
    """Seconds per call of `fn`: the 10th percentile over `n // chunk` loops of `chunk`
    calls (perf_counter; short loops, so on a shared machine most see no preemption)."""
    samples = []
    with _no_gc():
        for _ in range(max(n // chunk, 5)):
            t0 = time.perf_counter()
            for _ in range(chunk):
                fn()
            samples.append((time.perf_counter() - t0) / chunk)
    return _low(samples)


def _low(samples) -> float:
    """The 10th percentile: the samples the rest of the machine disturbed least."""
    return sorted(samples)[len(samples) // 10]


class _no_gc:
    """A cyclic collection inside a timed region charges its cost to whatever runs then."""

    def __enter__(self):
        gc.collect()
        self.was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc):
        if self.was:
            gc.enable()


# -- counting and charging gpu_tensor's own frames ---------------------------------------------
def _ours(pkg: str, sim: str):
    return lambda f: f.startswith(pkg) and not f.startswith(sim)


_ENV = os.sep + os.path.join("gpu_tensor", "_env.py")  # the settings the simulator reads too


def count_calls(fn, ours) -> int:
    """Python calls whose code lies in our files while `fn()` runs (the result is kept);
    settings read by the simulator (gpu_tensor/_env.py called from it) are its own."""
    n = 0

    def prof(frame, event, arg):
        nonlocal n
        if event == "call" and _counted(frame, ours):
            n += 1

    sys.setprofile(prof)
    try:
        keep = fn()
    finally:
        sys.setprofile(None)
    del keep
    return n


def _counted(frame, ours) -> bool:
    """Whether `frame` is ours to count: in our files, and not a setting the simulator reads."""
    if not ours(frame.f_code.co_filename):
        return False
    if frame.f_code.co_filename.endswith(_ENV):
        up = frame.f_back
        while up is not None and up.f_code.co_filename.endswith(_ENV):
            up = up.f_back
        return up is None or ours(up.f_code.co_filename)
    return True


def count_bytecodes(fn, ours) -> int:
    """Bytecode instructions executed in our files while `fn()` runs (the result is kept):
    an exact count of our own work, which machine load cannot blur."""
    n = 0

    def trace(frame, event, arg):
        nonlocal n
        if event == "call":
            if not _counted(frame, ours):
                return None
            frame.f_trace_opcodes = True
            return trace
        if event == "opcode":
            n += 1
        return trace

    sys.settrace(trace)
    try:
        keep = fn()
    finally:
        sys.settrace(None)
    del keep
    return n


def own_seconds(fn, n: int, timer, per_crossing_ns: float, objects_ns=0.0, chunk=10) -> tuple:
    """(own, sim) seconds per call of `fn`: wall time outside the simulator (the boundary
    timer's windows subtracted, its cost outside them per crossing, and `objects_ns` per
    call: the simulator objects' life outside the clock, `BoundaryTimer.objects_ns`), the
    10th percentile over short loops; and the simulator's time per call in that loop."""
    samples = []
    with _no_gc():
        for _ in range(max(n // chunk, 5)):
            timer.reset()
            t0 = time.perf_counter_ns()
            for _ in range(chunk):
                fn()
            wall = time.perf_counter_ns() - t0
            own = wall - timer.ns - per_crossing_ns * timer.crossings - objects_ns * chunk
            samples.append((own / chunk, timer.ns / chunk))
    own, sim_ns = sorted(samples)[len(samples) // 10]
    return own / 1e9, sim_ns / 1e9


# -- workers: one framework each, in their own process -----------------------------------------
def worker(framework: str, n: int, cases: list[str]) -> None:
    """Print one JSON line: case -> measurements, for `framework` (gt | numpy | torch)."""
    out = {}
    if framework == "numpy":
        t = host_operands()
        t["x_t"] = t["x"].T
        for case in cases:
            out[case] = {"us": per_call_s(lambda op=NUMPY[case]: op(t), n) * 1e6}
    elif framework == "torch":
        import torch

        torch.set_num_threads(1)
        t = _framework_operands(torch.from_numpy)
        with torch.no_grad():
            for case in cases:
                out[case] = {"us": per_call_s(lambda op=CASES[case]: op(t), n) * 1e6}
    else:
        out = _gt_worker(n, cases)
    print(json.dumps(out), flush=True)


def _gt_worker(n: int, cases: list[str]) -> dict:
    os.environ["GPU_TENSOR_FALLBACK"] = "sim"
    import gpu_tensor as gt
    from gpu_tensor.testing import sim

    pkg = os.path.dirname(os.path.abspath(gt.__file__)) + os.sep
    ours = _ours(pkg, os.path.join(pkg, "testing") + os.sep)
    sim.set_null_device(True)  # launches counted, not run: the host side alone
    t = _framework_operands(lambda a: gt.from_numpy(a).to("cuda"))
    runs = {case: (lambda op=CASES[case]: op(t)) for case in cases}
    out = {}
    for case, run in runs.items():
        for _ in range(50):
            run()
        sim.reset_counters()
        keep = run()
        launches = sim.counters()["kernel_launches"]
        del keep
        out[case] = {
            "calls": count_calls(run, ours),
            "bytecodes": count_bytecodes(run, ours),
            "launches": launches,
            "total_us": per_call_s(run, n) * 1e6,
        }
    timer = _boundary_timer()
    per_crossing = timer.overhead_ns()
    for case, run in runs.items():
        missed = timer.uncovered(run)
        if missed:
            raise SystemExit(f"bench_host_cost: {case}: the boundary timer misses {missed}")
        objects_ns, objects = timer.objects_ns(run)
        own, in_sim = own_seconds(run, n, timer, per_crossing, objects_ns)
        timer.reset()
        run()
        out[case].update(
            own_us=own * 1e6,
            sim_us=in_sim * 1e6,
            objects_us=objects_ns / 1e3,
            objects=len(objects),
            crossings=timer.crossings,
            timer_ns_per_crossing=per_crossing,
        )
    timer.uninstall()
    return out


def _boundary_timer():
    """The simulator's boundary timer, installed: always this tree's boundary.py, compiled as
    if it were the measured tree's file (an older tree, `--before`, may have none or an
    older one), so both trees are measured by the same clock."""
    import types

    import gpu_tensor.testing.sim as sim_pkg

    name = "gpu_tensor.testing.sim.boundary"
    path = os.path.join(os.path.dirname(sim_pkg.__file__), "boundary.py")
    mod = types.ModuleType(name)
    mod.__file__, mod.__package__ = path, sim_pkg.__name__
    sys.modules[name] = mod
    source = (REPO_ROOT / "gpu_tensor" / "testing" / "sim" / "boundary.py").read_text()
    exec(compile(source, path, "exec"), mod.__dict__)
    return mod.BoundaryTimer().install()


def _spawn(python: str, framework: str, tree: Path, n: int, cases: list[str]) -> dict:
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    env.pop("GPU_TENSOR_FALLBACK", None)
    # the tree's gpu_tensor first; this file runs by path, so no profiling/ of the tree loads
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree), env.get("PYTHONPATH")]))
    cmd = [python, str(Path(__file__).resolve()), "--worker", framework, str(n), *cases]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd="/", timeout=600)
    if r.returncode != 0:
        return {"error": (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]}
    return json.loads(r.stdout.strip().splitlines()[-1])


# -- the run -------------------------------------------------------------------------------------
def _add_arguments(p) -> None:
    p.add_argument(
        "--cases", default=None, help="comma-separated ops to measure (default: all); e.g. 'x + y'"
    )
    p.add_argument(
        "--calls",
        type=int,
        default=None,
        help="op calls per measurement (default 200 under --quick, else 2000)",
    )
    p.add_argument("--torch-python", default=None, help="an interpreter that imports torch")
    p.add_argument(
        "--before",
        default=None,
        type=Path,
        help="an older checkout: its gpu_tensor is measured the same way",
    )


def _torch_python(suite) -> tuple[str | None, str]:
    if suite.args.torch_python:
        return suite.args.torch_python, f"torch from {suite.args.torch_python}"
    if suite.has_torch:
        return sys.executable, "torch in this interpreter"
    return None, "torch is not importable here; pass --torch-python PATH"


def _cases(suite) -> list[str]:
    if not suite.args.cases:
        return list(CASES)
    wanted = [c.strip() for c in suite.args.cases.split(",") if c.strip()]
    unknown = [c for c in wanted if c not in CASES]
    if unknown:
        raise SystemExit(f"bench_host_cost: no case {unknown}; known: {list(CASES)}")
    return wanted


def main(argv=None) -> int:
    from profiling.harness import Suite
    from profiling.tables import markdown_table

    suite = Suite(
        "host_cost", argv, description=__doc__.split("\n\n")[0], add_arguments=_add_arguments
    )
    if suite.has_cupy_gpu:
        _gpu_run(suite)
        suite.finish()
        return 0
    n = suite.args.calls or suite.choose(2000, 200)
    cases = _cases(suite)
    torch_py, why = _torch_python(suite)
    runs = {
        "gpu_tensor (cuda, sim)": _spawn(sys.executable, "gt", REPO_ROOT, n, cases),
        "numpy": _spawn(sys.executable, "numpy", REPO_ROOT, n, cases),
    }
    if torch_py:
        runs["torch (cpu eager)"] = _spawn(torch_py, "torch", REPO_ROOT, n, cases)
    if suite.args.before:
        runs[f"before: gpu_tensor at {suite.args.before}"] = _spawn(
            sys.executable, "gt", suite.args.before.resolve(), n, cases
        )
    table = []
    for case in cases:
        for impl, res in runs.items():
            if "error" in res:
                suite.skip(case, impl, res["error"])
                continue
            m = res[case]
            if "own_us" in m:
                suite.record(
                    case,
                    impl,
                    seconds=m["own_us"] / 1e6,
                    own_us=round(m["own_us"], 2),
                    calls=m["calls"],
                    bytecodes=m["bytecodes"],
                    launches=m["launches"],
                    total_us=round(m["total_us"], 2),
                    sim_us=round(m["sim_us"], 2),
                    crossings=m["crossings"],
                    **(
                        {"objects_us": round(m["objects_us"], 2), "objects": m["objects"]}
                        if "objects_us" in m
                        else {}
                    ),
                )
            else:
                suite.record(case, impl, seconds=m["us"] / 1e6)
        if not torch_py:
            suite.skip(case, "torch (cpu eager)", why)
        row = [case]
        for res in runs.values():
            m = res.get(case) if "error" not in res else None
            row.append(
                "—"
                if m is None
                else (
                    f"{m['own_us']:.2f} µs own / {m['calls']} calls, {m['bytecodes']} bytecodes"
                    f" / {m['launches']} launch"
                    f" ({m['total_us']:.1f} µs with the sim, {m['crossings']} crossings)"
                    if "own_us" in m
                    else f"{m['us']:.2f} µs"
                )
            )
        table.append(row)
    print(markdown_table(["op (32×32, warm)", *runs], table))
    suite.finish()
    return 0


def _gpu_run(suite) -> None:
    """On a GPU: host µs per op, gpu_tensor on cuda against cupy's own op and torch eager."""
    import gpu_tensor as gt

    cp = suite.cupy
    gtt = _framework_operands(lambda a: gt.from_numpy(a).to("cuda"))
    cpt = {k: cp.asarray(v) for k, v in host_operands().items()}
    cpt["x_t"] = cpt["x"].T
    peers = {"gpu_tensor (cuda)": (CASES, gtt), "cupy": (_cupy_cases(), cpt)}
    if suite.has_torch_cuda:
        torch = suite.torch
        peers["torch (cuda eager)"] = (
            CASES,
            _framework_operands(lambda a: torch.from_numpy(a).to("cuda")),
        )
    else:
        for case in _cases(suite):
            suite.skip(case, "torch (cuda eager)", suite.peer_reason("torch_cuda"))
    pkg = os.path.dirname(os.path.abspath(gt.__file__)) + os.sep
    ours = _ours(pkg, os.path.join(pkg, "testing") + os.sep)
    for case in _cases(suite):
        for impl, (ops, t) in peers.items():
            op = ops[case]
            extra = (
                {"calls": count_calls(lambda op=op, t=t: op(t), ours)}
                if ops is CASES and t is gtt
                else {}
            )
            suite.record(
                case,
                impl,
                seconds=suite.time(lambda op=op, t=t: op(t), sync="cpu", number=None),
                **extra,
            )


def _cupy_cases() -> dict:
    """NUMPY's ops in cupy's spelling (its own kernels: the host cost to match)."""
    import cupy

    return dict(
        NUMPY,
        **{
            "x.exp()": lambda t: cupy.exp(t["x"]),
            "x.t().contiguous()": lambda t: cupy.ascontiguousarray(t["x_t"]),
        },
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], int(sys.argv[3]), sys.argv[4:])
    else:
        sys.path.insert(0, str(REPO_ROOT))
        sys.exit(main())
