"""export_chrome_trace (torch's schema, Perfetto's nesting rule), tensorboard_trace_handler,
record_function, the fusion report, the sync column and the legacy entry points."""

from __future__ import annotations

import gzip
import json
import threading

import pytest

import gpu_tensor as gt
from gpu_tensor.profiler import profile, record_function, tensorboard_trace_handler

ARGS = {"Addr", "Bytes", "Total Allocated", "Total Reserved", "Device Type", "Device Id"}


def _check_schema(data):
    assert {
        "schemaVersion",
        "traceEvents",
        "displayTimeUnit",
        "baseTimeNanoseconds",
        "deviceProperties",
    } <= set(data)
    tracks = {}
    for e in data["traceEvents"]:
        assert e["ph"] in {"X", "i", "M", "s", "f", "C"}
        if e["ph"] == "X":
            assert isinstance(e["ts"], (int, float)) and e["dur"] >= 0
            tracks.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in tracks.values():  # Perfetto: X events on one track nest perfectly
        open_ends = []
        for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            assert not open_ends or end <= open_ends[-1] + 1e-3, "partial overlap on a track"
            open_ends.append(end)
    return data["traceEvents"]


def test_trace_schema_nesting_kernels_flows_and_memory(tmp_path):
    cuda = gt.cuda.is_available()
    dev = "cuda" if cuda else "cpu"
    x = gt.ones(32, 32, device=dev)
    with profile(record_shapes=True, profile_memory=True) as prof:
        with record_function("block"):
            y = (x @ x).relu()
            y.sum()
    path = tmp_path / "t.json"
    prof.export_chrome_trace(str(path))
    events = _check_schema(json.loads(path.read_text()))
    ops = [e for e in events if e.get("cat") == "cpu_op"]
    assert {"aten::matmul", "aten::relu", "aten::sum"} <= {e["name"] for e in ops}
    assert [e["name"] for e in events if e.get("cat") == "user_annotation"] == ["block"]
    assert all("Input Dims" in e["args"] for e in ops)
    meta = {e["name"] for e in events if e["ph"] == "M"}
    assert {"process_name", "thread_name"} <= meta
    if not cuda:
        return
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert kernels and all(
        isinstance(k["pid"], int) and k["tid"] == k["args"]["stream"] for k in kernels
    )
    starts = {e["id"] for e in events if e["ph"] == "s" and e["cat"] == "ac2g"}
    ends = {e["id"] for e in events if e["ph"] == "f" and e["cat"] == "ac2g"}
    assert starts == ends == {k["args"]["correlation"] for k in kernels}
    memory = [e for e in events if e.get("name") == "[memory]"]
    assert memory and all(set(e["args"]) == ARGS for e in memory)
    assert any(e["ph"] == "C" for e in events)
    # a second export writes the file again (torch raises "Trace is already saved.")
    prof.export_chrome_trace(str(tmp_path / "again.json.gz"))
    with gzip.open(tmp_path / "again.json.gz", "rt") as f:
        _check_schema(json.load(f))


def test_tensorboard_handler_writes_one_file_per_cycle(tmp_path):
    with profile(
        schedule=gt.profiler.schedule(wait=0, warmup=1, active=1, repeat=2),
        on_trace_ready=tensorboard_trace_handler(str(tmp_path), "w"),
    ) as prof:
        for _ in range(5):
            gt.ones(2).exp()
            prof.step()
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(files) == 2 and all(
        f.startswith("w.") and f.endswith(".pt.trace.json") for f in files
    )


def test_record_function_as_decorator_and_nested_and_free_outside():
    @record_function("decorated")
    def f(x):
        with record_function("inner"):
            return x.exp()

    assert f(gt.ones(2)).shape == (2,)  # outside a profile: just runs
    with profile() as prof:
        f(gt.ones(2))
    events = prof.events()
    by = {e.name: e for e in events}
    assert by["inner"].cpu_parent is by["decorated"]
    assert by["aten::exp"].cpu_parent is by["inner"]


def test_fusion_report_finds_single_use_chains():
    x = gt.ones(64, 64)
    with profile() as prof:
        for _ in range(2):
            y = x * 2.0
            y = y + 1.0
            y = y.exp()
            keep = y - 3.0
        z = x.exp()  # read twice: not a chain link
        z + z
    rows = prof.fusion_candidates()
    assert rows[0]["ops"] == ["aten::mul", "aten::add", "aten::exp", "aten::sub"]
    assert rows[0]["count"] == 2 and rows[0]["launches_saved"] == 6
    assert rows[0]["bytes_saved"] == 2 * 2 * 3 * 64 * 64 * 4
    assert len(rows) == 1
    assert "Fusion candidates" in prof.summary()
    del keep


def test_sync_column_counts_host_waits():
    if not gt.cuda.is_available():
        pytest.skip("no cuda device (not even the emulated one)")
    x = gt.ones(4, device="cuda")
    with profile() as prof:
        with record_function("waits"):
            gt.cuda.synchronize()
            x.exp()
    rows = {r.key: r for r in prof.key_averages()}
    assert rows["waits"].syncs == 1 and rows["aten::exp"].syncs == 0
    assert "Host waits on the device" in prof.summary()


def test_other_threads_are_not_recorded():
    x = gt.ones(2)
    done = threading.Event()
    with profile() as prof:
        t = threading.Thread(target=lambda: (x.neg(), done.set()))
        t.start()
        done.wait(10)
        t.join()
        x.exp()
    assert [e.name for e in prof.events()] == ["aten::exp"]


def test_legacy_autograd_profiler_recipe_runs():
    model = gt.nn.Linear(8, 4)
    x = gt.ones(2, 8)
    with gt.autograd.profiler.profile(with_stack=True, profile_memory=True) as prof:
        model(x)
    text = prof.key_averages(group_by_stack_n=5).table(sort_by="self_cpu_time_total", row_limit=5)
    assert "Source Location" in text and "aten::linear" in text
    assert prof.function_events and "aten::linear" in str(prof)
    with gt.autograd.profiler.profile(enabled=False) as off:
        model(x)
    with pytest.raises(RuntimeError, match="didn't finish"):
        off.key_averages()
