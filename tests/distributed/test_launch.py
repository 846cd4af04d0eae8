"""`gpu-tensor launch -n N script.py`: the venv's mpiexec running `python -m mpi4py`."""

import subprocess
import sys
import textwrap

import pytest

from ._launch import ROOT, mpiexec


def _args(*argv):
    from gpu_tensor.cli.main import build_parser

    return build_parser().parse_args(["launch", *argv])


def test_launch_runs_the_script_on_n_ranks(tmp_path):
    mpiexec()  # skips without MPI
    script = tmp_path / "job.py"
    script.write_text(
        textwrap.dedent("""
        import sys
        import gpu_tensor as gt
        import gpu_tensor.distributed as dist
        dist.init_process_group()
        t = gt.ones(1) * (dist.get_rank() + 1)
        dist.all_reduce(t)
        with open(f"{sys.argv[2]}/rank{dist.get_rank()}.txt", "w") as f:  # (stdout interleaves)
            f.write(f"sum {t.item():g} arg {sys.argv[1]}")
    """)
    )
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpu_tensor",
            "launch",
            "-n",
            "3",
            str(script),
            "hello",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    for r in range(3):
        assert (tmp_path / f"rank{r}.txt").read_text() == "sum 6 arg hello"


def test_launch_command_uses_this_python_and_mpi4py(tmp_path):
    mpiexec()
    script = tmp_path / "s.py"
    script.write_text("")
    from gpu_tensor.cli.launch import launch_command

    cmd = launch_command(_args("-n", "4", "--mpiexec-args=-hosts a,b", str(script), "-x"))
    assert cmd[1:5] == ["-n", "4", "-hosts", "a,b"]
    assert cmd[5:] == [sys.executable, "-m", "mpi4py", str(script), "-x"]


@pytest.mark.parametrize(
    "argv,message",
    [
        (["-n", "0", "s.py"], "-n must be >= 1"),
        (["-n", "2", "no_such_script.py"], "no such script"),
        (["-n", "2", "--mpiexec", "no-such-launcher", __file__], "no such program"),
    ],
)
def test_launch_errors_are_one_line(argv, message, capsys):
    from gpu_tensor.cli.main import main

    assert main(["launch", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
