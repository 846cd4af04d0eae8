"""`gpu-tensor launch -n N script.py [args]`: run a script on N ranks.

It is `mpiexec -n N python -m mpi4py script.py args` with this environment's own mpiexec
(the mpich wheel installs it next to python) and python. `-m mpi4py` turns an exception on
one rank into an abort of the whole job, so a failing rank never leaves the others waiting.
On a cluster, give the site's launcher with --mpiexec (or use srun/mpirun directly); extra
launcher flags (hosts, binding) go in --mpiexec-args='...'.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ._errors import CliError

__all__ = ["add_launch_parser", "launch_command", "launch_main"]


def add_launch_parser(sub) -> None:
    p = sub.add_parser(
        "launch",
        help="run SCRIPT on N ranks (mpiexec -n N python -m mpi4py SCRIPT)",
        description=(
            "Start N processes of SCRIPT that find each other through MPI; in the "
            "script, gpu_tensor.distributed.init_process_group() joins them."
        ),
    )
    p.add_argument(
        "-n", "--nproc", type=int, required=True, metavar="N", help="number of ranks (processes)"
    )
    p.add_argument(
        "--mpiexec",
        metavar="PATH",
        help="launcher to use (default: the one next to this python, else PATH's)",
    )
    p.add_argument(
        "--mpiexec-args",
        default="",
        metavar="'ARGS'",
        help="extra launcher arguments, one string (e.g. --mpiexec-args='-hosts a,b')",
    )
    p.add_argument("script", metavar="SCRIPT", help="Python script to run on every rank")
    p.add_argument(
        "args", nargs=argparse.REMAINDER, metavar="ARGS", help="the script's own arguments"
    )


def _find_mpiexec(explicit: str | None) -> str:
    if explicit:
        found = shutil.which(explicit)
        if found is None:
            raise CliError(f"--mpiexec {explicit}: no such program")
        return found
    here = Path(sys.executable).parent / "mpiexec"
    if here.exists():
        return str(here)
    found = shutil.which("mpiexec")
    if found is None:
        raise CliError(
            "no mpiexec found: install MPI with `pip install 'gpu-tensor"
            "[distributed]'` (the mpich wheel brings mpiexec), or give --mpiexec"
        )
    return found


def launch_command(args) -> list[str]:
    """The command line `launch` runs (checked, not yet run)."""
    if args.nproc < 1:
        raise CliError(f"-n must be >= 1, got {args.nproc}")
    if not os.path.isfile(args.script):
        raise CliError(f"{args.script}: no such script")
    if importlib.util.find_spec("mpi4py") is None:
        raise CliError("mpi4py is not installed: pip install 'gpu-tensor[distributed]'")
    return [
        _find_mpiexec(args.mpiexec),
        "-n",
        str(args.nproc),
        *args.mpiexec_args.split(),
        sys.executable,
        "-m",
        "mpi4py",
        args.script,
        *args.args,
    ]


def launch_main(args) -> int:
    """Run the job; its exit code is the launcher's (non-zero when any rank failed)."""
    cmd = launch_command(args)
    try:
        return subprocess.run(cmd).returncode
    except KeyboardInterrupt:  # mpiexec forwards the interrupt to the ranks
        return 130
