"""`memory-summary --run script.py [args...]` on the emulated device."""

from __future__ import annotations

import json
import textwrap

import pytest

from gpu_tensor.cli.snapshot_load import load_snapshot

# Small emulated device: the OOM case needs a cap, and nothing here needs 4 GiB.
ENV = {"GPU_TENSOR_EMULATED_MEMORY_MB": "256"}

ALLOCATES = """
import sys
from gpu_tensor.memory.registry import get_allocator

alloc = get_allocator(0, "emulated")
keep = [alloc.malloc(3 << 20), alloc.malloc(1000)]
scratch = alloc.malloc(8 << 20)
alloc.free(scratch)
print("script args", sys.argv[1:])
"""

RUNS_OUT = """
import gpu_tensor.cuda.memory as memory
from gpu_tensor.memory.registry import get_allocator

memory.set_per_process_memory_fraction(0.2)  # 51.2 MiB of the 256 MiB device
alloc = get_allocator(0, "emulated")
keep = alloc.malloc(4 << 20)
too_big = alloc.malloc(64 << 20)
print("not reached")
"""


def _script(tmp_path, body: str, name: str = "job.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def test_run_prints_script_output_then_summary(run_cli, tmp_path):
    script = _script(tmp_path, ALLOCATES)
    proc = run_cli("memory-summary", "--run", str(script), "a", "--flag", env=ENV)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "script args ['a', '--flag']" in out  # args after the script go to the script
    assert out.index("script args") < out.index("== memory after job.py (exit code 0) ==")
    assert "gpu_tensor CUDA memory summary" in out
    assert "Segment map (2 segments)" in out
    assert "job.py:6 in <module>" in out  # the creation frame of the live 3 MiB block
    assert "runpy" not in out and "gpu_tensor/cli" not in out


def test_run_writes_snapshot_and_html(run_cli, tmp_path):
    script = _script(tmp_path, ALLOCATES)
    snap_path, html_path = tmp_path / "after.json", tmp_path / "after.html"
    proc = run_cli(
        "memory-summary",
        "--save-snapshot",
        str(snap_path),
        "--html",
        str(html_path),
        "--run",
        str(script),
        env=ENV,
    )
    assert proc.returncode == 0, proc.stderr
    snap = load_snapshot(snap_path)
    stats = snap["gpu_tensor"]["memory_stats"]
    assert stats["allocated_bytes.all.current"] == (3 << 20) + 1024
    actions = [e["action"] for e in snap["device_traces"][0]]
    assert actions.count("alloc") == 3 and "free_completed" in actions
    page = html_path.read_text()
    assert '<svg id="timeline"' in page and '<svg id="segment-map"' in page
    pickled = tmp_path / "after.pickle"
    proc = run_cli("memory-summary", "--save-snapshot", str(pickled), "--run", str(script), env=ENV)
    assert proc.returncode == 0 and load_snapshot(pickled)["segments"]


def test_run_out_of_memory_still_summarises(run_cli, tmp_path):
    script = _script(tmp_path, RUNS_OUT)
    snap_path = tmp_path / "oom.json"
    proc = run_cli(
        "memory-summary", "--save-snapshot", str(snap_path), "--run", str(script), env=ENV
    )
    assert proc.returncode == 1
    assert "not reached" not in proc.stdout
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and "job.py raised OutOfMemoryError" in err[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert "== memory after job.py (exit code 1) ==" in proc.stdout
    assert "Out-of-memory events: 1" in proc.stdout
    assert "tried to allocate 64.0 MiB" in proc.stdout
    assert "job.py:8 in <module>" in proc.stdout  # where the failing allocation was made
    snap = load_snapshot(snap_path)
    assert [e["size"] for e in snap["device_traces"][0] if e["action"] == "oom"] == [64 << 20]
    assert snap["gpu_tensor"]["memory_stats"]["num_ooms"] == 1


@pytest.mark.parametrize(
    "body,code",
    [
        ("import sys\nsys.exit(3)\n", 3),
        ("raise ValueError('boom')\n", 1),
        ("import sys\nsys.exit('fatal: no input')\n", 1),
    ],
)
def test_run_keeps_the_scripts_exit_code(run_cli, tmp_path, body, code):
    script = _script(tmp_path, ALLOCATES + body)
    proc = run_cli("memory-summary", "--run", str(script), env=ENV)
    assert proc.returncode == code
    assert f"(exit code {code})" in proc.stdout
    if "ValueError" in body:  # the script's own error keeps its traceback
        assert "ValueError: boom" in proc.stderr and "Traceback" in proc.stderr


def test_run_json(run_cli, tmp_path):
    script = _script(tmp_path, ALLOCATES.replace('print("script args", sys.argv[1:])', ""))
    proc = run_cli("memory-summary", "--json", "--run", str(script), env=ENV)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["exit_code"] == 0
    assert out["fragmentation"]["allocated_bytes"] == (3 << 20) + 1024


def test_run_without_device_allocations(run_cli, tmp_path):
    script = _script(tmp_path, "print('hello')\n")
    proc = run_cli("memory-summary", "--run", str(script), env=ENV)
    assert proc.returncode == 0
    assert "made no allocations on cuda:0" in proc.stdout


@pytest.mark.parametrize(
    "args,message",
    [
        (["--run"], "--run needs a script"),
        (["--run", "no_such_script.py"], "no such script"),
        (["snap.json", "--run", "x.py"], "not both"),
        (["--save-snapshot", "x.json"], "only applies with --run"),
        (["--html", "x.html"], "needs a SNAPSHOT"),
        (["--top", "-1", "x.json"], "--top must be"),
        (["--top", "many"], "invalid int"),
    ],
)
def test_usage_errors_are_one_line_exit_2(run_cli, tmp_path, args, message):
    proc = run_cli("memory-summary", *args, cwd=tmp_path)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr


TENSORS = """
from gpu_tensor.creation import ones, zeros


def make_weights():
    return zeros((1024, 1024), device="cuda")


weights = make_weights()
acts = [ones((256, 1024), device="cuda") for _ in range(3)]
del acts[1]
"""


def test_run_attributes_memory_to_tensors_and_lines(run_cli, tmp_path):
    script = _script(tmp_path, TENSORS)
    proc = run_cli("memory-summary", "--top", "3", "--run", str(script), env=ENV)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    allocs = out[out.index("Largest live allocations") : out.index("\nFragmentation\n")]
    assert "4.0 MiB" in allocs and "float32[1024, 1024]" in allocs
    assert "job.py:6 in make_weights" in allocs  # the innermost user frame comes first
    assert allocs.count("float32[256, 1024]") == 2  # the deleted activation is gone


OOM_IN_FUNCTION = """
import gpu_tensor.cuda.memory as memory
from gpu_tensor.creation import zeros

memory.set_per_process_memory_fraction(0.2)  # 51.2 MiB of the 256 MiB device


def step():
    activations = zeros((3, 1024, 1024), device="cuda")  # a local: dies with the frame
    return zeros((64, 1024, 1024), device="cuda")


step()
"""


def test_run_oom_shows_what_the_failing_frames_held(run_cli, tmp_path):
    script = _script(tmp_path, OOM_IN_FUNCTION)
    proc = run_cli("memory-summary", "--run", str(script), env=ENV)
    assert proc.returncode == 1
    assert "raised OutOfMemoryError" in proc.stderr
    allocs = proc.stdout[proc.stdout.index("Largest live allocations") :]
    # The local tensor of the frame that ran out is still counted, as at the failure.
    assert "float32[3, 1024, 1024]" in allocs and "job.py:9 in step" in allocs


def test_our_options_after_the_script_are_refused_without_a_separator(run_cli, tmp_path):
    script = _script(tmp_path, ALLOCATES)
    out = tmp_path / "m.html"
    proc = run_cli("memory-summary", "--run", str(script), "--html", str(out), env=ENV)
    assert proc.returncode == 2 and not out.exists()
    assert "--html after --run" in proc.stderr and "ambiguous" in proc.stderr
    assert "-- ARGS" in proc.stderr  # says how to write it
    assert "script args" not in proc.stdout  # the script did not run


def test_options_before_a_separator_apply_and_the_rest_go_to_the_script(run_cli, tmp_path):
    script = _script(tmp_path, ALLOCATES)
    out = tmp_path / "m.html"
    proc = run_cli(
        "memory-summary",
        "--run",
        str(script),
        "--html",
        str(out),
        "--top",
        "3",
        "--",
        "x",
        "--json",
        env=ENV,
    )
    assert proc.returncode == 0, proc.stderr
    assert "script args ['x', '--json']" in proc.stdout  # its own --json, not ours
    assert out.exists() and f"wrote {out}" in proc.stdout
    assert 'id="active-timeline"' in out.read_text()


def test_run_without_a_script_says_so(run_cli):
    proc = run_cli("memory-summary", "--run", env=ENV)
    assert proc.returncode == 2 and "--run needs a script" in proc.stderr
