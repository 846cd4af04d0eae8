"""Text rendering of saved snapshots, checked against golden outputs in data/.

The golden files hold everything the CLI draws itself; the stats table comes from
gpu_tensor.memory.summary (tested there), so here it is only checked to be present.
Regenerate the golden files with `python tests/cli/make_golden.py` after a deliberate
change, and read the diff.
"""

from __future__ import annotations

import json
import pickle

import pytest

from gpu_tensor.cli import snapshot_figures as fig
from gpu_tensor.cli.snapshot_load import load_snapshot
from gpu_tensor.cli.snapshot_view import (
    render_stats_table,
    render_text,
    segment_bar,
    snapshot_json,
)

GOLDEN = [
    ("small_snapshot.json", "small_snapshot.golden.txt"),
    ("torch_snapshot.pickle", "torch_snapshot.golden.txt"),
]


def _without_stats_table(text: str) -> str:
    # The first section is the stats table; golden files hold the rest.
    return text.split("\n\nSegment map", 1)[1]


@pytest.mark.parametrize("snapshot,golden", GOLDEN)
def test_cli_output_matches_golden(run_cli, data_dir, snapshot, golden):
    proc = run_cli("memory-summary", str(data_dir / snapshot))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert "Segment map" + _without_stats_table(proc.stdout) == (data_dir / golden).read_text()
    snap = load_snapshot(data_dir / snapshot)
    stats, _ = fig.stats_of(snap, fig.segments_of(snap))
    assert render_stats_table(stats, 0) in proc.stdout


def test_pickle_and_json_agree_on_everything_but_the_extension(data_dir):
    js = load_snapshot(data_dir / "small_snapshot.json")
    pk = load_snapshot(data_dir / "torch_snapshot.pickle")
    assert {k: v for k, v in js.items() if k != "gpu_tensor"} == pk
    # Without our extension the stats are rebuilt from segments; current values agree.
    derived, exact = fig.stats_of(pk, fig.segments_of(pk))
    recorded, exact_js = fig.stats_of(js, fig.segments_of(js))
    assert (exact, exact_js) == (False, True)
    for key in (
        "allocated_bytes",
        "reserved_bytes",
        "active_bytes",
        "inactive_split_bytes",
        "requested_bytes",
        "segment",
        "allocation",
    ):
        for pool in ("all", "small_pool", "large_pool"):
            k = f"{key}.{pool}.current"
            assert derived[k] == recorded[k], k


def test_fragmentation_figures_add_up(data_dir):
    snap = load_snapshot(data_dir / "small_snapshot.json")
    segs = fig.segments_of(snap)
    f = fig.fragmentation(segs)
    assert f["reserved_bytes"] == f["allocated_bytes"] + f["pending_free_bytes"] + f["free_bytes"]
    assert f["free_bytes"] == f["releasable_bytes"] + f["non_releasable_free_bytes"]
    assert f["largest_free_block"] == 20 << 20  # the untouched side-stream segment
    assert f["releasable_bytes"] == 20 << 20
    assert 0 < f["external_fragmentation"] < 1
    assert f["rounding_waste_bytes"] == 336 + 456


def test_largest_allocations_are_sorted_and_carry_tensors_and_frames(data_dir):
    snap = load_snapshot(data_dir / "small_snapshot.json")
    rows = fig.largest_allocations(fig.segments_of(snap), snap, top=3)
    assert [r["size"] for r in rows] == sorted((r["size"] for r in rows), reverse=True)
    assert len(rows) == 3
    assert rows[0]["tensors"] == [
        {"shape": [2048, 1024], "dtype": "float32", "site": "model.py:30 in __init__"}
    ]
    assert rows[0]["frames"][0]["filename"] == "model.py"


def test_segment_bar_shows_states_and_keeps_small_blocks_visible():
    base, mib = 1 << 40, 1 << 20
    seg = {
        "address": base,
        "total_size": 2 * mib,
        "blocks": [
            {"address": base, "size": mib, "state": "active_allocated"},
            {"address": base + mib, "size": 512, "state": "active_allocated"},
            {"address": base + mib + 512, "size": mib // 2 - 512, "state": "inactive"},
            {"address": base + mib + mib // 2, "size": mib // 2, "state": "active_pending_free"},
        ],
    }
    bar = segment_bar(seg, width=8)
    assert bar == "####:.~~"


def test_bare_segment_list_is_accepted(tmp_path, data_dir):
    # torch.cuda.memory_snapshot() returns only the segment list.
    snap = load_snapshot(data_dir / "small_snapshot.json")
    path = tmp_path / "segments.json"
    path.write_text(json.dumps(snap["segments"]))
    text = render_text(load_snapshot(path))
    assert "Segment map (3 segments)" in text


def test_json_output_round_trips(run_cli, data_dir):
    proc = run_cli("memory-summary", str(data_dir / "small_snapshot.json"), "--json", "--top", "2")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    snap = load_snapshot(data_dir / "small_snapshot.json")
    assert out == json.loads(json.dumps(snapshot_json(snap, top=2)))
    assert len(out["largest_allocations"]) == 2
    assert out["ooms"][0]["size"] == 64 << 20


def test_pickled_tuple_and_ordered_containers_load(tmp_path, data_dir):
    import collections

    snap = load_snapshot(data_dir / "small_snapshot.json")
    snap["segments"][0]["segment_pool_id"] = (0, 0)  # torch pickles the pool id as a tuple
    snap = collections.OrderedDict(snap)
    path = tmp_path / "snap.pickle"
    path.write_bytes(pickle.dumps(snap, protocol=2))
    assert "Segment map" in render_text(load_snapshot(path))


def test_device_selection_filters_segments_and_stats(data_dir):
    snap = load_snapshot(data_dir / "small_snapshot.json")
    other = json.loads(json.dumps(snap["segments"][1]))
    other["device"] = 1
    other["address"] += 1 << 36
    snap["segments"].append(other)
    snap["device_traces"].append([])
    on0 = snapshot_json(snap)  # default: the device our extension describes
    assert on0["device"] == 0 and on0["stats_exact"] and len(on0["segments"]) == 3
    on1 = snapshot_json(snap, device=1)
    # The extension's stats are device 0's: device 1 gets stats rebuilt from its segments.
    assert on1["stats_exact"] is False and len(on1["segments"]) == 1
    assert on1["stats"]["reserved_bytes.all.current"] == other["total_size"]
    assert on1["ooms"] == [] and len(on0["ooms"]) == 1


def test_state_name_from_torchs_docstring_is_accepted(tmp_path, data_dir):
    snap = json.loads((data_dir / "small_snapshot.json").read_text())
    snap["segments"][0]["blocks"][2]["state"] = "active_awaiting_free"
    path = tmp_path / "alias.json"
    path.write_text(json.dumps(snap))
    loaded = load_snapshot(path)
    assert loaded["segments"][0]["blocks"][2]["state"] == "active_pending_free"
