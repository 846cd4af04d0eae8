"""all_reduce bus bandwidth: gt.distributed against mpi4py on raw numpy buffers, same run.

    python -m profiling.bench_distributed [--quick] [--ranks N]

The parent process launches `mpiexec -n N python -m mpi4py -m profiling.bench_distributed
--worker FILE`; the ranks time float32 SUM all_reduces from 4 KiB up (256 MiB in a full run,
4 MiB with --quick) and rank 0 writes the samples, which the parent records. Each sample is
the slowest rank's time (a collective ends when its last rank does), per call over a batch
of calls that begins after a barrier.

Bandwidth, as nccl-tests defines it (doc/PERFORMANCE.md): algbw = bytes / time, and
busbw = algbw * 2 (n - 1) / n for all_reduce, the bytes each rank's link must carry, so
busbw can be compared with the hardware's link bandwidth whatever n is.

Implementations: `mpi4py numpy` (the peer: the MPI call on a numpy array, nothing else);
`mpi4py numpy Iallreduce` (the non-blocking call gt.distributed makes, waited on at once);
`gpu_tensor cpu` (the same MPI call behind gt.distributed: checks, staging, a Work);
`gpu_tensor emulated cuda` (cuda tensors on the MPI backend, staged through the pinned pool:
one copy down and one up per call); `gpu_tensor nccl` where a GPU and NCCL are there (with
one GPU per machine, only n = 1 runs, which has no bus traffic: the row says so).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KIB, MIB = 1 << 10, 1 << 20
QUICK_MAX, FULL_MAX = 4 * MIB, 256 * MIB
BATCH_BYTES = 8 * MIB  # calls per sample: enough that small messages take > ~1 ms a sample


def _sizes(quick: bool) -> list[int]:
    top, out, n = (QUICK_MAX if quick else FULL_MAX), [], 4 * KIB
    while n <= top:
        out.append(n)
        n *= 4
    return out


def busbw_factor(n: int) -> float:
    """nccl-tests' all_reduce bus bandwidth factor, 2 (n - 1) / n."""
    return 2 * (n - 1) / n


# -- inside each rank ------------------------------------------------------------------------
def _worker(out_file: str, quick: bool, repeat: int) -> None:
    import numpy as np
    from mpi4py import MPI

    os.environ.setdefault("GPU_TENSOR_FALLBACK", "1")
    import gpu_tensor as gt
    import gpu_tensor.distributed as dist

    dist.init_process_group("mpi")
    comm = MPI.COMM_WORLD
    impls = {
        "mpi4py numpy": lambda a, t: comm.Allreduce(MPI.IN_PLACE, a, op=MPI.SUM),
        # the call gt.distributed makes (non-blocking, so it can time out), for a like pair
        "mpi4py numpy Iallreduce": lambda a, t: comm.Iallreduce(MPI.IN_PLACE, a, op=MPI.SUM).Wait(),
        "gpu_tensor cpu": lambda a, t: dist.all_reduce(t["cpu"]),
        "gpu_tensor emulated cuda": lambda a, t: dist.all_reduce(t["cuda"]),
    }
    results = []
    for size in _sizes(quick):
        n = size // 4
        arr = np.ones(n, np.float32)
        tensors = {"cpu": gt.ones(n), "cuda": gt.ones(n, device="cuda")}
        number = max(1, min(200, BATCH_BYTES // size))
        for name, fn in impls.items():
            for _ in range(2):  # warm-up: pools, first-call imports
                fn(arr, tensors)
            samples = []
            for _ in range(repeat):
                comm.Barrier()
                t0 = time.perf_counter()
                for _ in range(number):
                    fn(arr, tensors)
                mine = (time.perf_counter() - t0) / number
                samples.append(comm.allreduce(mine, op=MPI.MAX))
            results.append({"size": size, "impl": name, "samples": samples, "number": number})
            arr[:] = 1  # keep the values bounded (sums of ones grow by n per call)
            for t in tensors.values():
                t.fill_(1)
    if comm.Get_rank() == 0:
        Path(out_file).write_text(
            json.dumps(
                {
                    "ranks": comm.Get_size(),
                    "rows": results,
                    "mpi": MPI.Get_library_version().splitlines()[0],
                }
            )
        )
    dist.destroy_process_group()


# -- the parent: launch, then record ---------------------------------------------------------
def _add_arguments(parser) -> None:
    parser.add_argument("--ranks", type=int, default=2, help="MPI ranks (default 2)")
    parser.add_argument("--worker", default=None, help=argparse_hidden())


def argparse_hidden():
    import argparse

    return argparse.SUPPRESS


def main(argv=None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if "--worker" in argv:  # a rank: no Suite (it would probe GPUs once per rank)
        out = argv[argv.index("--worker") + 1]
        _worker(out, "--quick" in argv, repeat=5 if "--quick" in argv else 9)
        return 0
    from profiling.harness import Suite
    from profiling.timing import Timing

    suite = Suite(
        "distributed", argv, description=__doc__.splitlines()[0], add_arguments=_add_arguments
    )
    mpiexec = Path(sys.executable).parent / "mpiexec"
    if not mpiexec.exists():
        suite.skip(
            "all_reduce", "all", "no mpiexec next to python: pip install 'gpu-tensor[distributed]'"
        )
        suite.finish()
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "samples.json"
        cmd = [
            str(mpiexec),
            "-n",
            str(suite.args.ranks),
            sys.executable,
            "-m",
            "mpi4py",
            "-m",
            "profiling.bench_distributed",
            "--worker",
            str(out),
        ]
        if suite.quick:
            cmd.append("--quick")
        proc = subprocess.run(cmd, cwd=REPO, timeout=1800)
        if proc.returncode != 0:
            raise SystemExit(f"bench_distributed: the MPI job failed (rc {proc.returncode})")
        data = json.loads(out.read_text())
    n = data["ranks"]
    peer = {}
    for row in data["rows"]:
        t = Timing.from_samples(row["samples"], number=row["number"])
        algbw = row["size"] / t.median / 1e9
        if row["impl"] == "mpi4py numpy":
            peer[row["size"]] = t.median
        suite.record(
            f"all_reduce f32 {_fmt(row['size'])} x{n} ranks",
            row["impl"],
            seconds=t,
            nbytes=row["size"],
            busbw_gbps=round(algbw * busbw_factor(n), 4),
            vs_mpi4py=round(t.median / peer[row["size"]], 3),
            mpi=data["mpi"],
        )
    _nccl_row(suite)
    suite.finish()
    return 0


def _nccl_row(suite) -> None:
    from gpu_tensor.distributed.nccl_engine import usable

    if not usable():
        suite.skip(
            "all_reduce nccl",
            "gpu_tensor nccl",
            "needs a CUDA GPU and the NCCL library (pip install 'gpu-tensor[nccl-cu12]')",
        )
    else:
        suite.skip(
            "all_reduce nccl",
            "gpu_tensor nccl",
            "one GPU here: NCCL refuses two ranks "
            "on one GPU, and a world of one moves no bytes (busbw factor 0)",
        )


def _fmt(size: int) -> str:
    return f"{size // MIB} MiB" if size >= MIB else f"{size // KIB} KiB"


if __name__ == "__main__":
    sys.exit(main())
