"""gt.save / gt.load of a large checkpoint: time, and host memory against the file's size.
The goal (issue 28): loading peaks at <= 1.1x the checkpoint's size in host memory.

    .venv/bin/python -m profiling.bench_serialization [--quick] [--mb 1024] [--out DIR]

The checkpoint (a state_dict of 16 float32 tensors, plus views of them) is written under
/tmp, never the repo. Each load runs in a fresh process that reports two peaks over its
baseline after `import gpu_tensor`: VmHWM - VmRSS (the kernel's count: what the machine
pays; the goal is read off it) and tracemalloc's peak (a separate run, since tracing slows
allocation). tracemalloc sees numpy's heap buffers and Python objects, not the mmap'd
huge-page buffers gt.load reads storages of 2 MiB and more into: for those it shows the
loader's own overhead only. torch.load of the same file is the peer when torch is
importable by this interpreter (or by --torch-python).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from profiling.harness import Suite

REPO = Path(__file__).resolve().parents[1]
TENSORS = 16  # a state_dict of many tensors, as a model's is

_CHILD = """
import sys, time, tracemalloc
def rss(field):
    return int([l for l in open('/proc/self/status') if l.startswith(field)][0].split()[1]) * 1024
import {lib} as lib
path, mode, trace = sys.argv[1], sys.argv[2], sys.argv[3] == '1'
kw = dict(mmap=True) if mode == 'mmap' else {{}}
base = rss('VmRSS')
if trace:
    tracemalloc.start()
t0 = time.perf_counter()
sd = lib.load(path, **kw)
dt = time.perf_counter() - t0
total = sum(float(v.sum()) for v in sd.values())  # touch every byte (mmap pages in here)
peak = tracemalloc.get_traced_memory()[1] if trace else 0
print(dt, rss('VmHWM') - base, peak, total)
"""


def _write(path: Path, nbytes: int) -> int:
    import gpu_tensor as gt

    per = nbytes // TENSORS // 4
    sd = {f"layer{i}.weight": gt.full((per,), float(i)) for i in range(TENSORS)}
    sd["layer0.view"] = sd["layer0.weight"][::2]  # a view: shares layer0's storage
    t0 = time.perf_counter()
    gt.save(sd, path)
    return time.perf_counter() - t0


_SAVE_CHILD = """
import sys, time
import torch
path, per, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sd = {{f"layer{{i}}.weight": torch.full((per,), float(i)) for i in range(n)}}
sd["layer0.view"] = sd["layer0.weight"][::2]
t0 = time.perf_counter()
torch.save(sd, path)
print(time.perf_counter() - t0)
"""


def _torch_save(python: str, path: Path, nbytes: int) -> float:
    proc = subprocess.run(
        [python, "-c", _SAVE_CHILD.format(), str(path), str(nbytes // TENSORS // 4), str(TENSORS)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-800:])
    return float(proc.stdout.split()[-1])


def _load(python: str, lib: str, path: Path, mode: str, trace: bool):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [python, "-c", _CHILD.format(lib=lib), str(path), mode, "1" if trace else "0"],
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-800:])
    dt, hwm, peak, _ = proc.stdout.split()
    return float(dt), int(hwm), int(peak)


def _torch_python(suite) -> str | None:
    for python in filter(None, (suite.args.torch_python, sys.executable)):
        ok = subprocess.run([python, "-c", "import torch"], capture_output=True)
        if ok.returncode == 0:
            return python
    return None


def main(argv=None):
    def options(p):
        p.add_argument(
            "--mb", type=int, default=None, help="checkpoint size (default 1024, --quick 64)"
        )
        p.add_argument(
            "--torch-python",
            default=None,
            help="an interpreter with torch, for the torch.load peer",
        )

    suite = Suite("serialization", argv, description=__doc__, add_arguments=options)
    mb = suite.args.mb or suite.choose(1024, 64)
    path = Path(f"/tmp/gpu_tensor_bench_checkpoint_{os.getpid()}.pt")
    try:
        save_s = _write(path, mb << 20)
        size = path.stat().st_size
        label = f"{size / 2**20:.0f} MiB state_dict"
        suite.record(f"save {label}", "gpu_tensor", seconds=save_s, nbytes=size)
        torch_py = _torch_python(suite)
        if torch_py is not None:
            other = path.with_suffix(".torch.pt")
            try:
                suite.record(
                    f"save {label}",
                    "torch",
                    seconds=_torch_save(torch_py, other, mb << 20),
                    nbytes=size,
                )
            finally:
                other.unlink(missing_ok=True)
        for mode in ("read", "mmap"):
            case = f"load ({mode}) {label}"
            dt, hwm, _ = _load(sys.executable, "gpu_tensor", path, mode, False)
            _, _, traced = _load(sys.executable, "gpu_tensor", path, mode, True)
            traced_over_file = round(traced / size, 3)  # Python's own allocations, traced
            extra = {"traced_over_file": traced_over_file, "target": "<= 1.1"}
            _record_load(suite, case, "gpu_tensor", dt, hwm, size, **extra)
            if torch_py is None:
                suite.record(case, "torch", skipped="torch not importable (--torch-python)")
                continue
            dt, hwm, _ = _load(torch_py, "torch", path, mode, False)
            _record_load(suite, case, "torch", dt, hwm, size)
    finally:
        path.unlink(missing_ok=True)
    return suite.finish()


def _record_load(suite, case, impl, seconds, hwm, size, **extra):
    """A load row: its time and its peak RSS over the file's size, plus `extra` columns."""
    rss_over_file = round(hwm / size, 3)
    suite.record(case, impl, seconds=seconds, nbytes=size, rss_over_file=rss_over_file, **extra)


if __name__ == "__main__":
    main()
