"""The views over a snapshot made by the real allocator (gpu_tensor.memory), not a fixture:
what the allocator writes is what the CLI reads."""

from __future__ import annotations

import json
import pickle

import pytest

from gpu_tensor.cli import snapshot_figures as fig
from gpu_tensor.cli.html import render_html
from gpu_tensor.cli.snapshot_load import load_snapshot
from gpu_tensor.cli.snapshot_view import render_text
from gpu_tensor.cli.timeline import memory_timeline


class _Event:
    """A stream event that completes when the test says so."""

    def __init__(self):
        self.done = False

    def query(self):
        return self.done

    def synchronize(self):
        self.done = True


def _make_snapshot():
    from gpu_tensor.memory.allocator import CachingAllocator
    from gpu_tensor.memory.raw import HostRawSource
    from gpu_tensor.memory.snapshot import HistoryRecorder, build_snapshot

    events = []

    def event_factory(stream):
        events.append(_Event())
        return events[-1]

    alloc = CachingAllocator(
        HostRawSource(256 << 20), 0, event_factory=event_factory, kind="emulated"
    )
    alloc.history = HistoryRecorder(enabled="all")
    weights = alloc.malloc(12 << 20)
    weights.tag = {"shape": (3072, 1024), "dtype": "float32"}
    batch = alloc.malloc(300_000)
    batch.tag = {"shape": (100, 3000), "dtype": "uint8"}
    tmp = alloc.malloc(5 << 20)
    side = alloc.malloc(64 << 10)
    alloc.record_stream(side, 7)  # used on another stream: freed only after its event
    alloc.free(tmp)
    alloc.free(side)
    snap = build_snapshot([alloc], device=0)
    return alloc, snap


@pytest.fixture
def real_snapshot(tmp_path):
    alloc, snap = _make_snapshot()
    path = tmp_path / "real.json"
    path.write_text(json.dumps(snap))
    pkl = tmp_path / "real.pickle"
    pkl.write_bytes(pickle.dumps(snap))
    yield snap, path, pkl
    alloc.empty_cache()


def test_real_snapshot_loads_from_json_and_restricted_pickle(real_snapshot):
    snap, path, pkl = real_snapshot
    from_json, from_pickle = load_snapshot(path), load_snapshot(pkl)
    assert json.loads(json.dumps(from_pickle)) == from_json


def test_real_snapshot_text_view(real_snapshot):
    snap, path, _ = real_snapshot
    loaded = load_snapshot(path)
    text = render_text(loaded)
    stats = loaded["gpu_tensor"]["memory_stats"]
    segments = fig.segments_of(loaded)
    f = fig.fragmentation(segments)
    # The figures the CLI draws agree with the allocator's own stats.
    assert f["reserved_bytes"] == stats["reserved_bytes.all.current"]
    assert f["allocated_bytes"] == stats["allocated_bytes.all.current"]
    assert f["allocated_bytes"] + f["pending_free_bytes"] == stats["active_bytes.all.current"]
    assert f["pending_free_bytes"] == 64 << 10
    assert "~" in text  # the block waiting on stream 7's event is drawn as pending
    assert "float32[3072, 1024]" in text and "uint8[100, 3000]" in text
    assert "test_real_snapshot.py" in text  # creation frames or sites point at this file
    rows = fig.largest_allocations(segments, loaded, top=10)
    assert [r["size"] for r in rows][:1] == [12 << 20]


def test_real_snapshot_timeline_and_html(real_snapshot):
    snap, path, _ = real_snapshot
    loaded = load_snapshot(path)
    t = memory_timeline(loaded)
    f = fig.fragmentation(fig.segments_of(loaded))
    assert t["allocated"][0] == 0 and t["reserved"][0] == 0
    assert t["allocated"][-1] == f["allocated_bytes"]
    assert t["reserved"][-1] == f["reserved_bytes"]
    assert max(t["allocated"]) >= (12 << 20) + (5 << 20)
    page = render_html(loaded)
    assert page.count("<rect ") == sum(len(s["blocks"]) for s in loaded["segments"])


def test_cli_renders_real_snapshot(run_cli, real_snapshot):
    _, path, pkl = real_snapshot
    for p in (path, pkl):
        proc = run_cli("memory-summary", str(p))
        assert proc.returncode == 0, proc.stderr
        assert "gpu_tensor CUDA memory summary" in proc.stdout
        assert "Segment map" in proc.stdout
