"""gt.profiler against torch.profiler itself (skips without torch): schedule steps, step
and on_trace_ready, table columns and formats, op names and counts, the trace schema.

Run: GPU_TENSOR_FALLBACK=1 PYTHONPATH=. /work/torchenv/bin/python -m pytest tests/profiler"""

from __future__ import annotations

import itertools
import json
import re
import warnings

import pytest

torch = pytest.importorskip(
    "torch", reason="torch is not installed: the profiler parity tests need it as the reference"
)

import gpu_tensor as gt  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


_SCHEDULE_ARGS = ("skip_first", "skip_first_wait", "wait", "warmup", "active", "repeat")


@pytest.mark.parametrize(
    "kw",
    [
        dict(zip(_SCHEDULE_ARGS, c, strict=True))
        for c in itertools.product((0, 2), (0, 1), (0, 1, 3), (0, 2), (1, 3), (0, 2))
    ],
    ids=lambda kw: "-".join(map(str, kw.values())),  # the values, in _SCHEDULE_ARGS' order
)
def test_schedule_steps_match(kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = gt.profiler.schedule(**kw), torch.profiler.schedule(**kw)
    assert [ours(i).name for i in range(51)] == [theirs(i).name for i in range(51)]


def _run(lib, n=12, **kw):
    fired = []
    x = lib.ones(4)

    def ready(prof):
        steps = sorted({e.name for e in prof.events() if "ProfilerStep" in e.name})
        rows = {r.key: r.count for r in prof.key_averages()}
        fired.append((prof.step_num, steps, rows.get("ProfilerStep*"), rows.get("aten::exp")))

    with lib.profiler.profile(
        activities=[lib.profiler.ProfilerActivity.CPU],
        schedule=lib.profiler.schedule(**kw),
        on_trace_ready=ready,
    ) as p:
        for _ in range(n):
            x.exp()
            p.step()
    return fired


@pytest.mark.parametrize(
    "kw",
    [
        dict(skip_first=1, wait=1, warmup=1, active=2, repeat=2),
        dict(wait=0, warmup=1, active=1, repeat=3),
        dict(wait=2, warmup=1, active=3),
    ],
)
def test_steps_and_on_trace_ready_match(kw):
    assert _run(gt, **kw) == _run(torch, **kw)


def _program(lib):
    x, w = lib.ones(16, 8), lib.ones(8, 4)
    lin = lib.nn.Linear(8, 4)
    prof = lib.profiler.profile(
        activities=[lib.profiler.ProfilerActivity.CPU], record_shapes=True, profile_memory=True
    )
    with prof:
        with lib.profiler.record_function("model_inference"):
            y = x @ w
            lin(x)
            (y + 1).exp()
    return prof


def _norm(table):
    return re.sub(
        r"-?\d+\.\d{3}(us|ms|s)|-?\d+\.\d{2}%|-?\d+(\.\d{2})? (B|KB|MB|GB)|NaN", "N", table
    )


def test_table_columns_widths_and_footer_match():
    ours, theirs = _program(gt), _program(torch)
    for kw in ({}, {"group_by_input_shape": True}):
        a = ours.key_averages(**kw).table(sort_by="cpu_time_total", row_limit=4)
        b = theirs.key_averages(**kw).table(sort_by="cpu_time_total", row_limit=4)
        la, lb = a.splitlines(), b.splitlines()
        assert re.split(r"\s{2,}", la[1].strip()) == re.split(r"\s{2,}", lb[1].strip())
        # every column but the name (and shapes) is 12 wide, in the same order
        assert la[0].split()[1:8] == lb[0].split()[1:8]
        assert la[-1].split(":")[0] == lb[-1].split(":")[0] == "Self CPU time total"
        assert len(la) == len(lb)
        assert _norm(la[3]).split() == _norm(lb[3]).split()  # model_inference in both


def _calls(prof):
    """The ops the program called (the children of its labelled range), with counts. Below
    them the decompositions differ: torch's linear runs t + addmm, ours t + matmul + add."""
    from collections import Counter

    top = [e for e in prof.events() if e.name == "model_inference"]
    return len(top), Counter(c.name for c in top[0].cpu_children)


def test_op_names_and_counts_users_grep_for_match():
    ours, theirs = _calls(_program(gt)), _calls(_program(torch))
    assert ours == theirs
    assert set(theirs[1]) == {"aten::matmul", "aten::linear", "aten::add", "aten::exp"}


def test_trace_schema_matches_torchs(tmp_path):
    ours, theirs = _program(gt), _program(torch)
    ours.export_chrome_trace(str(tmp_path / "a.json"))
    theirs.export_chrome_trace(str(tmp_path / "b.json"))
    a = json.loads((tmp_path / "a.json").read_text())
    b = json.loads((tmp_path / "b.json").read_text())
    core = {
        "schemaVersion",
        "deviceProperties",
        "displayTimeUnit",
        "baseTimeNanoseconds",
        "traceEvents",
        "traceName",
        "record_shapes",
        "profile_memory",
        "trace_id",
    }
    assert core <= set(a) and core <= set(b)
    assert a["schemaVersion"] == b["schemaVersion"] and a["displayTimeUnit"] == b["displayTimeUnit"]

    def cpu_op_args(data):
        ops = [e for e in data["traceEvents"] if e.get("cat") == "cpu_op"]
        return {e["name"]: set(e["args"]) for e in ops}

    oa, ob = cpu_op_args(a), cpu_op_args(b)
    for name in ("aten::matmul", "aten::linear", "aten::exp"):
        assert {"External id", "Record function id", "Ev Idx", "Input Dims"} <= oa[name]
        assert {"External id", "Record function id", "Ev Idx", "Input Dims"} <= ob[name]
    kinds = {(e["ph"], e.get("cat")) for e in a["traceEvents"]}
    theirs_kinds = {(e["ph"], e.get("cat")) for e in b["traceEvents"]}
    for kind in (("X", "cpu_op"), ("X", "user_annotation"), ("i", "cpu_instant_event")):
        assert kind in theirs_kinds and (kind in kinds or kind[1] == "cpu_instant_event")
    meta_a = {e["name"] for e in a["traceEvents"] if e["ph"] == "M"}
    meta_b = {e["name"] for e in b["traceEvents"] if e["ph"] == "M"}
    assert {"process_name", "process_labels", "thread_name"} <= meta_a & meta_b
