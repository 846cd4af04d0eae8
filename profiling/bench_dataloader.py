"""DataLoader throughput on a CPU-heavy dataset: num_workers=0 against worker processes.
The goal (issue 28): num_workers=2 >= 1.7x faster than num_workers=0 on a 2-core machine.

    .venv/bin/python -m profiling.bench_dataloader [--quick] [--out DIR] [--torch-python PY]

Each sample is a synthetic "decode + augment": ~3 ms of numpy work on an idle core (a 3x64x64 image built
from seeded noise, blurred, normalised), returned as a tensor; batches of 16 are collated
by default_collate. An epoch's wall time is measured after a warm-up epoch (worker start
included, as a training loop pays it each epoch without persistent_workers). torch's
DataLoader over the same dataset code is the peer when torch is importable (by this
interpreter or --torch-python); it runs in a child process with the same workload. Each
row records the 1-minute load average (workers only help when cores are idle) and the CPU
seconds an epoch costs in all processes: `cpu_over_serial` is the workers' overhead, and
`idle_core_speedup_estimate` = serial CPU time / the busiest process's CPU time, what the
speedup would be with a core per process (an estimate, not a measurement).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from profiling.harness import Suite

REPO = Path(__file__).resolve().parents[1]

_DATASET = """
import numpy as np

class Heavy:
    '''CPU-heavy samples: every item costs the same few milliseconds of numpy work.'''

    def __init__(self, n, make_tensor):
        self.n, self.make_tensor = n, make_tensor

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        img = rng.standard_normal((3, 64, 64)).astype(np.float32)
        for _ in range(48):  # a separable blur, repeated: the "augmentation"
            img = (img + np.roll(img, 1, 1) + np.roll(img, -1, 1)) / 3
            img = (img + np.roll(img, 1, 2) + np.roll(img, -1, 2)) / 3
        img = (img - img.mean()) / (img.std() + 1e-6)
        return self.make_tensor(img), i % 10
"""

_CHILD = (
    _DATASET
    + """
import resource, sys, time
import {lib} as lib
from {lib}.utils.data import DataLoader
n, workers, repeats = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
ds = Heavy(n, lib.from_numpy)

def children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime

times, main_cpu, worker_cpu = [], [], []
for _ in range(repeats + 1):  # the first epoch warms up
    t0, c0, w0 = time.perf_counter(), time.process_time(), children()
    for x, y in DataLoader(ds, batch_size=16, num_workers=workers):
        pass
    times.append(time.perf_counter() - t0)
    main_cpu.append(time.process_time() - c0)
    worker_cpu.append(children() - w0)  # workers are joined when their epoch ends
for row in (times, main_cpu, worker_cpu):
    print(" ".join(str(t) for t in row[1:]))
"""
)


def _epochs(python: str, lib: str, n: int, workers: int, repeats: int):
    """Per epoch: wall seconds, main-process CPU seconds, worker CPU seconds."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [python, "-c", _CHILD.format(lib=lib), str(n), str(workers), str(repeats)],
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-800:])
    return [[float(t) for t in line.split()] for line in proc.stdout.strip().splitlines()]


def _median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main(argv=None):
    suite = Suite(
        "dataloader",
        argv,
        description=__doc__,
        add_arguments=lambda p: p.add_argument(
            "--torch-python", default=None, help="an interpreter with torch, for the peer"
        ),
    )
    n, repeats = suite.choose(384, 96), suite.choose(5, 2)
    peers = [(sys.executable, "gpu_tensor")]
    for python in filter(None, (suite.args.torch_python, sys.executable)):
        if subprocess.run([python, "-c", "import torch"], capture_output=True).returncode == 0:
            peers.append((python, "torch"))
            break
    cores = os.cpu_count()
    for python, lib in peers:
        base = base_cpu = None
        for workers in (0, 1, 2):
            times, main_cpu, worker_cpu = _epochs(python, lib, n, workers, repeats)
            t, cpu = _median(times), _median(main_cpu) + _median(worker_cpu)
            if workers == 0:
                base, base_cpu = t, cpu
            # With idle cores an epoch takes about the busiest process's CPU time: the
            # main process's, or one worker's share (the workers split the samples).
            busiest = max(_median(main_cpu), _median(worker_cpu) / max(workers, 1))
            suite.record(
                f"epoch of {n} samples, num_workers={workers}",
                lib,
                seconds=t,
                samples_per_s=round(n / t),
                speedup=round(base / t, 2),
                load_avg=round(os.getloadavg()[0], 1),  # other work on the cores
                cpu_s=round(cpu, 3),
                cpu_over_serial=round(cpu / base_cpu, 2),
                idle_core_speedup_estimate=round(base_cpu / busiest, 2),
                epoch_range=f"{min(times):.3f}-{max(times):.3f} s",
                cores=cores,
                target=">= 1.7 at num_workers=2" if workers == 2 else "",
            )
    return suite.finish()


if __name__ == "__main__":
    main()
