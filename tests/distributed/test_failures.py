"""A failing rank ends the job quickly (never a hang); a late rank raises a timeout error."""

import pytest

from ._launch import run_ranks


@pytest.mark.parametrize("launcher", ["python -m mpi4py", "plain python"])
def test_a_failing_rank_ends_the_job(launcher):
    rc, out, took = run_ranks(
        2, "failures.py", "raise", timeout=60, check=False, module=launcher != "plain python"
    )
    assert rc != 0, out
    assert "rank 1 fails on purpose" in out
    assert "passed the barrier" not in out
    assert took < 30, f"the job took {took:.1f} s to end"


def test_a_late_rank_times_out_with_the_op_and_rank_named():
    _, out, _ = run_ranks(2, "failures.py", "timeout")
    assert "caught: all_reduce timed out on rank 0 after 0.5 s" in out, out
    assert "done [[2.0, 2.0, 2.0, 2.0], [2.0, 2.0, 2.0, 2.0]]" in out, out
