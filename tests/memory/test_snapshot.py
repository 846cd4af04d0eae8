"""Snapshots: torch's structure, history recording, JSON and pickle round trips."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys

import pytest

from gpu_tensor.memory.allocator import CachingAllocator
from gpu_tensor.memory.config import parse_alloc_conf
from gpu_tensor.memory.oom import OutOfMemoryError
from gpu_tensor.memory.raw import HostRawSource
from gpu_tensor.memory.snapshot import HistoryRecorder, build_snapshot

from .fakes import FakeEvent

MiB = 1 << 20
SEGMENT_KEYS = {
    "device",
    "address",
    "total_size",
    "allocated_size",
    "active_size",
    "requested_size",
    "stream",
    "segment_type",
    "segment_pool_id",
    "is_expandable",
    "frames",
    "blocks",
}
BLOCK_KEYS = {"address", "size", "requested_size", "state", "frames"}
TRACE_KEYS = {"action", "addr", "size", "stream", "time_us", "frames"}


def scenario(history=None):
    a = CachingAllocator(
        HostRawSource(64 * MiB),
        0,
        event_factory=FakeEvent,
        config=parse_alloc_conf("expandable_segments:False"),
        kind="emulated",
    )
    a.history = history
    x = a.malloc(300 * 1024)
    x.tag = {"shape": (75, 1024), "dtype": "float32"}
    y = a.malloc(12 * MiB)
    a.free(a.malloc(700))
    a.free(a.malloc(5 * MiB))  # a cached 20 MiB segment, released by the OOM retry
    with pytest.raises(OutOfMemoryError):
        a.malloc(60 * MiB)
    z = a.malloc(3 * MiB, stream=5)
    a.record_stream(z, 9)
    a.free(z)  # pending: an event on stream 9 has not completed
    return a, (x, y)


def test_structure_matches_torch():
    a, (x, y) = scenario()
    snap = a.snapshot()
    assert set(snap) == {"segments", "device_traces", "allocator_settings", "gpu_tensor"}
    assert len(snap["segments"]) == 3
    for seg in snap["segments"]:
        assert set(seg) == SEGMENT_KEYS
        assert sum(b["size"] for b in seg["blocks"]) == seg["total_size"]
        addr = seg["address"]
        for b in seg["blocks"]:  # blocks tile the segment in address order
            assert set(b) == BLOCK_KEYS and b["address"] == addr
            addr += b["size"]
    states = {b["state"] for s in snap["segments"] for b in s["blocks"]}
    assert states == {"active_allocated", "active_pending_free", "inactive"}
    small = next(s for s in snap["segments"] if s["segment_type"] == "small")
    assert small["allocated_size"] == x.size and small["requested_size"] == 300 * 1024
    pending = next(s for s in snap["segments"] if s["stream"] == 5)
    assert pending["active_size"] == 3 * MiB and pending["allocated_size"] == 0
    ext = snap["gpu_tensor"]
    assert ext["version"] == 1 and ext["device"] == 0
    assert ext["memory_stats"]["allocated_bytes.all.current"] == x.size + y.size
    assert [t["size"] for t in ext["live_tensors"]] == [y.size, x.size]
    assert ext["live_tensors"][1]["shape"] == (75, 1024)
    assert snap["allocator_settings"]["max_split_size"] == -1  # unset, as torch shows it


def test_history_records_every_action_with_stacks():
    rec = HistoryRecorder("all", context="all", stacks="python")
    a, _ = scenario(rec)
    trace = a.snapshot()["device_traces"][0]
    actions = [e["action"] for e in trace]
    for action in (
        "segment_alloc",
        "alloc",
        "free_requested",
        "free_completed",
        "oom",
        "segment_free",
    ):
        assert action in actions, action
    assert all(TRACE_KEYS <= set(e) for e in trace)
    oom = next(e for e in trace if e["action"] == "oom")
    assert oom["device_free"] >= 0
    alloc = next(e for e in trace if e["action"] == "alloc")
    assert alloc["frames"] and alloc["frames"][0]["filename"] == __file__
    assert any(b["frames"] for s in a.snapshot()["segments"] for b in s["blocks"])
    times = [e["time_us"] for e in trace]
    assert times == sorted(times)


def test_oom_trace_records_the_request_not_the_segment():
    a = CachingAllocator(
        HostRawSource(2 * MiB),
        0,
        event_factory=FakeEvent,
        config=parse_alloc_conf("expandable_segments:False"),
        kind="emulated",
    )
    a.history = HistoryRecorder("all")
    with pytest.raises(OutOfMemoryError):
        a.malloc(3 * MiB // 2 + 1)  # would need a segment of several MiB
    oom = next(e for e in a.snapshot()["device_traces"][0] if e["action"] == "oom")
    assert oom["size"] == 3 * MiB // 2 + 512  # rounded to 512 B, as torch records it


def test_history_ring_buffer_and_modes():
    a, _ = scenario(HistoryRecorder("all", max_entries=4))
    assert len(a.snapshot()["device_traces"][0]) == 4
    a, _ = scenario(HistoryRecorder("state"))
    snap = a.snapshot()
    assert snap["device_traces"][0] == []  # 'state': no trace, but live blocks keep stacks
    assert any(b["frames"] for s in snap["segments"] for b in s["blocks"])
    a, _ = scenario(HistoryRecorder("all", context=None))
    assert all(not e["frames"] for e in a.snapshot()["device_traces"][0])
    with pytest.raises(ValueError):
        HistoryRecorder("sometimes")


def test_json_and_pickle_round_trip(tmp_path):
    a, _ = scenario(HistoryRecorder("all"))
    snap = build_snapshot([a], device=0)
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(snap))
    assert json.loads(path.read_text()) == json.loads(json.dumps(snap))
    pkl = tmp_path / "snap.pickle"
    pkl.write_bytes(pickle.dumps(snap))
    # A plain interpreter (no gpu_tensor import) loads it, as torch's memory_viz does.
    code = (
        "import pickle, sys; s = pickle.load(open(sys.argv[1], 'rb')); "
        "assert 'gpu_tensor' not in sys.modules; "
        "print(len(s['segments']), len(s['device_traces'][0]), "
        "s['segments'][0]['segment_pool_id'])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(pkl)],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout.split()
    assert out[0] == str(len(snap["segments"]))
    assert out[1] == str(len(snap["device_traces"][0]))
    assert pickle.loads(pkl.read_bytes()) == snap
